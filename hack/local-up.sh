#!/usr/bin/env bash
# Runs berth locally: a real etcd + kube-apiserver (Kubernetes 1.37; BERTH_KUBE_VERSION=1.35 for the
# oldest supported) with a pod network (kube-proxy, kube-scheduler, kube-controller-manager), four
# real nodes (real kubelets with containerd 2 + runc: two with 8 advertised GPUs, two CPU machines)
# in two fleets, two system nodes, berth installed by Helm from deploy/helm/berth with its image
# built here (hack/build-image.sh; two replicas on the system nodes), and the example runs and a
# queued Job (examples/jobs.yaml; the Job controller runs too) and a queued JobSet
# (examples/jobsets.yaml; the JobSet controller runs too) as real containers. Ctrl-C stops
# everything.
#   hack/local-up.sh                   run until Ctrl-C
#   hack/local-up.sh --smoke           start, wait until the demo runs are handled, stop (tests)
#   hack/local-up.sh --host-controller the controller as a process on this machine instead of
#                                      Helm (for debugging it: its log is DIR/controller.log)
#   hack/local-up.sh --sim             simulated nodes and a stand-in kubelet (for machines that
#                                      cannot run containers; Pods finish after berth.dev/sim-seconds;
#                                      implies --host-controller)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${BERTH_BUILD_DIR:-$ROOT/build}"
DIR="${BERTH_CONTROL_PLANE_DIR:-$ROOT/.local/control-plane}"
SMOKE=0; SIM=0; HOST=0
for a in "$@"; do
  case "$a" in
    --smoke) SMOKE=1 ;;
    --sim) SIM=1; HOST=1 ;;
    --host-controller) HOST=1 ;;
    *) echo "usage: hack/local-up.sh [--smoke] [--host-controller] [--sim]" >&2; exit 2 ;;
  esac
done

"$ROOT/hack/deps.sh"
"$ROOT/hack/build-kube.sh" kube-apiserver etcd kubectl
[ "$HOST" = 1 ] || "$ROOT/hack/build-kube.sh" helm kube-proxy kube-scheduler
# The pinned kubectl (hack/build-kube.sh) first on PATH, whatever else the machine has.
export PATH="$("$ROOT/hack/build-kube.sh" --bin):$HOME/.cache/berth/tools/bin:$PATH"
[ "$SIM" = 1 ] || "$ROOT/hack/real-nodes.sh" prepare
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target berth-controller berth-kubelet-sim kubectl-berth

PIDS=()
cleanup() {
  trap "" INT TERM; trap - EXIT
  [ "$HOST" = 1 ] || helm uninstall berth -n berth-system --wait --timeout 60s >/dev/null 2>&1 || true
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  "$ROOT/hack/real-nodes.sh" stop-all "$DIR" 2>/dev/null || true
  "$ROOT/hack/control-plane.sh" stop "$DIR"
  echo "berth: stopped."
}
trap cleanup INT TERM EXIT

# In the cluster, Pods reach the API server and it reaches them (hack/control-plane.sh).
BERTH_POD_NETWORK=$((1 - HOST)) "$ROOT/hack/control-plane.sh" start "$DIR" >/dev/null
export KUBECONFIG="$DIR/kubeconfig"
kubectl apply -f "$ROOT/deploy/crds/" >/dev/null
kubectl wait --for condition=established --timeout=60s crd/runs.berth.dev crd/fleets.berth.dev crd/teams.berth.dev >/dev/null

if [ "$SIM" = 1 ]; then
  "$ROOT/hack/sim-nodes.sh" a100- 2 pool=a100,zone=z1 64 512Gi 8
  "$ROOT/hack/sim-nodes.sh" cpu- 2 pool=cpu 16 64Gi
else
  echo "berth: starting the JobSet controller, kube-controller-manager and 4 real nodes (kubelet + containerd each)..."
  # The demo JobSet (issue 45): the JobSet controller (its CRD first, so the garbage collector
  # started next knows the kind).
  "$ROOT/hack/real-nodes.sh" jobset "$DIR"
  # --workloads: the Job controller and garbage collector too (the demo Job and JobSet, issue 45).
  "$ROOT/hack/real-nodes.sh" controller-manager "$DIR" --workloads
  NODE_PIDS=()
  for n in a100-0 a100-1; do
    "$ROOT/hack/real-nodes.sh" start "$DIR" "$n" --gpus 8 --memory 8Gi --labels pool=a100,zone=z1 &
    NODE_PIDS+=($!)
  done
  for n in cpu-0 cpu-1; do
    "$ROOT/hack/real-nodes.sh" start "$DIR" "$n" --memory 8Gi --labels pool=cpu &
    NODE_PIDS+=($!)
  done
  if [ "$HOST" = 0 ]; then
    # berth's own Pods go to system nodes (no fleet selects them), as on a cluster's system pool.
    for n in system-0 system-1; do
      "$ROOT/hack/real-nodes.sh" start "$DIR" "$n" --memory 2Gi --labels pool=system &
      NODE_PIDS+=($!)
    done
  fi
  for p in "${NODE_PIDS[@]}"; do wait "$p"; done
