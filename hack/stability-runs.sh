#!/usr/bin/env bash
# The integration suite N times in a row (default 3) from a clean clone of HEAD, each round with
# both cores loaded by stress-ng (issue 14's stability proof; docs/development.md records runs).
#   hack/stability-runs.sh [ROUNDS]
# Each round: a fresh `git clone` into a temporary directory, a fresh build through the shared
# compiler cache, then `hack/test.sh -L integration` beside `stress-ng --cpu $(nproc)`.
# Prints one line per round (passed/failed, ctest's summary, minutes) and exits non-zero when
# any round failed. Logs stay in $BERTH_STABILITY_DIR (default /tmp/berth-stability).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
ROUNDS="${1:-3}"
OUT="${BERTH_STABILITY_DIR:-/tmp/berth-stability}"
mkdir -p "$OUT"
command -v stress-ng >/dev/null || { sudo -n true 2>/dev/null && SUDO=sudo || SUDO=; DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq stress-ng >/dev/null; }

failed=0
for round in $(seq 1 "$ROUNDS"); do
  dir=$(mktemp -d /tmp/berth-stability-clone.XXXXXX)
  git clone -q "$ROOT" "$dir"
  commit=$(git -C "$dir" rev-parse --short HEAD)
  stress-ng --cpu "$(nproc)" --timeout 0 >/dev/null 2>&1 &
  stress=$!
  start=$(date +%s)
  log="$OUT/round-$round.log"
  if (cd "$dir" && BERTH_SANITIZE_STAGE=0 hack/test.sh -L integration) >"$log" 2>&1; then result=passed; else result=FAILED; failed=1; fi
  kill "$stress" 2>/dev/null || true; wait "$stress" 2>/dev/null || true
  minutes=$(( ($(date +%s) - start + 30) / 60 ))
  summary=$(grep -E "tests passed|tests failed" "$log" | tail -1 || true)
  echo "round $round of $ROUNDS ($commit, $(date -u +%FT%TZ)): $result — ${summary:-no ctest summary} — ${minutes} min beside stress-ng --cpu $(nproc)"
  grep -E "^\s+[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Subprocess aborted)\)" "$log" || true
  rm -rf "$dir"
done
exit "$failed"
