#!/usr/bin/env bash
# Renders a Helm chart like `helm template RELEASE CHART_DIR -n NAMESPACE --include-crds`, for
# machines where helm cannot be installed (this one). The renderer (hack/chart-renderer/main.go)
# is Go text/template + sprig + sigs.k8s.io/yaml + gojsonschema from Debian's packages plus Helm's
# engine functions; it is built offline once and cached under ~/.cache/berth/chart-renderer/.
#   hack/render-chart.sh CHART_DIR RELEASE NAMESPACE [--set k=v ...] [--set-string k=v ...]
#                        [-f values.yaml ...] [--api-versions G/V ...] [--kube-version V] [--skip-crds]
#                        [--is-upgrade] [--lookup-objects FILE ...] [--notes-only]
# Output: multi-document YAML on stdout, CRDs first (or the rendered NOTES.txt with --notes-only).
# Errors (values refused by values.schema.json, `required`, `fail`) go to stderr with a non-zero
# exit. --is-upgrade and --lookup-objects (objects `lookup` finds, e.g. a previous render) play
# what `helm upgrade` sees of the cluster.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SRC="$ROOT/hack/chart-renderer/main.go"

if [ "$#" -lt 3 ]; then
  echo "usage: $0 CHART_DIR RELEASE NAMESPACE [--set k=v ...] [-f values.yaml ...]" >&2
  exit 2
fi

CACHE="${BERTH_CACHE:-$HOME/.cache/berth}/chart-renderer"
# The cache key covers the source and the Go toolchain, so an edit or an upgrade rebuilds.
if ! command -v go >/dev/null 2>&1 || [ ! -d /usr/share/gocode/src/github.com/Masterminds/sprig ] \
   || [ ! -d /usr/share/gocode/src/sigs.k8s.io/yaml ] \
   || [ ! -d /usr/share/gocode/src/github.com/xeipuuv/gojsonschema ]; then
  "$ROOT/hack/deps.sh"
fi
key=$( (cat "$SRC"; go version) | sha256sum | cut -c1-16)
BIN="$CACHE/bin/chart-renderer-$key"

if [ ! -x "$BIN" ]; then
  mkdir -p "$CACHE/bin"
  exec 9>"$CACHE/build.lock"
  flock 9
  if [ ! -x "$BIN" ]; then
    # GOPATH mode against Debian's /usr/share/gocode (no module downloads are possible here).
    # Debian installs sprig and semver v3 without their /v3 directory: link them in a private
    # GOPATH that comes first.
    gp="$CACHE/gopath"
    rm -rf "$gp"
    mkdir -p "$gp/src/github.com/Masterminds/sprig" "$gp/src/github.com/Masterminds/semver" "$gp/src/berth.dev/chart-renderer"
    ln -s /usr/share/gocode/src/github.com/Masterminds/sprig "$gp/src/github.com/Masterminds/sprig/v3"
    ln -s /usr/share/gocode/src/github.com/Masterminds/semver "$gp/src/github.com/Masterminds/semver/v3"
    cp "$SRC" "$gp/src/berth.dev/chart-renderer/main.go"
    mkdir -p "$CACHE/home" "$CACHE/gocache"
    (cd "$gp/src/berth.dev/chart-renderer" &&
      HOME="$CACHE/home" GO111MODULE=off GOPATH="$gp:/usr/share/gocode" GOCACHE="$CACHE/gocache" \
      GOFLAGS='' GOPROXY=off CGO_ENABLED=0 go build -o "$BIN.tmp" .)
    mv "$BIN.tmp" "$BIN"
  fi
  flock -u 9
fi

exec "$BIN" "$@"
