#!/usr/bin/env bash
# Real Kubernetes nodes on this machine: real kubelets (v1.37 by default, BERTH_KUBE_VERSION=1.35
# for the oldest supported; built by hack/build-kube.sh like kube-apiserver) with their own
# containerd 2 + runc, kubemark hollow nodes (the real kubelet with a fake runtime), and
# kube-controller-manager (node lifecycle: NotReady, taints, Pod GC).
#
#   hack/real-nodes.sh prepare                      packages, kubelet/kubemark/kube-controller-manager
#                                                   builds and the local images (cached in ~/.cache/berth)
#   hack/real-nodes.sh start DIR NAME [opts]        start one real node (kubelet + its own containerd)
#       --cpu N          allocatable CPUs (at most the machine's; default: the machine's)
#       --memory Q       allocatable memory (e.g. 4Gi; default: the machine's)
#       --gpus N         extended resource advertised on the Node status (default 0)
#       --gpu-resource R its name (default nvidia.com/gpu)
#       --labels k=v,..  node labels
#       --max-pods N     (default 110)
#       --dra-devices N  run the DRA example driver's kubelet plugin beside the kubelet with N example
#                        GPUs (driver and DeviceClass gpu.example.com; issue 49)
#   hack/real-nodes.sh stop DIR NAME                stop the node: kubelet, containers, containerd, cgroups
#   hack/real-nodes.sh stop-kubelet DIR NAME        stop only its kubelet (the node goes NotReady)
#   hack/real-nodes.sh start-kubelet DIR NAME       start its kubelet again
#   hack/real-nodes.sh dra DIR NAME N               (re)start the node's DRA example kubelet plugin with N
#                                                   devices (its ResourceSlice changes: issue 49)
#   hack/real-nodes.sh stop-dra DIR NAME            stop it (its ResourceSlices stay, as when a plugin crashes)
#   hack/real-nodes.sh hollow DIR PREFIX COUNT [--gpus N] [--labels k=v,..]
#                                                   start COUNT hollow nodes PREFIX0..PREFIX<COUNT-1>
#   hack/real-nodes.sh stop-hollow DIR PREFIX       stop them
#   hack/real-nodes.sh controller-manager DIR [--workloads]
#                                                   start kube-controller-manager for the control plane
#                                                   (and kube-proxy + kube-scheduler, with a pod network: see
#                                                   BERTH_POD_NETWORK in hack/control-plane.sh); --workloads:
#                                                   also the Job controller, the garbage collector, the
#                                                   ResourceQuota controller (status.used), the
#                                                   ResourceClaim controller (DRA, issue 49) and
#                                                   kube-scheduler (issue 45: queued Jobs)
#   hack/real-nodes.sh jobset DIR                   start the JobSet controller (sigs.k8s.io/jobset, pinned in
#                                                   hack/build-kube.sh): its CRD applied, its JobSet webhooks
#                                                   served on 127.0.0.1 from a self-signed certificate and
#                                                   registered by url (issue 45: queued JobSets)
#   hack/real-nodes.sh trainer DIR                  start Kubeflow Trainer's controller (pinned in build-kube.sh)
#                                                   the same way, as the user kubeflow-trainer (cluster-admin)
#   hack/real-nodes.sh import DIR IMAGE.tar         import an image into every running node
#   hack/real-nodes.sh stop-all DIR                 stop everything started under DIR (also after a crash)
#   hack/real-nodes.sh images                       print the local image names
#
# DIR is a control-plane directory of hack/control-plane.sh (its kubeconfig is used); nodes live in
# DIR/nodes/NAME (logs: kubelet.log, containerd.log). Everything is stopped by pid or by the
# mount namespace the node runs in: nothing this script did not start is touched.
# Images cannot be pulled here: busybox and pause are built locally and imported into each node.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
SELF="$HERE/$(basename "$0")"
CACHE="${BERTH_CACHE:-$HOME/.cache/berth}"
BIN="$("$HERE/build-kube.sh" --bin)"
TOOLS="$CACHE/tools/bin"   # containerd, its runc shim and ctr (hack/build-kube.sh)
IMAGES="$CACHE/images"
BUSYBOX_IMAGE="docker.io/library/busybox:1.35"
PAUSE_IMAGE="registry.k8s.io/pause:3.10"
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"

log() { echo "real-nodes: $*" >&2; }
die() { log "$*"; exit 1; }

# shellcheck source=hack/lib.sh
source "$HERE/lib.sh"

kubectl_cp() { kubectl --kubeconfig "$DIR/kubeconfig" "$@"; }

