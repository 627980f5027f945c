#!/usr/bin/env bash
# Runs berth locally: a real etcd + kube-apiserver, simulated nodes in two fleets, the
# controller, a stand-in kubelet, and the example runs. Ctrl-C stops everything it started.
#   hack/local-up.sh            run until Ctrl-C
#   hack/local-up.sh --smoke    start, wait until the demo runs are handled, stop (used by tests)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${BERTH_BUILD_DIR:-$ROOT/build}"
DIR="${BERTH_CONTROL_PLANE_DIR:-$ROOT/.local/control-plane}"
SMOKE=0; [ "${1:-}" = "--smoke" ] && SMOKE=1

"$ROOT/hack/deps.sh"
"$ROOT/hack/build-kube.sh" kube-apiserver
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target berth-controller berth-kubelet-sim kubectl-berth

PIDS=()
cleanup() {
  trap "" INT TERM; trap - EXIT
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  "$ROOT/hack/control-plane.sh" stop "$DIR"
  echo "berth: stopped."
}
trap cleanup INT TERM EXIT

"$ROOT/hack/control-plane.sh" start "$DIR" >/dev/null
export KUBECONFIG="$DIR/kubeconfig"
kubectl apply -f "$ROOT/deploy/crds/" >/dev/null
kubectl wait --for condition=established --timeout=60s crd/runs.berth.dev crd/fleets.berth.dev >/dev/null

"$ROOT/hack/sim-nodes.sh" a100- 4 pool=a100,zone=z1 64 512Gi 8
"$ROOT/hack/sim-nodes.sh" cpu- 4 pool=cpu 16 64Gi
kubectl apply -f "$ROOT/examples/fleets.yaml" >/dev/null

"$BUILD/src/controller/berth-controller" --kubeconfig "$KUBECONFIG" \
  --metrics-bind-address 127.0.0.1:18080 --health-probe-bind-address 127.0.0.1:18081 \
  >"$DIR/controller.log" 2>&1 &
PIDS+=($!)
"$BUILD/tests/sim/berth-kubelet-sim" --kubeconfig "$KUBECONFIG" >"$DIR/kubelet-sim.log" 2>&1 &
PIDS+=($!)

kubectl apply -f "$ROOT/examples/runs.yaml" >/dev/null

if [ "$SMOKE" = 1 ]; then
  # Every example run is admitted and its pods run (the stand-in kubelet reports them Running).
  for _ in $(seq 1 300); do
    phases=$(kubectl get runs -o jsonpath='{range .items[*]}{.status.phase}{" "}{end}')
    running=$(echo "$phases" | tr ' ' '\n' | grep -cE '^(Running|Succeeded)$' || true)
    if [ "$running" -eq 4 ]; then
      kubectl get runs; kubectl get fleets
      PATH="$BUILD/src/cli:$PATH" kubectl berth fleets
      curl -sf 127.0.0.1:18080/queue >/dev/null
      echo "berth: smoke check passed"
      exit 0
    fi
    sleep 0.2
  done
  echo "berth: the example runs did not all start in time; runs and controller log:" >&2
  kubectl get runs -o wide >&2
  tail -30 "$DIR/controller.log" >&2
  exit 1
fi

cat <<TXT

berth is running locally (logs: $DIR/controller.log, $DIR/kubelet-sim.log).
Dashboard: http://127.0.0.1:18080/  (token for priority changes: the content of $DIR/admin.token)
In another shell:

  export KUBECONFIG=$KUBECONFIG PATH=$BUILD/src/cli:\$PATH
  kubectl get runs -w                                   # the queue: PRIORITY PHASE POSITION ...
  kubectl get fleets                                    # instances, blocks, busy
  kubectl berth fleets                                  # per-instance block usage, runs started, expiry
  kubectl berth priority dev-test 95                    # change a priority (or kubectl patch run ...)
  kubectl describe run train-llm                        # status, conditions, events
  kubectl berth apply -Q -f examples/runs.yaml          # (re)submit the examples with queueing
  curl -s 127.0.0.1:18080/queue                         # the controller's exact queue (JSON)

Press Ctrl-C to stop everything.
TXT
wait
