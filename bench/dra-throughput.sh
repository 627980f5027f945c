#!/usr/bin/env bash
# Issue 49: the throughput of a DRA fleet beside an extended-resource fleet, on the same real nodes,
# in one command (docs/performance.md, "DRA fleets: the extra scheduler hop"):
#   a local control plane (hack/control-plane.sh), kube-controller-manager with the ResourceClaim
#   controller and kube-scheduler (hack/real-nodes.sh controller-manager --workloads), 2 real nodes
#   (real kubelets with containerd, hack/real-nodes.sh) that each publish G example GPUs through the
#   DRA example driver's kubelet plugin (--dra-devices G) and advertise G nvidia.com/gpu (--gpus G),
#   and berth-controller as a process on this machine; then
#   1. a DRA fleet (spec.devices: gpu.example.com, blocks: G) takes N single-node 1-GPU runs
#      (busybox sleeping): berth books a block and makes the Pod unbound with a ResourceClaim,
#      kube-scheduler binds it and its DRA plugin allocates the claim, the kubelet's DRA plugin
#      prepares it (CDI), containerd starts it;
#   2. the runs and the fleet gone, an extended-resource fleet (gpuResource nvidia.com/gpu, blocks: G)
#      over the same nodes takes the same N runs: berth books and binds the Pod itself;
#   and again, ROUNDS times in all (DRA, extended, DRA, extended, ...: what the order does shows).
# For each it times, from a watch of the runs and of their Pods stamped on arrival here: the first
# run created -> every Pod Running, the first admission (phase Scheduled) -> every Pod Running
# (runs/s), and per run admission -> Pod bound and admission -> Pod Running (median, p90). The
# table goes to bench/results/dra-throughput.md (with another --runs: dra-throughput-N-runs.md).
#   bench/dra-throughput.sh [--runs N] [--rounds R]
#     N single-node runs, even (default 100; G = N/2: all fit at once), R rounds (default 2)
# BERTH_BUILD_DIR: a build tree with berth-controller (default build-bench, built Release here).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${BERTH_BUILD_DIR:-$ROOT/build-bench}"
RUNS=100 ROUNDS=2
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) RUNS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    *) echo "usage: bench/dra-throughput.sh [--runs N] [--rounds R]" >&2; exit 2 ;;
  esac
done
[[ "$RUNS" =~ ^[0-9]+$ ]] && [ "$RUNS" -ge 2 ] && [ $((RUNS % 2)) = 0 ] && [ "$RUNS" -le 200 ] ||
  { echo "bench/dra-throughput.sh: --runs must be an even number from 2 to 200" >&2; exit 2; }
[[ "$ROUNDS" =~ ^[0-9]+$ ]] && [ "$ROUNDS" -ge 1 ] && [ "$ROUNDS" -le 10 ] ||
  { echo "bench/dra-throughput.sh: --rounds must be a number from 1 to 10" >&2; exit 2; }
GPUS=$((RUNS / 2))   # per node: every run has its block at once
log() { echo "dra-throughput: $*" >&2; }
# shellcheck source=hack/lib.sh
source "$ROOT/hack/lib.sh"   # free_port

"$ROOT/hack/deps.sh"
"$ROOT/hack/build-kube.sh" kube-apiserver etcd kubectl kube-scheduler kube-controller-manager dra-example-kubeletplugin
"$ROOT/hack/real-nodes.sh" prepare
if [ -z "${BERTH_BUILD_DIR:-}" ]; then cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null; fi
cmake --build "$BUILD" -j "$(nproc)" --target berth-controller
PATH="$("$ROOT/hack/build-kube.sh" --bin):$PATH"

TMP="$(mktemp -d "${BERTH_TEST_TMP:-/tmp}/berth-dra-bench.XXXXXX")"
DIR="$TMP/control-plane"
PIDS=() WATCHES=()
cleanup() {
  trap "" INT TERM; trap - EXIT
  for p in "${WATCHES[@]}" "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  "$ROOT/hack/real-nodes.sh" stop-all "$DIR" >/dev/null 2>&1 || true
  "$ROOT/hack/control-plane.sh" stop "$DIR" || true
  log "stopped; logs in $TMP"
}
trap cleanup INT TERM EXIT

"$ROOT/hack/control-plane.sh" start "$DIR" >/dev/null
export KUBECONFIG="$DIR/kubeconfig"
kubectl apply -f "$ROOT/deploy/crds/" >/dev/null
kubectl wait --for condition=established --timeout=60s crd/runs.berth.dev crd/fleets.berth.dev >/dev/null
"$ROOT/hack/real-nodes.sh" controller-manager "$DIR" --workloads   # with kube-scheduler
NODE_PIDS=()
for n in dra-bench-0 dra-bench-1; do
  "$ROOT/hack/real-nodes.sh" start "$DIR" "$n" --gpus "$GPUS" --dra-devices "$GPUS" --labels pool=dra-bench &
  NODE_PIDS+=($!)