# ---------------------------------------------------------------------------------------------
# prepare: packages, binaries, images (each step is skipped when its result is cached)
prepare() {
  "$HERE/deps.sh"
  "$HERE/build-kube.sh" kube-apiserver etcd kubelet kube-controller-manager kubectl containerd
  mkdir -p "$IMAGES"
  exec 8>"$IMAGES/.lock"; flock 8
  if [ ! -f "$IMAGES/pause-3.10.tar" ]; then
    local t src; t=$(mktemp -d)
    mkdir -p "$t/rootfs"
    # pause.c of the Kubernetes module the binaries were built from (hack/build-kube.sh).
    src=$(ls "$CACHE"/gomod/k8s.io/kubernetes@v1.3*/build/pause/linux/pause.c | head -n1)
    gcc -static -O2 -o "$t/rootfs/pause" "$src"
    python3 "$HERE/mkimage.py" "$t/pause.tar" "$PAUSE_IMAGE" "$t/rootfs" '["/pause"]' '[]' >/dev/null
    mv "$t/pause.tar" "$IMAGES/pause-3.10.tar"; rm -rf "$t"
  fi
  if [ ! -f "$IMAGES/busybox.tar" ]; then
    local t; t=$(mktemp -d)
    mkdir -p "$t/rootfs/bin" "$t/rootfs/tmp" "$t/rootfs/etc"
    cp /bin/busybox "$t/rootfs/bin/busybox"
    "$t/rootfs/bin/busybox" --install -s "$t/rootfs/bin"
    # Symlinks point at /bin/busybox inside the image.
    for l in "$t"/rootfs/bin/*; do [ -L "$l" ] && ln -sf /bin/busybox "$l"; done
    echo "root:x:0:0:root:/root:/bin/sh" > "$t/rootfs/etc/passwd"
    echo "nobody:x:65534:65534:nobody:/:/bin/false" >> "$t/rootfs/etc/passwd"
    python3 "$HERE/mkimage.py" "$t/busybox.tar" "$BUSYBOX_IMAGE" "$t/rootfs" '[]' '["sh"]' >/dev/null
    mv "$t/busybox.tar" "$IMAGES/busybox.tar"; rm -rf "$t"
  fi
  flock -u 8
}

# ---------------------------------------------------------------------------------------------
# cgroups (v1: one directory per hierarchy; v2: one directory)
cgroup_dirs() {  # NAME -> the node's cgroup directories
  if [ -f /sys/fs/cgroup/cgroup.controllers ]; then echo "/sys/fs/cgroup/$1"; return; fi
  local h
  for h in /sys/fs/cgroup/*/; do
    h=${h%/}
    [ -L "$h" ] && continue
    [ "$(basename "$h")" = unified ] && continue
    echo "$h/$1"
  done
}
make_cgroups() {
  local d parent
  for d in $(cgroup_dirs "$1"); do
    mkdir -p "$d"
    parent=$(dirname "$d")
    if [ -f "$d/cpuset.cpus" ] && [ -z "$(cat "$d/cpuset.cpus")" ]; then
      cat "$parent/cpuset.cpus" > "$d/cpuset.cpus"; cat "$parent/cpuset.mems" > "$d/cpuset.mems"
    fi
  done
}
remove_cgroups() {
  local d
  for d in $(cgroup_dirs "$1"); do
    [ -d "$d" ] || continue
    # Deepest first; a cgroup with processes left cannot go (they were killed just before).
    find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done
}

# ---------------------------------------------------------------------------------------------
# A real node. Runs inside its own mount namespace (unshare -m): the kubelet hard-codes
# /var/log/pods, /var/log/containers and /var/lib/kubelet/{device-plugins,pod-resources}, and two
# kubelets sharing one containerd kill each other's Pods, so each node has its own of all of these.
node_main() {  # (inside the namespace) DIR NAME
  local lab="$DIR/nodes/$NAME" d
  export PATH="$TOOLS:$PATH"   # containerd finds its shim (containerd-shim-runc-v2) on PATH
  for d in /var/log/pods /var/log/containers /var/lib/kubelet/device-plugins /var/lib/kubelet/pod-resources \
           /var/lib/kubelet/plugins /var/lib/kubelet/plugins_registry; do
    mkdir -p "$d" "$lab/private$d"
    mount --bind "$lab/private$d" "$d"
  done
  "$TOOLS/containerd" --config "$lab/containerd.toml" >>"$lab/containerd.log" 2>&1 &
  echo $! > "$lab/containerd.pid"
  for _ in $(seq 1 200); do [ -S "$lab/containerd.sock" ] && break; sleep 0.1; done
  [ -S "$lab/containerd.sock" ] || { echo "containerd did not start" >>"$lab/kubelet.log"; exit 1; }
  "$TOOLS/ctr" -a "$lab/containerd.sock" -n k8s.io images import --all-platforms "$IMAGES/pause-3.10.tar" >/dev/null
  "$TOOLS/ctr" -a "$lab/containerd.sock" -n k8s.io images import --all-platforms "$IMAGES/busybox.tar" >/dev/null
  touch "$lab/images.ready"
  run_kubelet
  # Hold the namespace until containerd goes.
  wait "$(cat "$lab/containerd.pid")" 2>/dev/null || true
}

run_kubelet() {  # (inside the namespace)
  local lab="$DIR/nodes/$NAME"
  # The kubelet binds its ports seconds after it starts: another process (a test beside this one)
  # can take a port free_port found free. Then it exits at once with "address already in use":
  # start it again on new ports. Any other exit (stop-kubelet, a crash) is left alone.
  (
    for _ in 1 2 3 4 5; do
      local before pid
      before=$(stat -c %s "$lab/kubelet.log" 2>/dev/null || echo 0)
      # shellcheck disable=SC2046
      "$BIN/kubelet" $(cat "$lab/kubelet.args") &
      pid=$!
      echo "$pid" > "$lab/kubelet.pid"
      wait "$pid" 2>/dev/null || true
      grep -q "bind: address already in use" <<<"$(tail -c +"$((before + 1))" "$lab/kubelet.log")" || break
      sed -i -e "s/^port: .*/port: $(free_port)/" -e "s/^healthzPort: .*/healthzPort: $(free_port)/" "$lab/kubelet.yaml"
      echo "real-nodes: a kubelet port was taken; starting the kubelet again on new ports"
    done
  ) >>"$lab/kubelet.log" 2>&1 </dev/null &
  # The pid file names the kubelet itself (stop-kubelet signals it), not this supervisor.
  for _ in $(seq 1 50); do [ -s "$lab/kubelet.pid" ] && break; sleep 0.1; done
}

