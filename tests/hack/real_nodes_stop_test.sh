#!/usr/bin/env bash
# `hack/real-nodes.sh stop` takes down what was left in the stopped node's mount namespace and
# nothing else, even when another node's namespace is made the moment the stopped node's holder is
# gone: the kernel gives a freed namespace's number to the next one made, and CI (2026-11-28) saw
# a starting node's holder SIGKILLed by a test beside it stopping its own nodes.
# Fake nodes: a holder process in its own mount namespace (as `real-nodes.sh start` makes one), no
# kubelet or containerd. Needs root (unshare -m), like the real nodes.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
SCRIPT="$HERE/../../hack/real-nodes.sh"
DIR=$(mktemp -d "${BERTH_TEST_TMP:-${TMPDIR:-/tmp}}/berth-stop-node-XXXXXX")
PIDS=()
cleanup() { kill -9 "${PIDS[@]}" 2>/dev/null || true; rm -rf "$DIR"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# shellcheck source=hack/lib.sh
source "$HERE/../../hack/lib.sh"   # node_ns

# A process in a new mount namespace, not a child of this shell (init reaps it at once when it
# dies, as it does a real node's holder started with setsid).
detached() { setsid bash -c '"$@" </dev/null >/dev/null 2>&1 & echo $!' _ "$@"; }
# Running (not a zombie waiting to be reaped: a zombie has no namespaces left).
alive() { [ -e "/proc/$1/ns/mnt" ]; }
wait_ns() {  # PID: until it runs in a namespace other than ours; fails when it is gone
  for _ in $(seq 1 200); do
    alive "$1" || return 1
    local ns; ns=$(node_ns "$1")
    [ -n "$ns" ] && [ "$ns" != "$(node_ns $$)" ] && return 0
    sleep 0.05
  done
  fail "process $1 never entered its own mount namespace"
}
fake_node() {  # NAME HOLDER_PID
  mkdir -p "$DIR/nodes/$1"
  echo "$2" > "$DIR/nodes/$1/holder.pid"
}

# 1. What a stopped node leaves in its namespace (a shim that outlived the holder) is killed.
holder=$(detached unshare -m bash -c 'setsid sleep 600 </dev/null >/dev/null 2>&1 & echo $! > "$1"; exec sleep 600' _ "$DIR/shim.pid")
PIDS+=("$holder"); wait_ns "$holder" || fail "the fake holder did not start"
for _ in $(seq 1 100); do [ -s "$DIR/shim.pid" ] && break; sleep 0.05; done
left=$(cat "$DIR/shim.pid" 2>/dev/null) || fail "the fake shim did not start"
PIDS+=("$left")
[ "$(node_ns "$left")" = "$(node_ns "$holder")" ] || fail "the fake shim is not in the holder's namespace"
fake_node leftover "$holder"
"$SCRIPT" stop "$DIR" leftover 2>/dev/null
for _ in $(seq 1 50); do alive "$left" || break; sleep 0.1; done
alive "$left" && fail "a process left in the stopped node's namespace ($left) is still running"
echo "ok: what the stopped node left in its namespace was killed"

# 2. Another node's namespace made the moment the holder exits (it gets the freed number unless
# the stop holds the namespace open) is left alone. Several rounds: the new namespace must be
# made before the stop's sweep, which a busy-waiting watcher does within microseconds.
for round in 1 2 3 4 5; do
  holder=$(detached unshare -m sleep 600)
  PIDS+=("$holder"); wait_ns "$holder" || fail "round $round: the fake holder did not start"
  other=$(detached bash -c 'h=$1; while [ -e "/proc/$h/ns/mnt" ] && [ "$SECONDS" -lt 60 ]; do :; done; exec unshare -m sleep 600' _ "$holder")
  PIDS+=("$other")
  fake_node "a$round" "$holder"
  "$SCRIPT" stop "$DIR" "a$round" 2>/dev/null
  alive "$holder" && fail "round $round: the stopped node's holder is still running"
  wait_ns "$other" && sleep 0.3
  alive "$other" || fail "round $round: stopping node a$round killed another node's process ($other)"
  kill -9 "$other" 2>/dev/null || true
done
echo "ok: stopping a node never killed another node's processes (5 rounds)"
