#!/usr/bin/env bash
# Builds Kubernetes v1.20.2 binaries (kube-apiserver by default) from Debian's own source package
# and caches them under ~/.cache/berth/kubernetes-1.20.2/bin. See docs/development.md.
#   hack/build-kube.sh [kube-apiserver] [kube-scheduler] [kube-controller-manager] [kubelet] [kubemark]
# Prints nothing and exits 0 when every requested binary is already cached.
set -euo pipefail

CACHE="${BERTH_CACHE:-$HOME/.cache/berth}"
OUT="$CACHE/kubernetes-1.20.2/bin"
WHAT=("$@")
[ "${#WHAT[@]}" -gt 0 ] || WHAT=(kube-apiserver)

need=()
for w in "${WHAT[@]}"; do [ -x "$OUT/$w" ] || need+=("$w"); done
[ "${#need[@]}" -gt 0 ] || exit 0

"$(dirname "$0")/deps.sh"
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"

SRC="$CACHE/kubernetes-src"
mkdir -p "$CACHE"
exec 9>"$CACHE/build.lock"
flock 9

if [ ! -f "$SRC/.berth-ready" ]; then
  mkdir -p "$CACHE"
  if ! ls /etc/apt/sources.list.d/berth-src.sources >/dev/null 2>&1; then
    sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \
      | $SUDO tee /etc/apt/sources.list.d/berth-src.sources >/dev/null
    $SUDO apt-get update -q
  fi
  dl="$CACHE/kubernetes-dl"
  rm -rf "$dl" "$SRC"; mkdir -p "$dl"
  (cd "$dl" && apt-get source --download-only kubernetes >/dev/null)
  tarball=$(ls "$dl"/kubernetes_*.orig.tar.gz | head -n1)
  mkdir -p "$SRC"
  tar -xzf "$tarball" -C "$SRC" --strip-components=1
  # The vendored reflect2 v1.0.1 crashes under go >= 1.18 (SIGSEGV in mapiterinit): use Debian's v1.0.2.
  rm -rf "$SRC/vendor/github.com/modern-go/reflect2"
  cp -r /usr/share/gocode/src/github.com/modern-go/reflect2 "$SRC/vendor/github.com/modern-go/reflect2"
  rm -f "$SRC/vendor/github.com/modern-go/reflect2/go.mod"
  rm -rf "$dl"
  touch "$SRC/.berth-ready"
fi

mkdir -p "$OUT" "$CACHE/gohome"
for w in "${need[@]}"; do
  [ -x "$OUT/$w" ] && continue
  echo "hack/build-kube.sh: building $w (first time only, several minutes)" >&2
  (cd "$SRC" && HOME="$CACHE/gohome" CGO_ENABLED=0 GOFLAGS=-mod=vendor \
      KUBE_STATIC_OVERRIDES="kubelet kubemark" make WHAT="cmd/$w" >"$CACHE/build-$w.log" 2>&1) \
    || { echo "hack/build-kube.sh: building $w failed, see $CACHE/build-$w.log" >&2; tail -20 "$CACHE/build-$w.log" >&2; exit 1; }
  cp "$SRC/_output/bin/$w" "$OUT/$w.tmp" && mv "$OUT/$w.tmp" "$OUT/$w"
done
