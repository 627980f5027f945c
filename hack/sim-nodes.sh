#!/usr/bin/env bash
# Creates simulated Nodes (no kubelet runs here): Ready, with allocatable resources and labels.
#   hack/sim-nodes.sh PREFIX COUNT LABELS CPU MEMORY [GPUS]
# e.g. hack/sim-nodes.sh a100- 4 pool=a100,zone=z1 64 512Gi 8
# Uses kubectl with the current KUBECONFIG.
set -euo pipefail
prefix="$1"; count="$2"; labels="$3"; cpu="$4"; mem="$5"; gpus="${6:-0}"

# Nodes that exist already (a control plane that was kept running) are left as they are.
existing=" $(kubectl get nodes -o jsonpath='{range .items[*]}{.metadata.name}{" "}{end}' 2>/dev/null) "

label_json=$(echo "$labels" | tr ',' '\n' | awk -F= 'NF==2 {printf "%s\"%s\":\"%s\"", (n++?",":""), $1, $2}')
created=0
for i in $(seq 0 $((count - 1))); do
  name="${prefix}${i}"
  case "$existing" in *" $name "*) continue ;; esac
  created=$((created + 1))
  gpu_field=""
  [ "$gpus" != "0" ] && gpu_field=",\"nvidia.com/gpu\":\"$gpus\""
  cat <<JSON
{"apiVersion":"v1","kind":"Node","metadata":{"name":"$name","labels":{$label_json,"kubernetes.io/hostname":"$name"}},
 "status":{"capacity":{"cpu":"$cpu","memory":"$mem","pods":"110"$gpu_field},
           "allocatable":{"cpu":"$cpu","memory":"$mem","pods":"110"$gpu_field},
           "conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","message":"simulated by berth"}]}}
JSON
done > "${TMPDIR:-/tmp}/berth-sim-nodes.$$.json"
if [ "$created" -gt 0 ]; then kubectl create -f "${TMPDIR:-/tmp}/berth-sim-nodes.$$.json" >/dev/null; fi
rm -f "${TMPDIR:-/tmp}/berth-sim-nodes.$$.json"
# The API server taints new nodes not-ready until a kubelet reports; these are meant to be usable.
for i in $(seq 0 $((count - 1))); do
  kubectl patch node "${prefix}${i}" --type json -p '[{"op":"remove","path":"/spec/taints"}]' >/dev/null 2>&1 || true
done
echo "nodes ${prefix}0..${prefix}$((count - 1)) ready ($created created)"
