#!/usr/bin/env bash
# A real local Kubernetes control plane (etcd + kube-apiserver v1.37; BERTH_KUBE_VERSION=1.35 for the
# oldest supported) for tests and the demo, built by hack/build-kube.sh from the Go module proxy.
#
#   hack/control-plane.sh start [DIR]            start etcd and kube-apiserver; DIR holds everything
#   hack/control-plane.sh stop [DIR]             stop what start started (by PID)
#   hack/control-plane.sh env [DIR]              print `export KUBECONFIG=...`
#   hack/control-plane.sh stop-apiserver [DIR]   stop only kube-apiserver (tests: API outage)
#   hack/control-plane.sh start-apiserver [DIR]  start kube-apiserver again on the same port
#   hack/control-plane.sh stop-etcd [DIR]        stop only etcd (tests: storage outage)
#   hack/control-plane.sh start-etcd [DIR]       start etcd again on its ports with its data
#   hack/control-plane.sh compact [DIR]          compact etcd at its current revision
#
# BERTH_AUDIT=1 at start: kube-apiserver writes an audit log of every write to DIR/audit.log
# (JSON lines with user, user agent, verb, object and response code; the body too for writes of
# Pods, their bindings and Run statuses).
# BERTH_POD_NETWORK=1 at start: a control plane that Pods can use the way Pods of a cluster do
# (berth installed by Helm runs in it, docs/development.md#berth-in-the-local-cluster): the API
# server also listens on this machine's address (DIR/pod-network holds it; its serving certificate
# names it, 127.0.0.1 and the `kubernetes` Service's 10.0.0.1 and DNS names) and advertises it as
# the `kubernetes` Service's endpoint, and the ServiceAccount admission plugin gives Pods their
# service account token. hack/real-nodes.sh then routes Pods (CNI gateway) and runs kube-proxy
# and the kube-controller-manager controllers a Deployment needs.
# DIR defaults to $BERTH_CONTROL_PLANE_DIR or ./.local/control-plane. The admin kubeconfig is
# DIR/kubeconfig (TLS verified against the API server's own CA). Ports are free loopback ports.
# DIR/client.crt + client.key authenticate as a cluster admin by mutual TLS (for client tests).
# kube-apiserver is an aggregator (issue 44: berth's queue API is an APIService): a front-proxy CA
# (DIR/front-proxy-ca.crt, published in kube-system/extension-apiserver-authentication) signs the
# proxy client certificate it presents to aggregated API servers (CN front-proxy-client, the only
# allowed name), with the identity in X-Remote-User/-Group/-Extra-*. Without a pod network it
# routes to an APIService's endpoints, not its Service IP (--enable-aggregator-routing: nothing
# routes Service IPs then), so a controller on this machine serves it at DIR/host-ip (this
# machine's non-loopback address: endpoints may not be loopback).
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
CMD="${1:-}"; shift || true
DIR="${1:-${BERTH_CONTROL_PLANE_DIR:-$PWD/.local/control-plane}}"
CACHE="${BERTH_CACHE:-$HOME/.cache/berth}"
BIN="$("$HERE/build-kube.sh" --bin)"
ETCD="$CACHE/tools/bin/etcd"

log() { echo "control-plane: $*" >&2; }

# shellcheck source=hack/lib.sh
source "$HERE/lib.sh"

