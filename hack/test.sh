#!/usr/bin/env bash
# Runs every test: unit tests and integration tests against a real etcd + kube-apiserver.
# Installs what it needs (Debian packages; kube-apiserver built once into ~/.cache/berth).
#   hack/test.sh                 everything
#   hack/test.sh -L unit         only unit tests (any ctest arguments are passed on)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${BERTH_BUILD_DIR:-$ROOT/build}"

"$ROOT/hack/deps.sh"
"$ROOT/hack/build-kube.sh" kube-apiserver

cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBERTH_WERROR=ON >/dev/null
cmake --build "$BUILD" -j "$(nproc)"

export BERTH_TEST_TMP="${BERTH_TEST_TMP:-$(mktemp -d /tmp/berth-test.XXXXXX)}"
cd "$BUILD"
ctest --output-on-failure -j "$(nproc)" --timeout 900 "$@"
