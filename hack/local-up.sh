#!/usr/bin/env bash
# Runs berth locally: a real etcd + kube-apiserver (Kubernetes 1.37; BERTH_KUBE_VERSION=1.35 for the
# oldest supported), kube-controller-manager, four real nodes
# (real kubelets with containerd 2 + runc: two with 8 advertised GPUs, two CPU machines) in two
# fleets, the controller, and the example runs as real containers. Ctrl-C stops everything.
#   hack/local-up.sh            run until Ctrl-C
#   hack/local-up.sh --smoke    start, wait until the demo runs are handled, stop (used by tests)
#   hack/local-up.sh --sim      simulated nodes and a stand-in kubelet instead (for machines that
#                               cannot run containers; Pods finish after berth.dev/sim-seconds)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${BERTH_BUILD_DIR:-$ROOT/build}"
DIR="${BERTH_CONTROL_PLANE_DIR:-$ROOT/.local/control-plane}"
SMOKE=0; SIM=0
for a in "$@"; do
  case "$a" in
    --smoke) SMOKE=1 ;;
    --sim) SIM=1 ;;
    *) echo "usage: hack/local-up.sh [--smoke] [--sim]" >&2; exit 2 ;;
  esac
done

"$ROOT/hack/deps.sh"
"$ROOT/hack/build-kube.sh" kube-apiserver etcd kubectl
# The pinned kubectl (hack/build-kube.sh) first on PATH, whatever else the machine has.
export PATH="$("$ROOT/hack/build-kube.sh" --bin):$PATH"
[ "$SIM" = 1 ] || "$ROOT/hack/real-nodes.sh" prepare
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target berth-controller berth-kubelet-sim kubectl-berth

PIDS=()
cleanup() {
  trap "" INT TERM; trap - EXIT
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  "$ROOT/hack/real-nodes.sh" stop-all "$DIR" 2>/dev/null || true
  "$ROOT/hack/control-plane.sh" stop "$DIR"
  echo "berth: stopped."
}
trap cleanup INT TERM EXIT

"$ROOT/hack/control-plane.sh" start "$DIR" >/dev/null
export KUBECONFIG="$DIR/kubeconfig"
kubectl apply -f "$ROOT/deploy/crds/" >/dev/null
kubectl wait --for condition=established --timeout=60s crd/runs.berth.dev crd/fleets.berth.dev >/dev/null

if [ "$SIM" = 1 ]; then
  "$ROOT/hack/sim-nodes.sh" a100- 2 pool=a100,zone=z1 64 512Gi 8
  "$ROOT/hack/sim-nodes.sh" cpu- 2 pool=cpu 16 64Gi
else
  echo "berth: starting kube-controller-manager and 4 real nodes (kubelet + containerd each)..."
  "$ROOT/hack/real-nodes.sh" controller-manager "$DIR"
  NODE_PIDS=()
  for n in a100-0 a100-1; do
    "$ROOT/hack/real-nodes.sh" start "$DIR" "$n" --gpus 8 --memory 8Gi --labels pool=a100,zone=z1 &
    NODE_PIDS+=($!)
  done
  for n in cpu-0 cpu-1; do
    "$ROOT/hack/real-nodes.sh" start "$DIR" "$n" --memory 8Gi --labels pool=cpu &
    NODE_PIDS+=($!)
  done
  for p in "${NODE_PIDS[@]}"; do wait "$p"; done
fi
kubectl apply -f "$ROOT/examples/fleets.yaml" >/dev/null

"$BUILD/src/controller/berth-controller" --kubeconfig "$KUBECONFIG" \
  --metrics-bind-address 127.0.0.1:18080 --health-probe-bind-address 127.0.0.1:18081 \
  >"$DIR/controller.log" 2>&1 &
PIDS+=($!)
if [ "$SIM" = 1 ]; then
  "$BUILD/tests/sim/berth-kubelet-sim" --kubeconfig "$KUBECONFIG" >"$DIR/kubelet-sim.log" 2>&1 &
  PIDS+=($!)
fi

kubectl apply -f "$ROOT/examples/runs.yaml" >/dev/null

# The tour printed once everything is up: each command exactly as the user types it. The smoke
# test runs the same commands (logs without -f) and fails if any of them fails.
TOUR_ENV="export KUBECONFIG=$KUBECONFIG PATH=$BUILD/src/cli:$("$ROOT/hack/build-kube.sh" --bin):\$PATH"
TOUR=(
  "kubectl berth queue|the queue: position, priority, why each run waits"
  "kubectl berth logs hotfix|every rank's output, prefixed [rank N] (add -f to follow)"
  "kubectl berth stop ab-test|end a run: Failed (Stopped), its Pods stopped, blocks freed"
  "kubectl berth describe ab-test|phase, reason, message, placement, attempts, events"
)
print_tour() {
  local entry
  for entry in "${TOUR[@]}"; do printf '  %-52s  # %s\n' "${entry%%|*}" "${entry#*|}"; done
}
run_tour() {
  local entry cmd
  for entry in "${TOUR[@]}"; do
    cmd="${entry%%|*}"
    echo "\$ $cmd"
    if ! (export PATH="$BUILD/src/cli:$PATH"; eval "$cmd"); then
      echo "berth: the tour command \"$cmd\" failed" >&2
      return 1
    fi
  done
}