fi
kubectl apply -f "$ROOT/examples/fleets.yaml" >/dev/null
# Fleet machines carry the taint berth.dev/fleet=<fleet>:NoExecute (docs/install.md#fleet-nodes):
# only berth's Pods, which tolerate it, run there; a Pod made with spec.nodeName is refused by the kubelet.
kubectl taint node a100-0 a100-1 berth.dev/fleet=a100:NoExecute --overwrite >/dev/null
kubectl taint node cpu-0 cpu-1 berth.dev/fleet=cpu:NoExecute --overwrite >/dev/null

if [ "$HOST" = 1 ]; then
  "$BUILD/src/controller/berth-controller" --kubeconfig "$KUBECONFIG" \
    --metrics-bind-address 127.0.0.1:18080 --health-probe-bind-address 127.0.0.1:18081 --queue-auth=false \
    >"$DIR/controller.log" 2>&1 &
  PIDS+=($!)
else
  echo "berth: building berth's image (hack/build-image.sh) and installing it with Helm..."
  image=$("$ROOT/hack/build-image.sh")
  "$ROOT/hack/real-nodes.sh" import "$DIR" "$image"
  # The image is in every node's containerd under the chart's default name: never pulled.
  helm upgrade --install berth "$ROOT/deploy/helm/berth" -n berth-system --create-namespace \
    --set image.pullPolicy=Never --set nodeSelector.pool=system --wait --timeout 5m >"$DIR/helm.log" 2>&1 ||
    { echo "berth: helm install failed:" >&2; cat "$DIR/helm.log" >&2; kubectl -n berth-system get pods -o wide >&2; exit 1; }
  # On Kubernetes 1.36+ the chart admits Runs with admission policies: until the API server has
  # loaded the Run schema for them, creates are refused with 503 "Resource kind ... not found"
  # (docs/install.md#admission). Wait until a Run is admitted (a server-side dry run).
  for _ in $(seq 1 300); do
    printf 'apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata: {name: admission-check}\nspec:\n  template:\n    spec:\n      containers: [{name: main, image: busybox}]\n' |
      kubectl apply --dry-run=server -f - >/dev/null 2>&1 && break
    sleep 0.3
  done
  # /metrics through the Service, as a user reaches it.
  kubectl -n berth-system port-forward svc/berth-controller 18080:8080 >"$DIR/port-forward.log" 2>&1 &
  PIDS+=($!)
fi
if [ "$SIM" = 1 ]; then
  "$BUILD/tests/sim/berth-kubelet-sim" --kubeconfig "$KUBECONFIG" >"$DIR/kubelet-sim.log" 2>&1 &
  PIDS+=($!)
fi

kubectl apply -f "$ROOT/examples/runs.yaml" >/dev/null
# A queued Job and a queued JobSet (issue 45): their controllers make the Pods, so only where real
# nodes run them.
if [ "$SIM" = 0 ]; then
  kubectl apply -f "$ROOT/examples/jobs.yaml" >/dev/null
  kubectl apply -f "$ROOT/examples/jobsets.yaml" >/dev/null
fi

# The tour printed once everything is up: each command exactly as the user types it. The smoke
# test runs the same commands (logs without -f) and fails if any of them fails.
TOUR_ENV="export KUBECONFIG=$KUBECONFIG PATH=$BUILD/src/cli:$("$ROOT/hack/build-kube.sh" --bin):\$PATH"
TOUR=(
  "kubectl berth queue|the queue: position, priority, why each run waits"
  "kubectl berth logs hotfix|every rank's output, prefixed [rank N] (add -f to follow)"
  "kubectl berth stop ab-test|end a run: Failed (Stopped), its Pods stopped, blocks freed"
  "kubectl berth describe ab-test|phase, reason, message, placement, attempts, events"
)
if [ "$HOST" = 0 ]; then
  TOUR=("kubectl -n berth-system get pods|berth itself: two replicas installed by Helm, one leads" "${TOUR[@]}")