start_node() {
  local cpu="" memory="" gpus=0 gpu_resource="nvidia.com/gpu" labels="" max_pods=110 dra_devices=""
  while [ $# -gt 0 ]; do
    case "$1" in
      --cpu) cpu=$2; shift 2 ;;
      --memory) memory=$2; shift 2 ;;
      --gpus) gpus=$2; shift 2 ;;
      --gpu-resource) gpu_resource=$2; shift 2 ;;
      --labels) labels=$2; shift 2 ;;
      --max-pods) max_pods=$2; shift 2 ;;
      --dra-devices) dra_devices=$2; shift 2 ;;
      *) die "unknown option $1" ;;
    esac
  done
  [ -f "$DIR/kubeconfig" ] || die "no control plane in $DIR (hack/control-plane.sh start $DIR)"
  [ -x "$BIN/kubelet" ] && [ -f "$IMAGES/busybox.tar" ] || prepare
  local lab="$DIR/nodes/$NAME"
  if pid_alive "$lab/holder.pid"; then log "$NAME already running"; return 0; fi
  rm -rf "$lab"; mkdir -p "$lab"/{root,pki,volume-plugins,cni/net.d,ipam,runc,containerd}

  # Allocatable = machine - reserved: a node is sized by reserving the rest for the "system".
  local ncpu total_kib reserved=()
  ncpu=$(nproc)
  total_kib=$(awk '/MemTotal/ {print $2}' /proc/meminfo)
  if [ -n "$cpu" ]; then
    [ "$cpu" -le "$ncpu" ] || die "--cpu $cpu: this machine has $ncpu CPUs (a real kubelet reports what it has)"
    [ "$cpu" -lt "$ncpu" ] && reserved+=("cpu=$((ncpu - cpu))")
  fi
  if [ -n "$memory" ]; then
    local want_kib
    want_kib=$(numfmt --from=iec-i --to-unit=1024 "$memory" 2>/dev/null) || die "--memory $memory: not a quantity like 4Gi"
    [ "$want_kib" -lt "$total_kib" ] || die "--memory $memory: this machine has $((total_kib / 1024))Mi"
    reserved+=("memory=$((total_kib - want_kib))Ki")
  fi
  local hash bridge subnet
  hash=$(printf '%s' "$DIR/$NAME" | sha1sum | cut -c1-8)
  bridge="bb$hash"
  # The node's cgroup root: unique per control plane, so that nodes of the same name under two
  # control planes (two test runs side by side) never share one (a kubelet removes what it does
  # not know under its root).
  local cgroup="berth-$hash"
  subnet="10.$((200 + 0x${hash:0:2} % 50)).$((0x${hash:2:2})).0/24"
  # With a pod network (BERTH_POD_NETWORK=1 at hack/control-plane.sh start) the bridge is the
  # Pods' gateway: this machine routes to them (probes, the API server calling a webhook, its
  # service proxy) and they reach the API server at its address; otherwise Pods are cut off.
  local gateway=false
  [ -f "$DIR/pod-network" ] && gateway=true
  cat > "$lab/cni/net.d/10-berth.conflist" <<CNI
{"cniVersion": "0.4.0", "name": "berth-$hash", "plugins": [
  {"type": "bridge", "bridge": "$bridge", "isGateway": $gateway, "isDefaultGateway": $gateway, "ipMasq": false,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$subnet"}]], "dataDir": "$lab/ipam"}},
  {"type": "loopback"}]}
CNI
  # containerd 2 (configuration version 3). restrict_oom_score_adj is required here: without it
  # every sandbox fails ("runc create failed: ... can't get final child's PID from pipe: EOF").
  cat > "$lab/containerd.toml" <<TOML
version = 3
root = "$lab/containerd/root"
state = "$lab/containerd/state"
[grpc]
  address = "$lab/containerd.sock"
[ttrpc]
  address = "$lab/containerd.sock.ttrpc"
[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "$PAUSE_IMAGE"
[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
  # CDI (always on in containerd 2) reads the specs this node's DRA kubelet plugin writes (--cdi-root).
  cdi_spec_dirs = ["$lab/cdi"]
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$lab/runc"
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "$lab/cni/net.d"
[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = "127.0.0.1"
# NRI (on by default in containerd 2) listens on one fixed socket, /var/run/nri/nri.sock: the
# nodes of two control planes side by side would take it from each other. No plugin is used.
[plugins.'io.containerd.nri.v1.nri']
  disable = true
TOML
  local port hport
  port=$(free_port); hport=$(free_port)
  # The kubelet's settings in a KubeletConfiguration file (most flags are deprecated since 1.2x).
  # This host has cgroup v1: kubelet 1.35+ refuses it unless failCgroupV1 is false.
  # The API server reaches the kubelet (logs, exec) with its client certificate, signed by the
  # control plane's client CA; the kubelet asks the API server whether that user may (Webhook).
  local reserved_yaml=""
  [ "${#reserved[@]}" -gt 0 ] && reserved_yaml="systemReserved: {$(IFS=,; echo "${reserved[*]}" | sed 's/=/: /g; s/,/, /g')}"
  cat > "$lab/kubelet.yaml" <<KC
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://$lab/containerd.sock
cgroupDriver: cgroupfs
cgroupRoot: /$cgroup
failSwapOn: false
failCgroupV1: false
volumePluginDir: $lab/volume-plugins
port: $port
healthzPort: $hport
readOnlyPort: 0
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
maxPods: $max_pods
nodeStatusUpdateFrequency: 4s
syncFrequency: 5s
# The nodes share the host's disk with everything else on it: with the kubelet's default
# thresholds (imagefs.available<15%, nodefs.available<10%) a fuller shared disk gave the test
# nodes DiskPressure and every Pod was refused or evicted (seen 2026-11-25 at 86% used).
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 2%}
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $DIR/client-ca.crt}
authorization: {mode: Webhook}
$reserved_yaml
KC
  local args=(
    --config="$lab/kubelet.yaml" --kubeconfig="$DIR/kubeconfig" --hostname-override="$NAME"
    --root-dir="$lab/root" --cert-dir="$lab/pki"
  )
  [ -n "$labels" ] && args+=(--node-labels="$labels")
  [ -n "${BERTH_KUBELET_V:-}" ] && args+=(--v="$BERTH_KUBELET_V")  # kubelet log verbosity, for debugging
  printf '%s\n' "${args[@]}" > "$lab/kubelet.args"
  echo "$bridge" > "$lab/bridge"

  echo "$cgroup" > "$lab/cgroup"
  make_cgroups "$cgroup"
  DIR="$DIR" NAME="$NAME" setsid unshare -m --propagation private "$SELF" _node-main "$DIR" "$NAME" \
    >>"$lab/holder.log" 2>&1 < /dev/null &
  echo $! > "$lab/holder.pid"

  # Registered and Ready, then the GPUs advertised on the Node status.
  local ready=""
  for _ in $(seq 1 600); do
    pid_alive "$lab/holder.pid" || { tail -n 20 "$lab/kubelet.log" "$lab/containerd.log" "$lab/holder.log" >&2; die "node $NAME exited"; }
    ready=$(kubectl_cp get node "$NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null || true)
    [ "$ready" = True ] && break
    sleep 0.2
  done
  [ "$ready" = True ] || { tail -n 20 "$lab/kubelet.log" >&2; die "node $NAME not Ready after 120 s (logs in $lab)"; }
  if [ "$gpus" != 0 ]; then
    local key=${gpu_resource//\//~1}
    kubectl_cp patch node "$NAME" --subresource=status --type json \
      -p "[{\"op\":\"add\",\"path\":\"/status/capacity/$key\",\"value\":\"$gpus\"}]" >/dev/null
    for _ in $(seq 1 300); do
      [ "$(kubectl_cp get node "$NAME" -o jsonpath="{.status.allocatable.${gpu_resource//./\\.}}" 2>/dev/null)" = "$gpus" ] && break
      sleep 0.2
    done
  fi
  # Without kube-controller-manager nothing removes the not-ready taint the node registered with.
  for _ in $(seq 1 300); do
    [ -z "$(kubectl_cp get node "$NAME" -o jsonpath='{.spec.taints}' 2>/dev/null)" ] && break
    pid_alive "$DIR/controller-manager.pid" || {
      kubectl_cp patch node "$NAME" --type json -p '[{"op":"remove","path":"/spec/taints"}]' >/dev/null 2>&1 || true; }
    sleep 0.2
  done
  [ -z "$dra_devices" ] || start_dra "$dra_devices"
  log "node $NAME ready (logs in $lab)"
}

# ---------------------------------------------------------------------------------------------
# The DRA example driver's kubelet plugin (sigs.k8s.io/dra-example-driver, issue 49) beside a
# node's kubelet: N example GPUs of the driver gpu.example.com, published as the node's
# ResourceSlice, prepared for a Pod's claims as CDI specs in DIR/nodes/NAME/cdi (the node's
# containerd reads them: cdi_spec_dirs) that give its containers GPU_DEVICE_* variables. It runs
# in the node's mount namespace and registers in the kubelet's own --root-dir (plugins_registry/,
# plugins/). The DeviceClass gpu.example.com is applied as the driver's chart makes it.
DRA_DRIVER=gpu.example.com
start_dra() {  # N
  local lab="$DIR/nodes/$NAME" n=$1 i got=""
  [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -le 128 ] || die "--dra-devices $n: a number of devices up to 128"
  pid_alive "$lab/holder.pid" || die "node $NAME is not running"
  "$HERE/build-kube.sh" dra-example-kubeletplugin
  stop_pidfile "$lab/dra-plugin.pid" 10
  kubectl_cp apply -f - >/dev/null <<YAML || die "the DeviceClass $DRA_DRIVER was not applied"
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: $DRA_DRIVER
spec:
  selectors:
  - cel:
      expression: "device.driver == '$DRA_DRIVER'"
YAML
  mkdir -p "$lab/cdi" "$lab/root/plugins_registry" "$lab/root/plugins"
  # nsenter -m execs the plugin in the namespace: the pid is the plugin's.
  nsenter -t "$(cat "$lab/containerd.pid")" -m "$TOOLS/dra-example-kubeletplugin" --node-name="$NAME" \
    --num-devices="$n" --cdi-root="$lab/cdi" --kubeconfig="$DIR/kubeconfig" \
    --kubelet-registrar-directory-path="$lab/root/plugins_registry" \
    --kubelet-plugins-directory-path="$lab/root/plugins" >>"$lab/dra-plugin.log" 2>&1 </dev/null &
  echo $! > "$lab/dra-plugin.pid"
  # Up when the node's ResourceSlices list N devices and the kubelet has its registration socket.
  for i in $(seq 1 300); do
    pid_alive "$lab/dra-plugin.pid" || { tail -n 20 "$lab/dra-plugin.log" >&2; die "the DRA plugin of $NAME exited"; }
    got=$(kubectl_cp get resourceslices --field-selector "spec.nodeName=$NAME,spec.driver=$DRA_DRIVER" \
      -o jsonpath='{range .items[*]}{range .spec.devices[*]}{.name}{"\n"}{end}{end}' 2>/dev/null | grep -c . || true)
    [ "$got" = "$n" ] && [ -S "$lab/root/plugins_registry/$DRA_DRIVER-reg.sock" ] && break
    sleep 0.2
  done
  [ "$i" -lt 300 ] || { tail -n 20 "$lab/dra-plugin.log" >&2; die "node $NAME: $got of $n DRA devices published after 60 s"; }
  log "node $NAME: DRA plugin with $n devices of $DRA_DRIVER (log: $lab/dra-plugin.log)"
}

stop_node() {
  local lab="$DIR/nodes/$NAME"
  [ -d "$lab" ] || return 0
  local ns="" nsfd=""
  local holder
  holder=$(pidfile_pid "$lab/holder.pid")
  # The node's mount namespace stays open here until the sweep below is done. The kernel gives a
  # freed namespace's number to the next one made (any `unshare -m` on the machine), so a sweep by
  # number after the holder went would kill another node's processes: CI on 2026-11-28 saw a
  # starting soak node's holder SIGKILLed while another test stopped its nodes.
  if [ -n "$holder" ] && { exec {nsfd}<"/proc/$holder/ns/mnt"; } 2>/dev/null; then
    ns=$(readlink "/proc/$$/fd/$nsfd")
  fi
  [ "$ns" = "$(node_ns $$)" ] && ns=""   # never the caller's own namespace
  stop_pidfile "$lab/dra-plugin.pid" 5
  stop_pidfile "$lab/kubelet.pid" 10
  if [ -S "$lab/containerd.sock" ] && pid_alive "$lab/containerd.pid"; then
    local tasks
    tasks=$(timeout 10 "$TOOLS/ctr" -a "$lab/containerd.sock" -n k8s.io tasks ls -q 2>/dev/null || true)
    for t in $tasks; do timeout 5 "$TOOLS/ctr" -a "$lab/containerd.sock" -n k8s.io tasks kill -s SIGKILL "$t" >/dev/null 2>&1 || true; done
    for t in $tasks; do timeout 5 "$TOOLS/ctr" -a "$lab/containerd.sock" -n k8s.io tasks delete -f "$t" >/dev/null 2>&1 || true; done
  fi
  stop_pidfile "$lab/containerd.pid" 5
  stop_pidfile "$lab/holder.pid" 2
  # Whatever is left in the node's mount namespace (shims, containers) was started by this node.
  if [ -n "$ns" ]; then
    local p
    for p in /proc/[0-9]*; do
      p=${p#/proc/}
      [ "$(node_ns "$p")" = "$ns" ] && kill -9 "$p" 2>/dev/null || true
    done
  fi
  [ -n "$nsfd" ] && exec {nsfd}<&-
  sleep 0.2
  remove_cgroups "$(cat "$lab/cgroup" 2>/dev/null || echo "$NAME")"
  [ -f "$lab/bridge" ] && ip link del "$(cat "$lab/bridge")" 2>/dev/null || true
  # Overlay mounts of containers live in the node's namespace and went with it; rootfs data stays
  # in $lab (removed with the control plane's directory).
  log "node $NAME stopped"
}

stop_kubelet() { stop_pidfile "$DIR/nodes/$NAME/kubelet.pid" 10; log "kubelet of $NAME stopped"; }
start_kubelet() {
  local lab="$DIR/nodes/$NAME"
  pid_alive "$lab/holder.pid" || die "node $NAME is not running"
  pid_alive "$lab/kubelet.pid" && return 0
  DIR="$DIR" NAME="$NAME" nsenter -t "$(cat "$lab/containerd.pid")" -m "$SELF" _run-kubelet "$DIR" "$NAME"
  log "kubelet of $NAME started"
}

# ---------------------------------------------------------------------------------------------
# Hollow nodes (kubemark): the real kubelet's node and Pod handling with a fake container runtime.
# Pods never finish (delete them), there are no logs, and capacity is cpu 1, memory 3840Mi.
# kubemark 1.37 uses the host's image service by default (/run/containerd/containerd.sock, not
# here): --use-host-image-service=false gives it a fake one too.
start_hollow_node() {  # NAME LAB LABELS
  local name=$1 lab=$2 labels=$3 extra=()
  [ -n "$labels" ] && extra+=(--node-labels="$labels")
  # kubemark hard-codes /tmp/kubelet_remote.sock and /tmp/hollow-kubelet.*: a private /tmp each.
  setsid unshare -m --propagation private sh -c 'mount --bind "$1" /tmp && shift && exec "$@"' sh "$lab/tmp" \
    "$BIN/kubemark" --morph=kubelet --name="$name" --kubeconfig=/tmp/kubeconfig \
    --kubelet-port="$(free_port)" --kubelet-read-only-port=0 --use-host-image-service=false "${extra[@]}" \
    >>"$lab/kubelet.log" 2>&1 < /dev/null &
  echo $! > "$lab/pid"
}

hollow() {  # PREFIX COUNT [--gpus N] [--labels ...]
  local prefix=$1 count=$2; shift 2
  local gpus=0 labels=""
  while [ $# -gt 0 ]; do
    case "$1" in
      --gpus) gpus=$2; shift 2 ;;
      --labels) labels=$2; shift 2 ;;
      *) die "unknown option $1" ;;
    esac
  done
  "$HERE/build-kube.sh" kubemark
  local i name lab names=()
  for i in $(seq 0 $((count - 1))); do
    name="$prefix$i"; lab="$DIR/hollow/$name"; names+=("$name")
    mkdir -p "$lab/tmp"
    # The node sees only its private /tmp: give it a self-contained kubeconfig there (the control
    # plane's directory may itself be under /tmp).
    kubectl_cp config view --raw --flatten > "$lab/tmp/kubeconfig"
    start_hollow_node "$name" "$lab" "$labels"
  done
  local ready tries=0
  for _ in $(seq 1 900); do
    # A node whose port was taken before it bound it (it exits at once, "address already in use")
    # starts again on a new port.
    if [ $((tries++ % 10)) = 0 ]; then
      for name in "${names[@]}"; do
        lab="$DIR/hollow/$name"
        if ! pid_alive "$lab/pid" && grep -q "bind: address already in use" "$lab/kubelet.log" 2>/dev/null \
            && [ "$(grep -c 'starting it again on a new port' "$lab/kubelet.log")" -lt 5 ]; then
          echo "real-nodes: the hollow node's port was taken; starting it again on a new port" >>"$lab/kubelet.log"
          start_hollow_node "$name" "$lab" "$labels"
        fi
      done
    fi
    ready=$(kubectl_cp get nodes -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' 2>/dev/null \
      | awk -v p="$prefix" 'index($1, p) == 1 && $2 == "True"' | wc -l)
    [ "$ready" -ge "$count" ] && break
    sleep 0.2
  done
  [ "$ready" -ge "$count" ] || die "only $ready of $count hollow nodes Ready"
  if [ "$gpus" != 0 ]; then
    for name in "${names[@]}"; do
      kubectl_cp patch node "$name" --subresource=status --type json \
        -p "[{\"op\":\"add\",\"path\":\"/status/capacity/nvidia.com~1gpu\",\"value\":\"$gpus\"}]" >/dev/null
    done
  fi
  if ! pid_alive "$DIR/controller-manager.pid"; then
    for name in "${names[@]}"; do
      kubectl_cp patch node "$name" --type json -p '[{"op":"remove","path":"/spec/taints"}]' >/dev/null 2>&1 || true
    done
  fi
  log "$count hollow nodes $prefix* ready"
}

# Stops hollow nodes all at once: SIGTERM to every one, then SIGKILL to what is left after 5 s.
stop_hollow_dirs() {
  local lab pids=()
  local p
  for lab in "$@"; do p=$(pidfile_pid "$lab/pid"); [ -n "$p" ] && pids+=("$p"); done
  [ "${#pids[@]}" -gt 0 ] || { for lab in "$@"; do rm -f "$lab/pid"; done; return 0; }
  kill "${pids[@]}" 2>/dev/null || true
  for _ in $(seq 1 50); do
    local alive=0
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.1
  done
  for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && kill -9 "$p" 2>/dev/null; done || true
  for lab in "$@"; do rm -f "$lab/pid"; done
}
stop_hollow() { stop_hollow_dirs "$DIR/hollow/$1"*/; }

# ---------------------------------------------------------------------------------------------
controller_manager() {
  "$HERE/build-kube.sh" kube-controller-manager
  if pid_alive "$DIR/controller-manager.pid"; then
    [ -f "$DIR/pod-network" ] && { kube_proxy; kube_scheduler; }
    return 0
  fi
  # nodelifecycle: NotReady / unreachable taints when a kubelet stops reporting, and removes the
  # not-ready taint of a new node; taint-eviction-controller: evicts Pods from tainted nodes after
  # their tolerations (part of nodelifecycle until 1.29); podgc: Pods of deleted nodes. Short grace
  # periods for tests.
  local controllers=nodelifecycle,taint-eviction-controller,podgc extra=() workloads=0
  [ "${1:-}" = "--workloads" ] && workloads=1
  # Issue 45: the Job controller makes a queued Job's Pods, the garbage collector deletes a deleted
  # Job's Pods and ticket, kube-scheduler binds the Pods berth pinned.
  if [ "$workloads" = 1 ]; then
    controllers+=,job-controller,resourcequota-controller
    # DRA (issue 49): makes a Pod's ResourceClaims from its templates, and frees a claim (its
    # reservation, then its allocation) when the Pods that used it are done.
    controllers+=,resourceclaim-controller
    [ -f "$DIR/pod-network" ] || controllers+=,garbage-collector-controller
  fi
  if [ -f "$DIR/pod-network" ]; then
    # What a Deployment behind a Service with service account credentials needs (Helm installs
    # berth so): Deployments, ReplicaSets, EndpointSlices, the "default" ServiceAccount of each
    # namespace (the ServiceAccount admission plugin refuses Pods without one), the
    # kube-root-ca.crt ConfigMap in their token volume, and garbage collection of what a deleted
    # owner owned (helm uninstall).
    controllers+=,deployment-controller,replicaset-controller,endpointslice-controller,serviceaccount-controller
    controllers+=,root-ca-certificate-publisher-controller,garbage-collector-controller
    extra=(--root-ca-file="$DIR/certs/apiserver.crt")
  fi
  "$BIN/kube-controller-manager" --kubeconfig="$DIR/kubeconfig" --leader-elect=false \
    --controllers="$controllers" --secure-port=0 \
    --node-monitor-period=2s --node-monitor-grace-period=16s \
    --use-service-account-credentials=false "${extra[@]}" \
    >>"$DIR/controller-manager.log" 2>&1 < /dev/null &
  echo $! > "$DIR/controller-manager.pid"
  sleep 1
  pid_alive "$DIR/controller-manager.pid" || { tail -20 "$DIR/controller-manager.log" >&2; die "kube-controller-manager exited"; }
  log "kube-controller-manager running (log: $DIR/controller-manager.log)"
  if [ -f "$DIR/pod-network" ]; then
    kube_proxy
    kube_scheduler
  elif [ "$workloads" = 1 ]; then
    kube_scheduler
  fi
  return 0
}

# What the JobSet and Trainer controllers below share. apply_crds WHAT FILE...: applies the CRD
# files (named <group>_<plural>.yaml, as both projects name them) and waits until each is
# Established (kubectl wait fails at once while a CRD has no conditions yet).
apply_crds() {
  local what=$1 f base i; shift
  for f in "$@"; do
    kubectl_cp apply --server-side --force-conflicts -f "$f" >/dev/null || die "$what: CRD $(basename "$f") was not applied"
  done
  for f in "$@"; do
    base=$(basename "$f" .yaml)
    for i in $(seq 1 300); do
      [ "$(kubectl_cp get crd "${base#*_}.${base%%_*}" -o jsonpath='{.status.conditions[?(@.type=="Established")].status}' 2>/dev/null)" = True ] && break
      sleep 0.2
    done
    [ "$i" -lt 300 ] || die "$what: CRD ${base#*_}.${base%%_*} is not established after 60 s"
  done
}

# self_signed_cert WHAT CERT_DIR: a serving certificate for 127.0.0.1 (CERT_DIR/tls.crt, tls.key), made once.
self_signed_cert() {
  [ -f "$2/tls.crt" ] && return 0
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=$1-webhook" -addext "subjectAltName=IP:127.0.0.1" \
    -keyout "$2/tls.key" -out "$2/tls.crt" 2>/dev/null || die "$1: no webhook certificate (openssl)"
}

# start_manager NAME PORT WHAT COMMAND...: runs COMMAND in the background (log DIR/NAME.log, pid
# DIR/NAME.pid) and waits up to 30 s until it serves its webhooks on 127.0.0.1:PORT.
start_manager() {
  local name=$1 port=$2 what=$3 i; shift 3
  "$@" >>"$DIR/$name.log" 2>&1 < /dev/null &
  echo $! > "$DIR/$name.pid"
  for i in $(seq 1 150); do
    port_free "$port" || break
    pid_alive "$DIR/$name.pid" || break
    sleep 0.2
  done
  pid_alive "$DIR/$name.pid" && ! port_free "$port" || { tail -20 "$DIR/$name.log" >&2; die "the $what controller did not start"; }
}

# The JobSet controller (issue 45) for the control plane. Its manager runs on this machine with the
# control plane's kubeconfig and a config file (DIR/jobset/config.yaml) that differs from the
# release's in what a process outside the cluster needs: internal cert management off (it would
# write a Secret and patch webhook configurations of a Service that does not exist here), its
# webhook server on 127.0.0.1:<free port> with a self-signed certificate for 127.0.0.1, metrics and
# health probes off (their fixed ports would clash between test processes), no leader election.
# Its JobSet defaulting and validating webhooks (failurePolicy Fail, as released) are registered
# with url + caBundle; its Pod webhooks are not (they serve exclusive placement and in-place
# restart, which no test here uses, and would put every Pod of the cluster behind this process).
jobset_controller() {
  "$HERE/build-kube.sh" jobset kubectl
  pid_alive "$DIR/jobset.pid" && return 0
  local jdir="$DIR/jobset" mod port
  mod=$("$HERE/build-kube.sh" --jobset-dir)
  mkdir -p "$jdir/certs"
  apply_crds jobset "$mod/config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml"
  self_signed_cert jobset "$jdir/certs"
  port=$(free_port)
  cat > "$jdir/config.yaml" <<CFG
apiVersion: config.jobset.x-k8s.io/v1alpha1
kind: Configuration
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
webhook:
  host: 127.0.0.1
  port: $port
  certDir: $jdir/certs
metrics:
  bindAddress: "0"
health:
  healthProbeBindAddress: "0"
CFG
  start_manager jobset "$port" JobSet "$TOOLS/jobset" --config="$jdir/config.yaml" --kubeconfig="$DIR/kubeconfig" --zap-devel=false
  local ca; ca=$(base64 -w0 < "$jdir/certs/tls.crt")
  kubectl_cp apply -f - >/dev/null <<WH || die "jobset: its webhook configurations were not applied"
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: jobset-mutating-webhook-configuration
webhooks:
- name: mjobset.kb.io
  admissionReviewVersions: [v1]
  clientConfig:
    url: https://127.0.0.1:$port/mutate-jobset-x-k8s-io-v1alpha2-jobset
    caBundle: $ca
  failurePolicy: Fail
  sideEffects: None
  rules:
  - {apiGroups: [jobset.x-k8s.io], apiVersions: [v1alpha2], operations: [CREATE], resources: [jobsets]}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: jobset-validating-webhook-configuration
webhooks:
- name: vjobset.kb.io
  admissionReviewVersions: [v1]
  clientConfig:
    url: https://127.0.0.1:$port/validate-jobset-x-k8s-io-v1alpha2-jobset
    caBundle: $ca
  failurePolicy: Fail
  sideEffects: None
  rules:
  - {apiGroups: [jobset.x-k8s.io], apiVersions: [v1alpha2], operations: [CREATE, UPDATE], resources: [jobsets]}
WH
  log "JobSet controller running (log: $DIR/jobset.log, webhooks on 127.0.0.1:$port)"
}

# Kubeflow Trainer's controller manager (issue 45 item 5: a framework that makes JobSets, queued
# with no Trainer-specific code in berth). Run like the JobSet controller (after it: its TrainJobs
# make JobSets): its CRDs applied, cert management, metrics and health probes off, its webhook server
# on 127.0.0.1:<free port> with a self-signed certificate (the manager reads it from
# $TMPDIR/k8s-webhook-server/serving-certs, so TMPDIR is its own directory), its webhooks registered
# by url. It acts as the user kubeflow-trainer (a kubeconfig impersonating it, bound to
# cluster-admin), not as the admin the tests' berth runs as: the admission policies that keep a
# queued JobSet suspended refuse it as they refuse everyone but berth.
trainer_controller() {
  "$HERE/build-kube.sh" trainer kubectl
  pid_alive "$DIR/trainer.pid" && return 0
  local tdir="$DIR/trainer" mod port
  mod=$("$HERE/build-kube.sh" --trainer-dir)
  local certs="$tdir/tmp/k8s-webhook-server/serving-certs"
  mkdir -p "$certs"
  apply_crds trainer "$mod/manifests/base/crds/trainer.kubeflow.org_"{trainjobs,trainingruntimes,clustertrainingruntimes}.yaml
  self_signed_cert trainer "$certs"
  kubectl_cp create clusterrolebinding kubeflow-trainer-admin --clusterrole=cluster-admin --user=kubeflow-trainer \
    --dry-run=client -o yaml | kubectl_cp apply -f - >/dev/null || die "trainer: no ClusterRoleBinding for kubeflow-trainer"
  # The control plane's kubeconfig with its one user impersonating kubeflow-trainer (field `as`).
  kubectl_cp config view --raw --flatten | awk '{print} /^  user:$/ && !done {print "    as: kubeflow-trainer"; done=1}' \
    > "$tdir/kubeconfig"
  grep -q '^    as: kubeflow-trainer$' "$tdir/kubeconfig" || die "trainer: no kubeconfig impersonating kubeflow-trainer"
  port=$(free_port)
  cat > "$tdir/config.yaml" <<CFG
apiVersion: config.trainer.kubeflow.org/v1alpha1
kind: Configuration
health:
  healthProbeBindAddress: "0"
metrics:
  bindAddress: "0"
webhook:
  port: $port
  host: 127.0.0.1
leaderElection:
  leaderElect: false
certManagement:
  enable: false
CFG
  start_manager trainer "$port" Trainer env TMPDIR="$tdir/tmp" "$TOOLS/trainer" --config="$tdir/config.yaml" --kubeconfig="$tdir/kubeconfig"
  local ca; ca=$(base64 -w0 < "$certs/tls.crt")
  local url="https://127.0.0.1:$port"
  kubectl_cp apply -f - >/dev/null <<WH || die "trainer: its webhook configurations were not applied"
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: trainer-mutating-webhook-configuration
webhooks:
- name: defaulter.trainjob.trainer.kubeflow.org
  admissionReviewVersions: [v1]
  clientConfig: {url: "$url/mutate-trainer-kubeflow-org-v1alpha1-trainjob", caBundle: $ca}
  failurePolicy: Fail
  sideEffects: None
  rules:
  - {apiGroups: [trainer.kubeflow.org], apiVersions: [v1alpha1], operations: [CREATE, UPDATE], resources: [trainjobs]}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: trainer-validating-webhook-configuration
webhooks:
- name: validator.clustertrainingruntime.trainer.kubeflow.org
  admissionReviewVersions: [v1]
  clientConfig: {url: "$url/validate-trainer-kubeflow-org-v1alpha1-clustertrainingruntime", caBundle: $ca}
  failurePolicy: Fail
  sideEffects: None
  rules:
  - {apiGroups: [trainer.kubeflow.org], apiVersions: [v1alpha1], operations: [CREATE, UPDATE], resources: [clustertrainingruntimes]}
- name: validator.trainingruntime.trainer.kubeflow.org
  admissionReviewVersions: [v1]
  clientConfig: {url: "$url/validate-trainer-kubeflow-org-v1alpha1-trainingruntime", caBundle: $ca}
  failurePolicy: Fail
  sideEffects: None
  rules:
  - {apiGroups: [trainer.kubeflow.org], apiVersions: [v1alpha1], operations: [CREATE, UPDATE], resources: [trainingruntimes]}
- name: validator.trainjob.trainer.kubeflow.org
  admissionReviewVersions: [v1]
  clientConfig: {url: "$url/validate-trainer-kubeflow-org-v1alpha1-trainjob", caBundle: $ca}
  failurePolicy: Fail
  sideEffects: None
  rules:
  - {apiGroups: [trainer.kubeflow.org], apiVersions: [v1alpha1], operations: [CREATE, UPDATE], resources: [trainjobs]}
WH
  log "Trainer controller running (log: $DIR/trainer.log, webhooks on 127.0.0.1:$port)"
}

# kube-scheduler, with a pod network: a cluster's Pods that no one binds (berth's own Deployment
# Pods; berth creates its runs' Pods bound) are placed as a cluster places them.
kube_scheduler() {
  "$HERE/build-kube.sh" kube-scheduler
  pid_alive "$DIR/kube-scheduler.pid" && return 0
  "$BIN/kube-scheduler" --kubeconfig="$DIR/kubeconfig" --leader-elect=false --secure-port=0 \
    >>"$DIR/kube-scheduler.log" 2>&1 < /dev/null &
  echo $! > "$DIR/kube-scheduler.pid"
  sleep 1
  pid_alive "$DIR/kube-scheduler.pid" || { tail -20 "$DIR/kube-scheduler.log" >&2; die "kube-scheduler exited"; }
  log "kube-scheduler running (log: $DIR/kube-scheduler.log)"
}

# kube-proxy (iptables mode) for a control plane with a pod network: Service IPs work from Pods
# (10.0.0.1, the `kubernetes` Service, is how berth's Pods find the API server) and from this
# machine (the API server calls a webhook at its Service). One runs on the host for all the
# control plane's nodes, which share its network stack. Its rules are global to the machine: one
# control plane with a pod network at a time (ctest RESOURCE_LOCK pod-network); stop-all removes
# them (kube-proxy --cleanup).
kube_proxy() {
  "$HERE/build-kube.sh" kube-proxy
  pid_alive "$DIR/kube-proxy.pid" && return 0
  local node
  node=$(kubectl_cp get nodes -o jsonpath='{.items[0].metadata.name}' 2>/dev/null || true)
  "$BIN/kube-proxy" --kubeconfig="$DIR/kubeconfig" --proxy-mode=iptables --hostname-override="${node:-berth-host}" \
    --cluster-cidr=10.200.0.0/13 --metrics-bind-address=127.0.0.1:"$(free_port)" \
    --healthz-bind-address=127.0.0.1:"$(free_port)" --conntrack-max-per-core=0 --iptables-localhost-nodeports=false \
    >>"$DIR/kube-proxy.log" 2>&1 < /dev/null &
  echo $! > "$DIR/kube-proxy.pid"
  for _ in $(seq 1 50); do
    iptables -t nat -S KUBE-SERVICES 2>/dev/null | grep -q 10.0.0.1/32 && break
    pid_alive "$DIR/kube-proxy.pid" || break
    sleep 0.2
  done
  pid_alive "$DIR/kube-proxy.pid" || { tail -20 "$DIR/kube-proxy.log" >&2; die "kube-proxy exited"; }
  log "kube-proxy running (log: $DIR/kube-proxy.log)"
}

stop_kube_proxy() {
  [ -f "$DIR/kube-proxy.pid" ] || return 0
  stop_pidfile "$DIR/kube-proxy.pid" 5
  "$BIN/kube-proxy" --cleanup >>"$DIR/kube-proxy.log" 2>&1 || true
  rm -f "$DIR/kube-proxy.pid"
}

# Imports an image archive (hack/build-image.sh) into every running node's containerd.
import_image() {  # TAR
  local lab n=0
  [ -f "$1" ] || die "import: no image archive $1"
  for lab in "$DIR"/nodes/*/; do
    [ -S "$lab/containerd.sock" ] || continue
    "$TOOLS/ctr" -a "$lab/containerd.sock" -n k8s.io images import --all-platforms "$1" >/dev/null \
      || die "import: containerd of $(basename "$lab") refused $1"
    n=$((n + 1))
  done
  log "imported $(basename "$1") into $n nodes"
}

stop_all() {
  local lab
  for lab in "$DIR"/nodes/*/; do
    [ -d "$lab" ] || continue
    NAME=$(basename "$lab") stop_node
  done
  [ -d "$DIR/hollow" ] && stop_hollow_dirs "$DIR"/hollow/*/
  stop_pidfile "$DIR/controller-manager.pid" 5
  stop_pidfile "$DIR/kube-scheduler.pid" 5
  stop_pidfile "$DIR/jobset.pid" 5
  stop_pidfile "$DIR/trainer.pid" 5
  stop_kube_proxy
}

CMD="${1:-}"; shift || true
abs() { mkdir -p "$1" && (cd "$1" && pwd); }
case "$CMD" in
  prepare) prepare ;;
  images) echo "$BUSYBOX_IMAGE"; echo "$PAUSE_IMAGE" ;;
  start) DIR=$(abs "$1"); NAME=$2; shift 2; start_node "$@" ;;
  stop) DIR=$(abs "$1"); NAME=$2; stop_node ;;
  stop-kubelet) DIR=$(abs "$1"); NAME=$2; stop_kubelet ;;
  start-kubelet) DIR=$(abs "$1"); NAME=$2; start_kubelet ;;
  dra) DIR=$(abs "$1"); NAME=$2; start_dra "$3" ;;
  stop-dra) DIR=$(abs "$1"); NAME=$2; stop_pidfile "$DIR/nodes/$NAME/dra-plugin.pid" 10; log "DRA plugin of $NAME stopped" ;;
  hollow) DIR=$(abs "$1"); shift; hollow "$@" ;;
  stop-hollow) DIR=$(abs "$1"); stop_hollow "$2" ;;
  controller-manager) DIR=$(abs "$1"); shift; controller_manager "$@" ;;
  kube-proxy) DIR=$(abs "$1"); kube_proxy ;;
  jobset) DIR=$(abs "$1"); jobset_controller ;;
  trainer) DIR=$(abs "$1"); trainer_controller ;;
  import) DIR=$(abs "$1"); import_image "$2" ;;
  stop-all) DIR=$(abs "$1"); stop_all ;;
  _node-main) DIR=$(abs "$1"); NAME=$2; node_main ;;
  _run-kubelet) DIR=$(abs "$1"); NAME=$2; run_kubelet ;;
  *) sed -n '2,43p' "$0" >&2; exit 2 ;;
esac