if [ "$SMOKE" = 1 ]; then
  # hotfix (priority 90), ab-test and dev-test start; train-llm (two whole 8-GPU machines) waits
  # for hotfix's GPUs. On real nodes the containers print their BERTH_* environment.
  for _ in $(seq 1 600); do
    phases=$(kubectl get runs -o jsonpath='{range .items[*]}{.metadata.name}={.status.phase}{" "}{end}')
    started=$(echo "$phases" | tr ' ' '\n' | grep -cE '^(hotfix|ab-test|dev-test)=(Running|Succeeded)$' || true)
    if [ "$started" -eq 3 ] && grep -q 'train-llm=Pending' <<<"$phases"; then
      kubectl get runs; kubectl get fleets
      # The Kubernetes it runs on: the API server's and every node's version.
      want=$(basename "$(dirname "$("$ROOT/hack/build-kube.sh" --bin)")"); want=v${want#kubernetes-}
      echo "$ kubectl version"; kubectl version
      server=$(kubectl version -o json | jq -r .serverVersion.gitVersion)
      nodes=$(kubectl get nodes -o jsonpath='{range .items[*]}{.status.nodeInfo.kubeletVersion}{"\n"}{end}' | sort -u)
      echo "nodes' kubelets: $(echo $nodes)"
      [ "$server" = "$want" ] || { echo "berth: the API server is $server, not $want" >&2; exit 1; }
      [ "$SIM" = 1 ] || [ "$nodes" = "$want" ] || { echo "berth: the nodes run $(echo $nodes), not $want" >&2; exit 1; }
      PATH="$BUILD/src/cli:$PATH" kubectl berth fleets
      curl -sf 127.0.0.1:18080/queue >/dev/null
      if [ "$SIM" = 0 ]; then
        logs=""
        for _ in $(seq 1 100); do
          logs=$(kubectl logs hotfix-0 2>/dev/null || true)
          grep -q '^BERTH_RUN_NAME=hotfix$' <<<"$logs" && break
          sleep 0.2
        done
        echo "$ kubectl logs hotfix-0"; echo "$logs"
        grep -q '^BERTH_NODE_RANK=0$' <<<"$logs" || { echo "berth: hotfix-0's log lacks its rank" >&2; exit 1; }
        # The tour, as printed below for the user (logs need real nodes).
        echo "  $TOUR_ENV"; print_tour
        tour_out=$(run_tour) || { echo "$tour_out"; exit 1; }
        echo "$tour_out"
        grep -q '^\[rank 0\] BERTH_RUN_NAME=hotfix$' <<<"$tour_out" || { echo "berth: kubectl berth logs hotfix lacks rank 0's output" >&2; exit 1; }
        [ "$(kubectl get run ab-test -o jsonpath='{.status.phase}/{.status.reason}')" = "Failed/Stopped" ] ||
          { echo "berth: ab-test is not Failed/Stopped after kubectl berth stop" >&2; exit 1; }
      fi
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

berth is running locally (controller log: $DIR/controller.log; nodes: $(if [ "$SIM" = 1 ]; then
  echo "simulated, $DIR/kubelet-sim.log"; else echo "real kubelets, logs in $DIR/nodes/NODE/"; fi)).
Dashboard: http://127.0.0.1:18080/  (token for priority changes, stop, suspend, resume and logs:
the content of $DIR/admin.token)

A short tour, in another shell:

  $TOUR_ENV
$(print_tour)$(if [ "$SIM" = 1 ]; then echo; echo "  (with --sim the nodes run no containers, so kubectl berth logs has nothing to show)"; fi)

More:

  kubectl get runs -w                                   # the queue: PRIORITY PHASE POSITION ...
  kubectl berth fleets                                  # per-instance block usage, runs started, expiry
  kubectl berth priority dev-test 95                    # change a priority (or kubectl patch run ...)
  kubectl berth suspend train-llm                       # out of the queue until kubectl berth resume train-llm
  kubectl logs train-llm-1                              # rank 1 of the 2-node run, once it runs
  kubectl berth apply -Q -f examples/runs.yaml          # run the examples again (ended runs are resubmitted)
  curl -s 127.0.0.1:18080/queue                         # the controller's exact queue (JSON)

Press Ctrl-C to stop everything.
TXT
wait
