#!/usr/bin/env bash
# Builds berth's container image without a Docker engine, from what the Dockerfile says:
#   - the build stage: berth-controller and kubectl-berth built Release with -DBERTH_WERROR=ON and
#     installed stripped into /usr/local/bin (tree: $BERTH_IMAGE_BUILD_DIR, default build-image/);
#   - the runtime stage: the Debian 12 packages its `apt-get install` names, with everything apt
#     would pull in for them (Depends/PreDepends, recursively, as hack/check-image-libs.sh reads
#     them), downloaded from this machine's Debian 12 archive and unpacked; the user and group
#     65532 "berth" its `useradd` makes; its USER and ENTRYPOINT.
# The result is an OCI image archive (hack/mkimage.py) for `ctr images import`, named like the
# chart's default image (berth:<appVersion>, i.e. docker.io/library/berth:<appVersion>), cached in
# ~/.cache/berth/images/berth-<appVersion>-<hash>.tar by the hash of the binaries and packages.
# What debian:12-slim has besides (a shell, coreutils, apt) is not in it: berth needs none of it.
#   hack/build-image.sh            build (or reuse) the image; prints the archive's path
#   hack/build-image.sh --name     print the image's name only
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CACHE="${BERTH_CACHE:-$HOME/.cache/berth}"
BUILD="${BERTH_IMAGE_BUILD_DIR:-$ROOT/build-image}"
APP_VERSION=$(awk -F'"' '/^appVersion:/ { print $2 }' "$ROOT/deploy/helm/berth/Chart.yaml")
NAME="docker.io/library/berth:$APP_VERSION"
log() { echo "build-image: $*" >&2; }

if [ "${1:-}" = --name ]; then echo "$NAME"; exit 0; fi

# The runtime stage's packages, parsed as hack/check-image-libs.sh parses them (one per word).
runtime_packages() {
  awk 'toupper($1) == "FROM" { n++ } { lines[n] = lines[n] $0 "\n" } END { printf "%s", lines[n] }' \
      <(sed -e ':a' -e '/\\$/N; s/\\\n//; ta' "$ROOT/Dockerfile") |
    awk 'toupper($1) == "RUN" { $1 = ""; print }' |
    sed -e 's/&&/\n/g' -e 's/;/\n/g' |
    awk '{ for (i = 1; i <= NF; i++) if ($i == "apt-get" || $i == "apt") {
             for (j = i + 1; j <= NF; j++) if ($j == "install") break
             if (j > NF) next
             for (k = j + 1; k <= NF; k++) if ($k !~ /^-/) print $k
             next } }' | sort -u
}
mapfile -t wanted < <(runtime_packages)
[ "${#wanted[@]}" -gt 0 ] || { log "the Dockerfile's runtime stage installs no packages"; exit 1; }
# Everything apt installs for them (real packages only: virtual ones are shown as <name>).
mapfile -t packages < <(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
                          --no-replaces --no-enhances "${wanted[@]}" | grep -v '^ ' | grep -v '^<' | sort -u)

# The build stage.
export CCACHE_DIR="${CCACHE_DIR:-$CACHE/ccache}" CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=1
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBERTH_WERROR=ON \
  -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache >/dev/null
cmake --build "$BUILD" --target berth-controller kubectl-berth >&2

# The packages' files, downloaded once (apt-get download needs no root).
DEBS="$CACHE/debs"
mkdir -p "$DEBS"
missing=()
for p in "${packages[@]}"; do
  compgen -G "$DEBS/${p}_*.deb" >/dev/null || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  log "downloading ${#missing[@]} Debian packages: ${missing[*]}"
  (cd "$DEBS" && apt-get download "${missing[@]}" >&2)
fi
debs=()
for p in "${packages[@]}"; do debs+=("$(ls "$DEBS/${p}"_*.deb | sort -V | tail -n1)"); done

hash=$( { sha256sum "$BUILD/src/controller/berth-controller" "$BUILD/src/cli/kubectl-berth" "${debs[@]}" \
            "$ROOT/hack/mkimage.py" "$0" | cut -d' ' -f1; } | sha256sum | cut -c1-16)
out="$CACHE/images/berth-$APP_VERSION-$hash.tar"
if [ -f "$out" ]; then echo "$out"; exit 0; fi

t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
rootfs="$t/rootfs"
mkdir -p "$rootfs"/{etc,tmp,usr/local/bin}
chmod 1777 "$rootfs/tmp"
for d in "${debs[@]}"; do dpkg-deb -x "$d" "$rootfs"; done
# Debian 12 is merged-/usr: /lib, /lib64, /bin, /sbin are links into /usr (base-files makes them).
for l in bin sbin lib lib64; do
  if [ -d "$rootfs/$l" ] && [ ! -L "$rootfs/$l" ]; then
    mkdir -p "$rootfs/usr/$l"; cp -a "$rootfs/$l/." "$rootfs/usr/$l/"; rm -rf "${rootfs:?}/$l"
  fi
  [ -e "$rootfs/$l" ] || ln -s "usr/$l" "$rootfs/$l"
done
rm -rf "$rootfs/usr/share/doc" "$rootfs/usr/share/man" "$rootfs/usr/share/lintian"
# groupadd --gid 65532 berth && useradd --uid 65532 --gid 65532 --home-dir /nonexistent ...
printf 'root:x:0:0:root:/root:/usr/sbin/nologin\nberth:x:65532:65532::/nonexistent:/usr/sbin/nologin\n' > "$rootfs/etc/passwd"
printf 'root:x:0:\nberth:x:65532:\n' > "$rootfs/etc/group"
install -m 0755 -s "$BUILD/src/controller/berth-controller" "$rootfs/usr/local/bin/berth-controller"
install -m 0755 -s "$BUILD/src/cli/kubectl-berth" "$rootfs/usr/local/bin/kubectl-berth"
# The binary starts in the image: every library it loads is there (the loader is the image's own).
if ! chroot "$rootfs" /usr/local/bin/berth-controller --help >/dev/null 2>"$t/help.err"; then
  log "berth-controller does not start in the image's root: $(head -n 3 "$t/help.err")"
  exit 1
fi
python3 "$ROOT/hack/mkimage.py" "$t/image.tar" "$NAME" "$rootfs" '["/usr/local/bin/berth-controller"]' '[]' \
  '65532:65532' >/dev/null
mkdir -p "$CACHE/images"
mv "$t/image.tar" "$out"
log "$NAME: $out ($(du -h "$out" | cut -f1), ${#packages[@]} Debian packages)"
echo "$out"
