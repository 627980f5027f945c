#!/usr/bin/env bash
# Runs every fuzz target (fuzz/*_fuzz.cc) longer than the test suite does.
#   hack/fuzz.sh                 300 seconds per target
#   hack/fuzz.sh 3600            an hour per target
#   hack/fuzz.sh 600 quantity    only the named targets (run, fleet, node_pod, quantity, duration,
#                                line_splitter, http)
# Builds the clang tree with ASan + UBSan + libFuzzer (${BERTH_ASAN_BUILD_DIR:-build-asan}, shared
# with hack/test.sh). Inputs that find new coverage are kept in .local/fuzz-corpus/<target>/
# (not committed), so runs build on each other. A crashing input is saved as
# fuzz/regressions/<target>/crash-<sha1>: fix the bug, keep the file (renamed to say what it is),
# commit both; from then on every build replays it (ctest entry fuzz.<target>.replay, label unit).
# Exits non-zero when any target found a crash.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${BERTH_ASAN_BUILD_DIR:-$ROOT/build-asan}"
SECONDS_PER_TARGET="${1:-300}"
shift || true
TARGETS=("$@")
if [ "${#TARGETS[@]}" -eq 0 ]; then TARGETS=(run fleet node_pod quantity duration line_splitter http); fi

"$ROOT/hack/deps.sh"
# The same configuration as hack/sanitize-test.sh, so the two share one tree.
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
  -DBERTH_WERROR=ON -DBERTH_SANITIZE=ON -DBERTH_FUZZ=ON >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target fuzz_targets
# shellcheck source=hack/sanitizers/env.sh
source "$ROOT/hack/sanitizers/env.sh"

failed=()
summary=()
for t in "${TARGETS[@]}"; do
  work="$ROOT/.local/fuzz-corpus/$t"
  log="$ROOT/.local/fuzz-logs/$t.log"
  mkdir -p "$work" "$(dirname "$log")" "$ROOT/fuzz/regressions/$t"
  echo "hack/fuzz.sh: $t for ${SECONDS_PER_TARGET}s (log: $log)" >&2
  if "$BUILD/fuzz/fuzz_$t" -max_total_time="$SECONDS_PER_TARGET" -rss_limit_mb=2048 -timeout=10 \
      -print_final_stats=1 -artifact_prefix="$ROOT/fuzz/regressions/$t/" \
      "$work" "$ROOT/fuzz/corpus/$t" "$ROOT/fuzz/regressions/$t" >"$log" 2>&1; then
    result=ok
  else
    result="FAILED: $(grep -m1 -o "Test unit written to .*" "$log" || tail -n 1 "$log")"
    failed+=("$t")
  fi
  execs="$(grep -m1 '^stat::number_of_executed_units' "$log" | awk '{print $2}')"
  final="$(grep -E '(DONE|INITED|NEW|REDUCE|pulse) +cov:' "$log" | tail -n 1 | grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [^ ]+' || true)"
  summary+=("$(printf '%-14s execs: %-10s %s  %s' "$t" "${execs:-?}" "$final" "$result")")
done
printf '%s\n' "${summary[@]}"
if [ "${#failed[@]}" -gt 0 ]; then
  echo "hack/fuzz.sh: crashes in ${failed[*]}; inputs are in fuzz/regressions/<target>/, logs in .local/fuzz-logs/" >&2
  exit 1
fi
