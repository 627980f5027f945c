#!/usr/bin/env bash
# Runs every test: unit tests and integration tests against a real etcd + kube-apiserver.
# Installs what it needs (Debian packages; kube-apiserver, kube-controller-manager and the kubelet
# built once into ~/.cache/berth, with the busybox and pause images real nodes run).
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
"$ROOT/hack/build-kube.sh" kube-apiserver
# Real nodes for realnodes_test and the demo: kubelet, kube-controller-manager, local images.
"$ROOT/hack/real-nodes.sh" prepare

# Compiler cache under ~/.cache/berth (paths relative to the tree, so clones share it).
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/berth/ccache}" CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=1
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBERTH_WERROR=ON \
  -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache >/dev/null
cmake --build "$BUILD" -j "$(nproc)"

export BERTH_TEST_TMP="${BERTH_TEST_TMP:-$(mktemp -d /tmp/berth-test.XXXXXX)}"
(cd "$BUILD" && ctest --output-on-failure -j "$(nproc)" --timeout 900 "$@")

if [ "${BERTH_SANITIZE_STAGE:-$([ "$#" -eq 0 ] && echo 1 || echo 0)}" = 1 ]; then
  echo "hack/test.sh: unit tests under ASan + UBSan and short fuzz runs (hack/sanitize-test.sh)" >&2
  BERTH_ASAN_BUILD_DIR="${BERTH_ASAN_BUILD_DIR:-${BUILD}-asan}" "$ROOT/hack/sanitize-test.sh"
fi