wait_ready() {
  local port; port=$(cat "$DIR/apiserver.port")
  for _ in $(seq 1 240); do
    if ! pid_alive "$DIR/apiserver.pid"; then
      log "kube-apiserver exited; last lines of $DIR/apiserver.log:"; tail -20 "$DIR/apiserver.log" >&2; return 1
    fi
    if [ "$(curl -s --cacert "$DIR/certs/apiserver.crt" -H "Authorization: Bearer $(cat "$DIR/admin.token")" \
            "https://127.0.0.1:$port/readyz" 2>/dev/null)" = "ok" ]; then
      return 0
    fi
    sleep 0.5
  done
  log "kube-apiserver not ready after 120 s"; return 1
}

start_etcd() {
  # Free ports are picked before binding: another control plane starting at the same moment can
  # take one first, so a "bind: address already in use" is retried with new ports.
  local port peer
  for attempt in 1 2 3 4 5; do
    port=$(free_port); peer=$(free_port)
    echo "$port" > "$DIR/etcd.port"; echo "$peer" > "$DIR/etcd.peer-port"
    rm -f "$DIR/etcd.log"
    run_etcd "$port" "$peer"
    if wait_etcd "$port"; then return 0; fi
    if grep -q "address already in use" "$DIR/etcd.log"; then
      stop_pidfile "$DIR/etcd.pid"; rm -rf "$DIR/etcd-data"
      log "etcd port taken meanwhile; retrying with other ports ($attempt)"
      continue
    fi
    log "etcd did not become healthy:"; tail -20 "$DIR/etcd.log" >&2; return 1
  done
  log "etcd could not get free ports"; return 1
}

run_etcd() {
  local port=$1 peer=$2
  "$ETCD" --name berth-test --data-dir "$DIR/etcd-data" \
    --listen-client-urls "http://127.0.0.1:$port" --advertise-client-urls "http://127.0.0.1:$port" \
    --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
    --initial-cluster "berth-test=http://127.0.0.1:$peer" \
    --quota-backend-bytes 4294967296 --unsafe-no-fsync \
    >>"$DIR/etcd.log" 2>&1 &
  echo $! > "$DIR/etcd.pid"
}

wait_etcd() {
  for _ in $(seq 1 100); do
    grep -q true <<<"$(curl -s "http://127.0.0.1:$1/health" 2>/dev/null)" && return 0
    pid_alive "$DIR/etcd.pid" || return 1
    sleep 0.2
  done
  return 1
}

# etcd again on its old ports with its data (kube-apiserver keeps pointing at it).
restart_etcd() {
  local port peer; port=$(cat "$DIR/etcd.port"); peer=$(cat "$DIR/etcd.peer-port")
  for _ in $(seq 1 50); do port_free "$port" && break; sleep 0.2; done
  run_etcd "$port" "$peer"
  wait_etcd "$port" || { log "etcd did not come back:"; tail -20 "$DIR/etcd.log" >&2; return 1; }
}

start_apiserver() {
  local port; port=$(cat "$DIR/apiserver.port" 2>/dev/null || true)
  local audit=()
  if [ -f "$DIR/audit-policy.yaml" ]; then
    audit=(--audit-policy-file="$DIR/audit-policy.yaml" --audit-log-path="$DIR/audit.log" --audit-log-format=json
           --audit-log-mode=blocking)
  fi
  # Loopback only, without service account tokens in Pods; or, with a pod network, also this
  # machine's address (the Pods' way in), advertised, and with the ServiceAccount plugin.
  local network=(--bind-address=127.0.0.1 --disable-admission-plugins=ServiceAccount --enable-aggregator-routing=true)
  if [ -f "$DIR/pod-network" ]; then
    network=(--bind-address=0.0.0.0 --advertise-address="$(cat "$DIR/pod-network")")
  fi
  local aggregator=()
  if [ -f "$DIR/front-proxy-ca.crt" ]; then
    aggregator=(--requestheader-client-ca-file="$DIR/front-proxy-ca.crt" --requestheader-allowed-names=front-proxy-client
                --requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group
                --requestheader-extra-headers-prefix=X-Remote-Extra-
                --proxy-client-cert-file="$DIR/front-proxy-client.crt" --proxy-client-key-file="$DIR/front-proxy-client.key")
  fi
  for attempt in 1 2 3 4 5; do
    if [ -z "$port" ] || ! port_free "$port"; then port=$(free_port); echo "$port" > "$DIR/apiserver.port"; fi
    "$BIN/kube-apiserver" \
      --etcd-servers="http://127.0.0.1:$(cat "$DIR/etcd.port")" \
      "${network[@]}" --secure-port="$port" --cert-dir="$DIR/certs" \
      --token-auth-file="$DIR/tokens.csv" --client-ca-file="$DIR/client-ca.crt" --authorization-mode=RBAC \
      --service-account-key-file="$DIR/sa.pub" --service-account-signing-key-file="$DIR/sa.key" \
      --service-account-issuer=https://kubernetes.default.svc --api-audiences=https://kubernetes.default.svc \
      --service-cluster-ip-range=10.0.0.0/24 \
      --allow-privileged=false --watch-cache=true --max-requests-inflight=2000 --max-mutating-requests-inflight=1000 \
      --enable-priority-and-fairness=false --kubelet-preferred-address-types=InternalIP,Hostname \
      --kubelet-client-certificate="$DIR/client.crt" --kubelet-client-key="$DIR/client.key" "${audit[@]}" \
      "${aggregator[@]}" \
      >>"$DIR/apiserver.log" 2>&1 &
    echo $! > "$DIR/apiserver.pid"
    if wait_ready; then return 0; fi
    if grep -q "address already in use" <<<"$(tail -50 "$DIR/apiserver.log")"; then
      stop_pidfile "$DIR/apiserver.pid"
      log "kube-apiserver port $port taken meanwhile; retrying with another ($attempt)"
      port=""
      continue
    fi
    return 1
  done
  return 1
}

write_kubeconfig() {
  local port; port=$(cat "$DIR/apiserver.port")
  cat > "$DIR/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: berth-local
  cluster:
    server: https://127.0.0.1:$port
    certificate-authority: $DIR/certs/apiserver.crt
users:
- name: admin
  user:
    token: $(cat "$DIR/admin.token")
contexts:
- name: berth-local
  context: {cluster: berth-local, user: admin, namespace: default}
current-context: berth-local
KC
}

do_stop() {
  stop_pidfile "$DIR/apiserver.pid"
  stop_pidfile "$DIR/etcd.pid"
}

case "$CMD" in
  start)
    "$HERE/deps.sh"
    "$HERE/build-kube.sh" kube-apiserver etcd kubectl
    if pid_alive "$DIR/apiserver.pid" && pid_alive "$DIR/etcd.pid"; then
      log "already running in $DIR"; write_kubeconfig; echo "export KUBECONFIG=$DIR/kubeconfig"; exit 0
    fi
    do_stop
    rm -rf "$DIR"; mkdir -p "$DIR/certs"
    trap 'log "start failed or interrupted; stopping"; do_stop; exit 1' ERR INT TERM
    openssl rand -hex 24 > "$DIR/admin.token"
    echo "$(cat "$DIR/admin.token"),admin,admin,system:masters" > "$DIR/tokens.csv"
    # Two users without any group: tests grant them what they need with RBAC (dashboard test).
    openssl rand -hex 24 > "$DIR/editor.token"
    openssl rand -hex 24 > "$DIR/viewer.token"
    echo "$(cat "$DIR/editor.token"),editor,editor" >> "$DIR/tokens.csv"
    echo "$(cat "$DIR/viewer.token"),viewer,viewer" >> "$DIR/tokens.csv"
    # A client CA and one client certificate (user cert-admin in system:masters) for mutual TLS.
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$DIR/client-ca.key" -out "$DIR/client-ca.crt" \
      -days 3650 -subj "/CN=berth-local-client-ca" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -keyout "$DIR/client.key" -out "$DIR/client.csr" \
      -subj "/O=system:masters/CN=cert-admin" 2>/dev/null
    openssl x509 -req -in "$DIR/client.csr" -CA "$DIR/client-ca.crt" -CAkey "$DIR/client-ca.key" \
      -CAcreateserial -out "$DIR/client.crt" -days 3650 2>/dev/null
    # The front proxy: a CA of its own (not the client CA: a proxy certificate must not
    # authenticate as a user, nor a user's certificate as the proxy) and the proxy's certificate.
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$DIR/front-proxy-ca.key" -out "$DIR/front-proxy-ca.crt" \
      -days 3650 -subj "/CN=berth-local-front-proxy-ca" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -keyout "$DIR/front-proxy-client.key" -out "$DIR/front-proxy-client.csr" \
      -subj "/CN=front-proxy-client" 2>/dev/null
    printf 'extendedKeyUsage=clientAuth\n' > "$DIR/front-proxy-client.ext"
    openssl x509 -req -in "$DIR/front-proxy-client.csr" -CA "$DIR/front-proxy-ca.crt" -CAkey "$DIR/front-proxy-ca.key" \
      -CAcreateserial -out "$DIR/front-proxy-client.crt" -days 3650 -extfile "$DIR/front-proxy-client.ext" 2>/dev/null
    # This machine's non-loopback address (its default route's source), where a controller run on
    # this machine serves an APIService's endpoint; empty when it has none.
    ip -4 route get 1.1.1.1 2>/dev/null | awk '{ for (i = 1; i < NF; i++) if ($i == "src") print $(i + 1) }' \
      > "$DIR/host-ip" || true
    openssl genrsa -out "$DIR/sa.key" 2048 2>/dev/null
    openssl rsa -in "$DIR/sa.key" -pubout -out "$DIR/sa.pub" 2>/dev/null
    if [ "${BERTH_AUDIT:-0}" = 1 ]; then
      # Every write (not reads, not events) at Metadata level: who wrote what, when, with what result.
      cat > "$DIR/audit-policy.yaml" <<'AP'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  resources: [{group: "", resources: [events]}]
