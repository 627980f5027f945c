#!/usr/bin/env bash
# Runs every test: unit tests and integration tests against a real etcd + kube-apiserver and real
# kubelets of Kubernetes 1.37, then the compatibility group on Kubernetes 1.35 (ctest label compat).
# Installs what it needs: Debian packages (hack/deps.sh); etcd, Kubernetes 1.37 and 1.35,
# containerd and Helm built once from the Go module proxy into ~/.cache/berth (hack/build-kube.sh),
# with the busybox and pause images real nodes run.
#   hack/test.sh                 everything
#   hack/test.sh -L unit         only unit tests (any ctest arguments are passed on)
# Then, when no ctest arguments were given (the CI run) or BERTH_SANITIZE_STAGE=1,
# hack/sanitize-test.sh: a second tree built with clang, ASan + UBSan and libFuzzer (${BUILD}-asan)
# runs the unit tests again and each fuzz target for a short time (ctest -L 'unit|fuzz').
# BERTH_SANITIZE_STAGE=0 skips it.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${BERTH_BUILD_DIR:-$ROOT/build}"

"$ROOT/hack/deps.sh"
# Kubernetes 1.37 (the default): control plane, kubectl, Helm; real nodes: kubelet,
# kube-controller-manager, containerd and the local images.
"$ROOT/hack/build-kube.sh" kube-apiserver etcd kubectl helm
"$ROOT/hack/real-nodes.sh" prepare
# berth in the cluster (incluster_test, local-up's smoke test): Service routing and scheduling of
# the chart's Pods.
"$ROOT/hack/build-kube.sh" kube-proxy kube-scheduler
# Workloads berth did not write (issue 45): the JobSet controller and Kubeflow Trainer, pinned
# (jobsets_test), built here rather than on a test's first use (its ctest timeout).
"$ROOT/hack/build-kube.sh" jobset trainer
# DRA fleets (issue 49): the DRA example driver's kubelet plugin on real nodes (dra_test), pinned,
# built here for the same reason.
"$ROOT/hack/build-kube.sh" dra-example-kubeletplugin
# The compatibility group runs on Kubernetes 1.35, the oldest supported (kube-scheduler: jobs_test).
BERTH_KUBE_VERSION=1.35 "$ROOT/hack/build-kube.sh" kube-apiserver kubectl kubelet kube-controller-manager kube-scheduler

# Compiler cache under ~/.cache/berth (paths relative to the tree, so clones share it).
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/berth/ccache}" CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=1
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBERTH_WERROR=ON \
  -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache >/dev/null
cmake --build "$BUILD" -j "$(nproc)"
# berth's image from the Dockerfile's content (its own Release tree, build-image/; cached).
export BERTH_IMAGE_BUILD_DIR="${BERTH_IMAGE_BUILD_DIR:-${BUILD}-image}"
"$ROOT/hack/build-image.sh" >/dev/null

export BERTH_TEST_TMP="${BERTH_TEST_TMP:-$(mktemp -d /tmp/berth-test.XXXXXX)}"
rc=0
(cd "$BUILD" && ctest --output-on-failure -j "$(nproc)" --timeout 900 "$@") || rc=$?
if [ "$rc" != 0 ]; then
  # The end of the output is what a CI summary shows: repeat each failed assertion there.
  log="$BUILD/Testing/Temporary/LastTest.log"
  echo "hack/test.sh: ctest failed (exit $rc); the failed assertions, from $log:"
  if [ -f "$log" ]; then
    grep -E '^\[  FAILED  \] .*\([0-9]+ ms\)$' "$log" | sort -u | head -40 || true
    grep -E -A10 ': Failure$' "$log" | cut -c1-300 | head -150 || true
  fi
  exit "$rc"
fi

if [ "${BERTH_SANITIZE_STAGE:-$([ "$#" -eq 0 ] && echo 1 || echo 0)}" = 1 ]; then
  echo "hack/test.sh: unit tests under ASan + UBSan and short fuzz runs (hack/sanitize-test.sh)" >&2
  BERTH_ASAN_BUILD_DIR="${BERTH_ASAN_BUILD_DIR:-${BUILD}-asan}" "$ROOT/hack/sanitize-test.sh"
fi