done
for p in "${NODE_PIDS[@]}"; do wait "$p"; done
"$BUILD/src/controller/berth-controller" --kubeconfig "$KUBECONFIG" --metrics-bind-address "127.0.0.1:$(free_port)" \
  --health-probe-bind-address "127.0.0.1:$(free_port)" >"$TMP/controller.log" 2>&1 &
PIDS+=($!)

# until WHAT SECONDS COMMAND...: polls COMMAND every 0.5 s until it succeeds; fails after SECONDS.
until_ok() {
  local what=$1 secs=$2 i; shift 2
  for i in $(seq 1 $((secs * 2))); do "$@" && return 0; sleep 0.5; done
  log "timed out after ${secs} s waiting for $what"; return 1
}
fleet_blocks_are() { [ "$(kubectl get fleet "$1" -o jsonpath='{.status.totalBlocks}' 2>/dev/null)" = "$2" ]; }
running_pods_are() { [ "$(awk -F'|' '$4 == "Running" {print $2}' "$1" | sort -u | grep -c .)" = "$2" ]; }
no_pods_in() { [ -z "$(kubectl get pods -n "$1" -o name 2>/dev/null)" ]; }

# watch KIND NS JSONPATH OUT: each object of KIND in NS as it changes, "seconds|fields" per line in
# OUT (stamped here on arrival); returns once the watch is established (kubectl -v=6 logs its GET).
watch() {
  local kind=$1 ns=$2 path=$3 out=$4
  kubectl get "$kind" -n "$ns" --watch -v=6 -o "jsonpath=$path{\"\\n\"}" 2>"$out.log" \
    > >(while IFS= read -r line; do printf '%s|%s\n' "$EPOCHREALTIME" "$line"; done >"$out") &
  WATCHES+=($!)   # kubectl's own pid: the stamping loop ends with its output
  until_ok "the watch of $kind" 30 grep -q 'watch=true.*200 OK' "$out.log"
}

# One fleet's measurement: MODE (dra | ext), ROUND and the fleet's spec line for it; its files are
# $TMP/MODE-ROUND-*.
measure() {
  local mode="$1-$2" spec=$3 ns="bench-$1-$2" fleet="bench-$1-$2" i
  kubectl apply -f - >/dev/null <<YAML
apiVersion: berth.dev/v1alpha1
kind: Fleet
metadata: {name: $fleet}
spec:
  nodeSelector: {pool: dra-bench}
  blocks: $GPUS
  $spec
---
apiVersion: v1
kind: Namespace
metadata: {name: $ns}
YAML
  until_ok "fleet $fleet's $RUNS blocks" 120 fleet_blocks_are "$fleet" "$RUNS"
  watch runs "$ns" '{.metadata.name}|{.status.phase}' "$TMP/$mode-runs"
  watch pods "$ns" '{.metadata.labels.berth\.dev/run}|{.spec.nodeName}|{.status.phase}' "$TMP/$mode-pods"
  local yaml=""
  for i in $(seq 1 "$RUNS"); do
    yaml+="apiVersion: berth.dev/v1alpha1
kind: Run
metadata: {name: r$i, namespace: $ns}
spec:
  fleets: [$fleet]
  resources: {gpu: 1}
  template:
    spec:
      terminationGracePeriodSeconds: 1
      containers: [{name: main, image: docker.io/library/busybox:1.35, command: [sleep, '3600']}]
---
"
  done
  echo "$EPOCHREALTIME" >"$TMP/$mode-created"
  kubectl create -f - >/dev/null <<<"$yaml"
  echo "$EPOCHREALTIME" >>"$TMP/$mode-created"
  log "$mode: $RUNS runs created; waiting until every Pod is Running"
  if ! until_ok "$RUNS Running Pods on fleet $fleet" 300 running_pods_are "$TMP/$mode-pods" "$RUNS"; then
    kubectl get runs,pods -n "$ns" -o wide >&2 || true; return 1
  fi
  kill "${WATCHES[@]}" 2>/dev/null || true; WATCHES=()
  kubectl delete runs --all -n "$ns" --wait=false >/dev/null
  until_ok "the Pods of $ns gone" 300 no_pods_in "$ns"
  kubectl delete fleet "$fleet" >/dev/null
}

for round in $(seq 1 "$ROUNDS"); do
  measure dra "$round" "devices: {deviceClassName: gpu.example.com}"
  # The claims of the DRA runs go with their runs (the garbage collector): the devices are free.
  until_ok "the DRA runs' ResourceClaims gone" 120 bash -c "[ -z \"\$(kubectl get resourceclaims -n bench-dra-$round -o name)\" ]"
  measure ext "$round" "gpuResource: nvidia.com/gpu"
done