fi
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
      if [ "$HOST" = 0 ]; then
        # berth runs as the chart's two Pods; the leader (the Lease's holder) is one of them.
        echo "$ kubectl -n berth-system get pods -o wide"; kubectl -n berth-system get pods -o wide
        ready=$(kubectl -n berth-system get deploy berth-controller -o jsonpath='{.status.readyReplicas}')
        [ "$ready" = 2 ] || { echo "berth: $ready of berth's 2 Pods are Ready" >&2; exit 1; }
        leader=$(kubectl -n berth-system get lease berth-controller -o jsonpath='{.spec.holderIdentity}' | cut -d_ -f1)
        pods=$(kubectl -n berth-system get pods -o jsonpath='{.items[*].metadata.name}')
        grep -qw -- "$leader" <<<"$pods" || { echo "berth: the Lease is held by \"$leader\", not one of berth's Pods ($pods)" >&2; exit 1; }
        echo "the leader: $leader"
      fi
      # The controller answers on its metrics port; with the chart, the queue through the API server
      # (the aggregated queue API, issue 44); the host controller (loopback only) serves it open.
      for _ in $(seq 1 50); do curl -sf 127.0.0.1:18080/metrics >/dev/null && break; sleep 0.2; done
      curl -sf 127.0.0.1:18080/metrics >/dev/null || { echo "berth: the controller does not answer on 127.0.0.1:18080" >&2; exit 1; }
      if [ "$HOST" = 0 ]; then
        for _ in $(seq 1 150); do kubectl get --raw /apis/queue.berth.dev/v1alpha1/queue >/dev/null 2>&1 && break; sleep 0.2; done
        kubectl get --raw /apis/queue.berth.dev/v1alpha1/queue >/dev/null || { echo "berth: the queue API is not served through the API server" >&2; exit 1; }
      fi
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
        # The queued Job (examples/jobs.yaml): its ticket job-report Succeeded, the Job Complete.
        for _ in $(seq 1 600); do
          [ "$(kubectl get run job-report -o jsonpath='{.status.phase}' 2>/dev/null)" = Succeeded ] && break
          sleep 0.2
        done
        echo "$ kubectl get job report; kubectl get run job-report"; kubectl get job report; kubectl get run job-report
        [ "$(kubectl get run job-report -o jsonpath='{.status.phase}' 2>/dev/null)" = Succeeded ] ||
          { echo "berth: the ticket job-report of examples/jobs.yaml did not succeed" >&2; kubectl get job report -o yaml >&2; kubectl get pods -l batch.kubernetes.io/job-name=report -o wide >&2; exit 1; }
        # berth frees the ticket when the Job's Pods show it done; the Job controller counts them a
        # moment later (its 1 s sync batch).
        for _ in $(seq 1 300); do
          [ "$(kubectl get job report -o jsonpath='{.status.succeeded}')" = 2 ] && break
          sleep 0.2
        done
        [ "$(kubectl get job report -o jsonpath='{.status.succeeded}')" = 2 ] ||
          { echo "berth: the Job report did not complete its 2 Pods" >&2; kubectl get job report -o yaml >&2; exit 1; }
        # The queued JobSet (examples/jobsets.yaml): its ticket jobset-demo-train Succeeded (one
        # gang of 3 Pods), the JobSet Completed.
        for _ in $(seq 1 600); do
          [ "$(kubectl get run jobset-demo-train -o jsonpath='{.status.phase}' 2>/dev/null)" = Succeeded ] && break
          sleep 0.2
        done
        echo "$ kubectl get jobset demo-train; kubectl get run jobset-demo-train"; kubectl get jobset demo-train; kubectl get run jobset-demo-train
        [ "$(kubectl get run jobset-demo-train -o jsonpath='{.status.phase}' 2>/dev/null)" = Succeeded ] ||
          { echo "berth: the ticket jobset-demo-train of examples/jobsets.yaml did not succeed" >&2; kubectl get jobset demo-train -o yaml >&2;
            kubectl get run jobset-demo-train -o yaml >&2; kubectl get pods -l jobset.sigs.k8s.io/jobset-name=demo-train -o wide >&2; exit 1; }
        [ "$(kubectl get jobset demo-train -o jsonpath='{.status.conditions[?(@.type=="Completed")].status}')" = True ] ||
          { echo "berth: the JobSet demo-train is not Completed" >&2; exit 1; }
      fi
      echo "berth: smoke check passed"
      exit 0
    fi
    sleep 0.2
  done
  echo "berth: the example runs did not all start in time; runs and controller log:" >&2
  kubectl get runs -o wide >&2
  if [ "$HOST" = 1 ]; then tail -30 "$DIR/controller.log" >&2
  else kubectl -n berth-system get pods -o wide >&2; kubectl -n berth-system logs deploy/berth-controller --tail 30 >&2 || true; fi
  exit 1
fi

cat <<TXT

berth is running locally (controller: $(if [ "$HOST" = 1 ]; then echo "a process, log $DIR/controller.log";
  else echo "two Pods in berth-system, kubectl -n berth-system get pods; logs: kubectl -n berth-system logs deploy/berth-controller"; fi); nodes: $(if [ "$SIM" = 1 ]; then
  echo "simulated, $DIR/kubelet-sim.log"; else echo "real kubelets, logs in $DIR/nodes/NODE/"; fi)).
Dashboard: kubectl berth dashboard, in the tour's shell (the page on 127.0.0.1, with your kubeconfig)$(if [ "$HOST" = 1 ]; then echo "; with
--host-controller no queue API is registered, so its queue, fleets and teams pages show an error: curl 127.0.0.1:18080/api/queue"; fi)

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
  kubectl get job report; kubectl get run job-report    # the queued Job of examples/jobs.yaml and its ticket
  kubectl get jobset demo-train; kubectl get run jobset-demo-train   # the queued JobSet of examples/jobsets.yaml (one gang)
  kubectl get --raw /apis/queue.berth.dev/v1alpha1/queue   # the controller's exact queue (JSON; with --host-controller: curl 127.0.0.1:18080/queue)

Press Ctrl-C to stop everything.
TXT
wait