# With the request's body: Pod writes (creation, patches, bindings) and Run status writes, which
# say when a Pod was bound and when its run was placed (jobs_test's audit check, issue 45).
- level: Request
  verbs: [create, update, patch]
  resources: [{group: "", resources: [pods, pods/binding]}, {group: berth.dev, resources: [runs/status]}]
- level: Metadata
  verbs: [create, update, patch, delete, deletecollection]
- level: None
AP
    fi
    if [ "${BERTH_POD_NETWORK:-0}" = 1 ]; then
      # This machine's address on its default route: where Pods reach the API server.
      host_ip=$(ip -4 route get 1.1.1.1 2>/dev/null | awk '{ for (i = 1; i < NF; i++) if ($i == "src") print $(i + 1) }')
      [ -n "$host_ip" ] || { log "BERTH_POD_NETWORK=1: this machine has no IPv4 address on a default route"; exit 1; }
      echo "$host_ip" > "$DIR/pod-network"
      # The serving certificate kube-apiserver would make names only the advertised address: one
      # for every name Pods and this machine use (self-signed; the kubeconfigs trust it as the CA).
      openssl req -x509 -newkey rsa:2048 -nodes -keyout "$DIR/certs/apiserver.key" -out "$DIR/certs/apiserver.crt" \
        -days 3650 -subj "/CN=kube-apiserver" -addext "subjectAltName=IP:127.0.0.1,IP:$host_ip,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local" 2>/dev/null
    fi
    start_etcd
    start_apiserver
    write_kubeconfig
    trap - ERR INT TERM
    log "ready: https://127.0.0.1:$(cat "$DIR/apiserver.port") (logs in $DIR)"
    echo "export KUBECONFIG=$DIR/kubeconfig"
    ;;
  stop) do_stop ;;
  env) echo "export KUBECONFIG=$DIR/kubeconfig" ;;
  stop-apiserver) stop_pidfile "$DIR/apiserver.pid" ;;
  stop-etcd) stop_pidfile "$DIR/etcd.pid" ;;
  start-etcd) restart_etcd ;;
  start-apiserver)
    trap 'stop_pidfile "$DIR/apiserver.pid"; exit 1' ERR INT TERM
    start_apiserver ;;
  compact)
    port=$(cat "$DIR/etcd.port")
    rev=$(curl -s -X POST "http://127.0.0.1:$port/v3/kv/range" -d '{"key":"AA=="}' | jq -r .header.revision)
    curl -s -X POST "http://127.0.0.1:$port/v3/kv/compaction" -d "{\"revision\": \"$rev\", \"physical\": true}" >/dev/null
    echo "$rev" ;;
  *) sed -n '2,12p' "$0" >&2; exit 2 ;;
esac
