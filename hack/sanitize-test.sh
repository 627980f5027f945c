#!/usr/bin/env bash
# The sanitizer stage of hack/test.sh: builds a clang tree with ASan + UBSan + libFuzzer
# (${BERTH_ASAN_BUILD_DIR:-build-asan}) and runs the unit tests and a short run of every fuzz target
# in it (ctest -L 'unit|fuzz'; extra arguments go to ctest).
# -O1 with line tables only: symbolized stacks, a quicker build than -O2 -g; assertions stay on
# (no NDEBUG), so RapidJSON's and berth's asserts are checked too.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${BERTH_ASAN_BUILD_DIR:-$ROOT/build-asan}"

"$ROOT/hack/deps.sh"
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/berth/ccache}" CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=1
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
  -DBERTH_WERROR=ON -DBERTH_SANITIZE=ON -DBERTH_FUZZ=ON \
  -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache >/dev/null
# Only what the unit and fuzz tests run: no integration tests, benchmarks or binaries.
cmake --build "$BUILD" -j "$(nproc)" --target unit_tests fuzz_targets
# shellcheck source=hack/sanitizers/env.sh
source "$ROOT/hack/sanitizers/env.sh"
cd "$BUILD"
ctest --output-on-failure -j "$(nproc)" --timeout 900 -L 'unit|fuzz' "$@"