mkdir -p "$ROOT/bench/results"
name=dra-throughput; [ "$RUNS" = 100 ] || name="dra-throughput-$RUNS-runs"
out="$ROOT/bench/results/$name.md"
kube="$(basename "$(dirname "$("$ROOT/hack/build-kube.sh" --bin)")" | sed s/^kubernetes-//)"
driver="$("$ROOT/hack/build-kube.sh" --dra-driver-dir | sed 's/.*@//')"
build_type="$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$BUILD/CMakeCache.txt")"
{
  echo "<!-- $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg): bench/dra-throughput.sh --runs $RUNS --rounds $ROUNDS (Kubernetes $kube, dra-example-driver $driver, berth at $(git -C "$ROOT" rev-parse --short HEAD), $build_type) -->"
  python3 - "$TMP" "$RUNS" "$GPUS" "$kube" "$driver" "$ROUNDS" <<'PY'
import statistics, sys
tmp, runs, gpus, kube, driver, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], int(sys.argv[6])

def lines(path):
    with open(path) as f:
        return [l.rstrip('\n').split('|') for l in f if l.strip()]

def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(p / 100 * len(xs) + 0.5) - 1))]  # nearest rank

def measure(mode):
    created = [float(x) for x in open(f'{tmp}/{mode}-created').read().split()]
    admitted, bound, running = {}, {}, {}
    for t, name, phase in lines(f'{tmp}/{mode}-runs'):
        if phase in ('Scheduled', 'Running'):
            admitted.setdefault(name, float(t))
    for t, run, node, phase in lines(f'{tmp}/{mode}-pods'):
        if node:
            bound.setdefault(run, float(t))
        if phase == 'Running':
            running.setdefault(run, float(t))
    assert len(running) == runs and set(running) <= set(admitted), (mode, len(running), len(admitted))
    last = max(running.values())
    first_admitted = min(admitted.values())
    to_bound = [bound[r] - admitted[r] for r in running]
    to_running = [running[r] - admitted[r] for r in running]
    return {
        'created': last - created[0], 'creating': created[1] - created[0], 'admitted': last - first_admitted,
        'rate': runs / (last - first_admitted),
        'bound': (statistics.median(to_bound), pct(to_bound, 90)),
        'running': (statistics.median(to_running), pct(to_running, 90)),
    }

kinds = {'dra': ('DRA fleet (`devices: {deviceClassName: gpu.example.com}`)',
                 'berth books a block, makes the Pod unbound with a ResourceClaim; kube-scheduler binds it and allocates the claim; the kubelet\'s DRA plugin prepares it'),
         'ext': ('extended-resource fleet (`gpuResource: nvidia.com/gpu`)', 'berth books a block and binds the Pod itself')}
order = [(r, k) for r in range(1, rounds + 1) for k in kinds]
got = {(r, k): measure(f'{k}-{r}') for r, k in order}
print(f'\n## DRA fleet beside extended-resource fleet: {runs} single-node 1-GPU runs on 2 real nodes (Kubernetes v{kube})\n')
print(f'2 real kubelets (containerd 2, runc) on this machine, each with {gpus} example GPUs of the DRA example '
      f'driver {driver} and {gpus} `nvidia.com/gpu` advertised; `blocks: {gpus}` (every run has its block at once); '
      'kube-scheduler and kube-controller-manager (ResourceClaim controller, garbage collector) with their defaults; '
      'one berth-controller with its defaults. Runs: busybox `sleep 3600`, `resources: {gpu: 1}`. '
      f'{rounds} rounds, in the order of the rows, each fleet made anew after the previous one\'s runs and Pods were gone. '
      'Times from a watch of the runs and of their Pods, stamped as each change arrives here; '
      'admission: the run\'s phase `Scheduled`; bound: the Pod has `spec.nodeName`; Running: its phase.\n')
print('| round | fleet | who places the Pod | first run created -> every Pod Running, s (of which creating) | first admission -> every Pod Running, s | runs/s | admission -> Pod bound, s: median / p90 | admission -> Pod Running, s: median / p90 |')
print('|---|---|---|---|---|---|---|---|')
for r, k in order:
    g, (what, who) = got[(r, k)], kinds[k]
    print(f"| {r} | {what} | {who} | {g['created']:.2f} ({g['creating']:.2f}) | {g['admitted']:.2f} | {g['rate']:.2f} | "
          f"{g['bound'][0]:.2f} / {g['bound'][1]:.2f} | {g['running'][0]:.2f} / {g['running'][1]:.2f} |")
for r in range(1, rounds + 1):
    d, e = got[(r, 'dra')], got[(r, 'ext')]
    print(f"\nRound {r}, DRA / extended resource: runs/s **{d['rate'] / e['rate']:.2f}**; median admission -> Pod Running "
          f"**{d['running'][0] / e['running'][0]:.2f}x** ({d['running'][0] - e['running'][0]:+.2f} s).")
PY
  echo
  echo "<!-- ended $(date -u +%Y-%m-%dT%H:%M:%SZ), load $(cut -d' ' -f1-3 /proc/loadavg) -->"
} | tee "$out"
echo "(table written to bench/results/$name.md)"
