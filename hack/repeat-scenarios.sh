#!/usr/bin/env bash
# The in-process engine scenarios (tests/unit/reconcilers/engine_inprocess_test.cc) N times in a
# row (default 200), stopping at the first failure. They step the engine's passes on a fake clock
# and wait on events only, so a loaded machine may make them slower, never change their outcome:
# run this beside `stress-ng --cpu $(nproc)` to show it (docs/development.md, "Stepping the engine").
#   hack/repeat-scenarios.sh [N] [GTEST_FILTER]     (default filter: EngineInProcess.*:EngineLoop.*:EngineLoopTest.*)
# Uses the unit_reconcilers binary of $BERTH_BUILD_DIR (default build/); builds it first.
# The same as a ctest: `ctest -L repeat` (200 times).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${BERTH_BUILD_DIR:-$ROOT/build}"
N="${1:-200}"
FILTER="${2:-EngineInProcess.*:EngineLoop.*:EngineLoopTest.*}"
cmake --build "$BUILD" --target unit_reconcilers >/dev/null
start=$(date +%s)
log=$(mktemp /tmp/berth-repeat.XXXXXX)
if "$BUILD/tests/unit_reconcilers" --gtest_filter="$FILTER" --gtest_repeat="$N" --gtest_break_on_failure >"$log" 2>&1; then
  result=passed
else
  result=FAILED
fi
passed=$(grep -c '^\[  PASSED  \]' "$log" || true)
echo "$result: $passed of $N repetitions of $FILTER passed in $(( $(date +%s) - start )) s (load average $(cut -d' ' -f1-3 /proc/loadavg))"
if [ "$result" = FAILED ]; then
  grep -E -B2 -A8 'Failure|\[  FAILED  \]' "$log" | head -80
  echo "full log: $log"
  exit 1
fi
rm -f "$log"
