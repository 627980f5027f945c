#!/usr/bin/env bash
# Shared by the end-to-end benchmark scripts: installs what is needed, builds, runs one scenario
# of berth-e2e-bench on a fresh local control plane and writes its table to bench/results/.
#   bench/run-e2e.sh SCENARIO RESULT_NAME [driver flags...]
# BERTH_BUILD_DIR (default build-bench) and BERTH_BUILD_TYPE (default Release): the tree it builds in.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${BERTH_BUILD_DIR:-$ROOT/build-bench}"
scenario="$1"; name="$2"; shift 2
case " $* " in *" --hollow 1 "*) name="$name-hollow" ;; esac  # hollow-node figures beside the others
case " $* " in *" --kwok 1 "*) name="$name-kwok" ;; esac      # kwok-node figures beside the others
case " $* " in *" --kueue 2 "*) name="$name-kueue-only" ;; esac  # Kueue alone (trying its set-up)

"$ROOT/hack/deps.sh"
"$ROOT/hack/build-kube.sh" kube-apiserver kube-scheduler kube-controller-manager helm  # helm: the chart's policies
case " $* " in *" --kwok 1 "*) "$ROOT/hack/build-kube.sh" kwok ;; esac
case " $scenario $* " in *" --kueue "[12]" "*|" behaviour "*) "$ROOT/hack/build-kube.sh" kueue ;; esac  # Kueue beside berth (issue 32)
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE="${BERTH_BUILD_TYPE:-Release}" >/dev/null  # BERTH_BUILD_TYPE: e.g. a RelWithDebInfo tree
cmake --build "$BUILD" -j "$(nproc)" --target berth-controller berth-e2e-bench berth-kubelet-sim

mkdir -p "$ROOT/bench/results"
out="$ROOT/bench/results/$name.md"
export BERTH_TEST_TMP="${BERTH_TEST_TMP:-$(mktemp -d /tmp/berth-bench.XXXXXX)}"
{
  echo "<!-- $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg): berth-e2e-bench $scenario $* (Kubernetes $(basename "$(dirname "$("$ROOT/hack/build-kube.sh" --bin)")" | sed s/^kubernetes-//), at $(git -C "$ROOT" rev-parse --short HEAD)) -->"
  "$BUILD/bench/e2e/berth-e2e-bench" "$scenario" "$@" 2>"$BERTH_TEST_TMP/$name.stderr"
  echo
  echo "<!-- ended $(date -u +%Y-%m-%dT%H:%M:%SZ), load $(cut -d' ' -f1-3 /proc/loadavg) -->"
} | tee "$out"
echo "(table written to bench/results/$name.md)"
