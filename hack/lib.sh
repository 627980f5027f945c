# Shell helpers shared by hack/control-plane.sh and hack/real-nodes.sh (sourced; each defines log).

# A TCP port on 127.0.0.1 that nothing listens on right now.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# Below the kernel's ephemeral range (32768 and up by default), so that no outgoing connection
# takes the port between this check and the listener's bind.
free_port() {
  local p top=32767 lo
  lo=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
  [ "$lo" -gt 21000 ] 2>/dev/null && top=$((lo - 1))
  for _ in $(seq 1 200); do
    p=$(( (RANDOM % (top - 20000 + 1)) + 20000 ))
    if port_free "$p"; then echo "$p"; return 0; fi
  done
  log "no free port found"; return 1
}

pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# SIGTERM, then SIGKILL after `seconds` (default 10).
stop_pid() {  # pid [seconds]
  local pid=$1 wait=${2:-10}
  kill -0 "$pid" 2>/dev/null || return 0
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 $((wait * 10))); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
}
stop_pidfile() { [ -f "$1" ] || return 0; stop_pid "$(cat "$1")" "${2:-10}"; rm -f "$1"; }
