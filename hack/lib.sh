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

# A pid file outlives its process, and the kernel hands its pid to a new process sooner or later
# (pid_max is 32768 on these machines; a test run starts hundreds of thousands of processes). So a
# pid is believed only while its process started no later than the file was written: a stale file
# naming someone else's process (another test's node, say) is never signalled.
pidfile_pid() {  # PIDFILE -> its pid, or nothing when that process is gone
  local f=$1 pid stat start btime tck mtime
  pid=$(cat "$f" 2>/dev/null) || return 0
  [[ "$pid" =~ ^[0-9]+$ ]] || return 0
  stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 0
  stat=${stat##*) }                         # past "pid (comm) ": field 3 (state) comes first
  start=$(cut -d' ' -f20 <<<"$stat")        # field 22: start time in clock ticks after boot
  btime=$(awk '$1 == "btime" {print $2}' /proc/stat)
  tck=$(getconf CLK_TCK)
  mtime=$(stat -c %Y "$f" 2>/dev/null) || return 0
  # Whole seconds on both sides (btime and mtime are truncated): 2 s of slack.
  [ $((btime + start / tck)) -le $((mtime + 2)) ] && echo "$pid"
  return 0
}
pid_alive() { [ -n "$(pidfile_pid "$1")" ]; }
# PID -> its mount namespace ("mnt:[4026532177]"), or nothing when it is gone (or a zombie).
node_ns() { readlink "/proc/$1/ns/mnt" 2>/dev/null || true; }

# SIGTERM, then SIGKILL after `seconds` (default 10).
stop_pid() {  # pid [seconds]
  local pid=$1 wait=${2:-10}
  kill -0 "$pid" 2>/dev/null || return 0
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 $((wait * 10))); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
}
stop_pidfile() {  # PIDFILE [seconds]: stops its process (if still that one), removes the file
  [ -f "$1" ] || return 0
  local pid
  pid=$(pidfile_pid "$1")
  [ -n "$pid" ] && stop_pid "$pid" "${2:-10}"
  rm -f "$1"
}
