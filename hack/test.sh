#!/usr/bin/env bash
# Runs every test: unit tests and integration tests against a real etcd + kube-apiserver.
# Installs what it needs (Debian packages; kube-apiserver built once into ~/.cache/berth).
#   hack/test.sh                 everything
#   hack/test.sh -L unit         only unit tests (any ctest arguments are passed on)
# Then, when no ctest arguments were given (the CI run) or BERTH_SANITIZE_STAGE=1: a second tree
# built with clang, ASan + UBSan and libFuzzer (${BUILD}-asan) runs the unit tests again and each
# fuzz target for a short time (ctest -L 'unit|fuzz'). BERTH_SANITIZE_STAGE=0 skips it.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${BERTH_BUILD_DIR:-$ROOT/build}"

"$ROOT/hack/deps.sh"
"$ROOT/hack/build-kube.sh" kube-apiserver

cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBERTH_WERROR=ON >/dev/null
cmake --build "$BUILD" -j "$(nproc)"

export BERTH_TEST_TMP="${BERTH_TEST_TMP:-$(mktemp -d /tmp/berth-test.XXXXXX)}"
(cd "$BUILD" && ctest --output-on-failure -j "$(nproc)" --timeout 900 "$@")

if [ "${BERTH_SANITIZE_STAGE:-$([ "$#" -eq 0 ] && echo 1 || echo 0)}" = 1 ]; then
  ASAN_BUILD="${BERTH_ASAN_BUILD_DIR:-${BUILD}-asan}"
  echo "hack/test.sh: unit tests under ASan + UBSan and short fuzz runs ($ASAN_BUILD)" >&2
  cmake -S "$ROOT" -B "$ASAN_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
    -DBERTH_WERROR=ON -DBERTH_SANITIZE=ON -DBERTH_FUZZ=ON >/dev/null
  # Only what the unit and fuzz tests run: no integration tests, benchmarks or binaries.
  cmake --build "$ASAN_BUILD" -j "$(nproc)" --target unit_tests fuzz_targets
  # shellcheck source=hack/sanitizers/env.sh
  source "$ROOT/hack/sanitizers/env.sh"
  (cd "$ASAN_BUILD" && ctest --output-on-failure -j "$(nproc)" --timeout 900 -L 'unit|fuzz')
fi
