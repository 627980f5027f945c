#!/usr/bin/env bash
# Checks the Dockerfile without a Docker engine:
#   - every shared library the built binaries load (ldd) comes, by `dpkg -S`, from a Debian
#     package that the runtime (last) stage installs, directly or as a dependency apt pulls in
#     (`apt-cache depends --recurse` over this machine's Debian 12 archive, the image's archive);
#   - every package the runtime stage names exists in that archive;
#   - the runtime stage is Debian 12, runs as a numeric non-root USER, and its ENTRYPOINT is
#     berth-controller, copied into the image at that path;
#   - the build stage installs the C++ build packages of hack/deps.sh and builds with CMake
#     (Release, -DBERTH_WERROR=ON).
#   hack/check-image-libs.sh [--dockerfile PATH] [BINARY ...]
# BINARY defaults to the build tree's berth-controller (and kubectl-berth when built).
# Exits 1 with one sentence per problem; prints what it checked on success.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DOCKERFILE="$ROOT/Dockerfile"
BINARIES=()
while [ "$#" -gt 0 ]; do
  case "$1" in
    --dockerfile) DOCKERFILE="$2"; shift 2 ;;
    --dockerfile=*) DOCKERFILE="${1#*=}"; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) BINARIES+=("$1"); shift ;;
  esac
done
if [ "${#BINARIES[@]}" -eq 0 ]; then
  BUILD="${BERTH_BUILD_DIR:-$ROOT/build}"
  BINARIES=("$BUILD/src/controller/berth-controller")
  [ -x "$BUILD/src/cli/kubectl-berth" ] && BINARIES+=("$BUILD/src/cli/kubectl-berth")
fi

problems=()
problem() { problems+=("$*"); }

[ -f "$DOCKERFILE" ] || { echo "check-image-libs: no Dockerfile at $DOCKERFILE" >&2; exit 2; }
# shellcheck disable=SC1091
. /etc/os-release
if [ "${ID:-}" != debian ] || [ "${VERSION_ID:-}" != 12 ]; then
  echo "check-image-libs: this machine is ${PRETTY_NAME:-unknown}, not Debian 12: its packages say nothing about a Debian 12 image" >&2
  exit 2
fi

# One Dockerfile instruction per line: continuation lines joined, comment lines dropped.
instructions() {
  awk '
    /^[[:space:]]*#/ { next }
    {
      line = $0; sub(/\r$/, "", line)
      if (match(line, /\\[[:space:]]*$/)) { cur = cur substr(line, 1, RSTART - 1) " "; next }
      cur = cur line
      if (cur ~ /[^[:space:]]/) print cur
      cur = ""
    }
    END { if (cur ~ /[^[:space:]]/) print cur }' "$DOCKERFILE"
}

# Instructions of stage N (1-based; "last" for the final stage), FROM line included.
stage() {
  instructions | awk -v want="$1" '
    toupper($1) == "FROM" { n++ }
    { lines[n] = lines[n] $0 "\n" }
    END { if (want == "last") want = n; printf "%s", lines[want] }'
}
stage_count() { instructions | awk 'toupper($1) == "FROM" { n++ } END { print n + 0 }'; }

# Packages named by `apt-get install` / `apt install` in RUN instructions on stdin.
apt_packages() {
  awk 'toupper($1) == "RUN" { $1 = ""; print }' |
    sed -e 's/&&/\n/g' -e 's/;/\n/g' -e 's/||/\n/g' |
    awk '{
      for (i = 1; i <= NF; i++) if (($i == "apt-get" || $i == "apt") ) {
        for (j = i + 1; j <= NF; j++) if ($j == "install") break
        if (j > NF) next
        for (k = j + 1; k <= NF; k++) if ($k !~ /^-/) { p = $k; sub(/[=:].*/, "", p); print p }
        next
      }
    }' | sort -u
}

nstages=$(stage_count)
runtime=$(stage last)
runtime_from=$(printf '%s' "$runtime" | awk 'toupper($1) == "FROM" { for (i = 2; i <= NF; i++) if ($i !~ /^--/) { print $i; exit } }')
case "$runtime_from" in
  debian:12*|debian:bookworm*|docker.io/debian:12*|docker.io/library/debian:12*|docker.io/library/debian:bookworm*) ;;
  *) problem "The runtime stage is FROM \"$runtime_from\", not Debian 12 (debian:12-slim), so the Debian 12 packages checked here would not match it." ;;
esac
mapfile -t runtime_pkgs < <(printf '%s' "$runtime" | apt_packages)
if [ "${#runtime_pkgs[@]}" -eq 0 ]; then
  problem "The runtime stage installs no packages with apt-get install, so none of the binary's libraries would be there."
fi
# One apt-cache call for all of them: a package the archive has shows a Candidate version.
declare -A available=()
if [ "${#runtime_pkgs[@]}" -gt 0 ]; then
  while read -r p; do available["$p"]=1; done < <(apt-cache policy "${runtime_pkgs[@]}" 2>/dev/null |
    awk '/^[^ ]/ { p = $1; sub(/:$/, "", p) } /^  Candidate:/ && $2 != "(none)" { print p }')
fi
for p in "${runtime_pkgs[@]}"; do
  [ -n "${available[$p]:-}" ] || problem "The runtime stage installs package $p, which Debian 12's archive does not have."
done

# Everything apt installs for the runtime list: the list plus its Depends/PreDepends, recursively.
declare -A provided=()
known_pkgs=()
for p in "${runtime_pkgs[@]}"; do [ -n "${available[$p]:-}" ] && known_pkgs+=("$p"); done
if [ "${#known_pkgs[@]}" -gt 0 ]; then
  while read -r p; do
    p="${p%%:*}"; p="${p#<}"; p="${p%>}"
    [ -n "$p" ] && provided["$p"]=1
  done < <(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
             --no-replaces --no-enhances "${known_pkgs[@]}" 2>/dev/null | grep -v '^ ' | sort -u)
fi

# The binaries' libraries, as "binary lib path" lines.
libs=()
for bin in "${BINARIES[@]}"; do
  if [ ! -x "$bin" ]; then
    problem "The binary $bin does not exist or is not executable (build it first)."
    continue
  fi
  if ! ldd_out=$(ldd "$bin" 2>&1); then
    problem "ldd cannot read $bin: $ldd_out"
    continue
  fi
  while read -r line; do
    if [[ "$line" =~ ^([^[:space:]]+)[[:space:]]+=\>[[:space:]]+not\ found ]]; then
      problem "$(basename "$bin") needs ${BASH_REMATCH[1]}, which ldd cannot find even on this machine."
    elif [[ "$line" =~ ^([^[:space:]]+)[[:space:]]+=\>[[:space:]]+(/[^[:space:]]+) ]]; then
      libs+=("$(basename "$bin") ${BASH_REMATCH[1]} ${BASH_REMATCH[2]}")
    elif [[ "$line" =~ ^(/[^[:space:]]+)[[:space:]]+\( ]]; then
      libs+=("$(basename "$bin") $(basename "${BASH_REMATCH[1]}") ${BASH_REMATCH[1]}")
    fi  # else linux-vdso.so.1 and friends, which live in the kernel
  done <<<"$ldd_out"
done

# Which package owns each library: one dpkg -S over the path as given, resolved, and across the
# /usr merge (dpkg records some libraries under /lib, most under /usr/lib).
candidates() {
  local path="$1"
  echo "$path"; readlink -f "$path"
  case "$path" in /usr/*) echo "${path#/usr}" ;; *) echo "/usr$path" ;; esac
}
declare -A owners_of=()
if [ "${#libs[@]}" -gt 0 ]; then
  mapfile -t cands < <(for l in "${libs[@]}"; do candidates "${l##* }"; done | sort -u)
  while IFS= read -r line; do
    [[ "$line" == diversion* ]] && continue
    file="${line##*: }"; pkgs="${line%%: /*}"
    owners_of["$file"]=$(echo "$pkgs" | tr ',' '\n' | sed -e 's/^ *//' -e 's/:.*//' | tr '\n' ' ')
  done < <(dpkg -S "${cands[@]}" 2>/dev/null || true)
fi

checked=()
for l in "${libs[@]}"; do
  read -r bin lib path <<<"$l"
  owners=""
  while read -r c; do
    [ -n "${owners_of[$c]:-}" ] && { owners="${owners_of[$c]}"; break; }
  done < <(candidates "$path")
  if [ -z "$owners" ]; then
    problem "$bin needs $lib ($path), which no Debian package provides, so the image cannot install it."
    continue
  fi
  ok=""
  for o in $owners; do [ -n "${provided[$o]:-}" ] && ok="$o"; done
  first="${owners%% *}"
  if [ -z "$ok" ]; then
    problem "$bin needs $lib from package $first, which the runtime stage of $(basename "$DOCKERFILE") does not install (add $first to its apt-get install list)."
  else
    checked+=("$bin: $lib <- $ok")
  fi
done

# Runs as a numeric, non-root user (Kubernetes' runAsNonRoot can only verify a numeric UID).
user=$(printf '%s' "$runtime" | awk 'toupper($1) == "USER" { u = $2 } END { print u }')
uid="${user%%:*}"
if [ -z "$user" ]; then
  problem "The runtime stage has no USER instruction, so the image runs as root."
elif ! [[ "$uid" =~ ^[0-9]+$ ]]; then
  problem "The runtime stage's USER is \"$user\": use a numeric UID (e.g. 65532:65532) so runAsNonRoot can verify it."
elif [ "$uid" -eq 0 ]; then
  problem "The runtime stage's USER is \"$user\", which is root."
fi

# ENTRYPOINT is berth-controller, in exec form, at a path the runtime stage copies it to.
entry=$(printf '%s' "$runtime" | awk 'toupper($1) == "ENTRYPOINT" { $1 = ""; e = $0 } END { print e }' | sed 's/^ *//')
entry_bin=""
if [[ "$entry" =~ ^\[[[:space:]]*\"([^\"]+)\" ]]; then
  entry_bin="${BASH_REMATCH[1]}"
fi
if [ -z "$entry" ]; then
  problem "The runtime stage has no ENTRYPOINT."
elif [ -z "$entry_bin" ]; then
  problem "The runtime stage's ENTRYPOINT $entry is not in exec form [\"/path/berth-controller\"]."
elif [ "$(basename "$entry_bin")" != berth-controller ]; then
  problem "The runtime stage's ENTRYPOINT runs $entry_bin, not berth-controller."
else
  copied=$(printf '%s' "$runtime" | awk -v want="$entry_bin" -v dir="$(dirname "$entry_bin")/" '
    toupper($1) == "COPY" || toupper($1) == "ADD" {
      dest = $NF
      if (dest == want || dest == dir || dest == dir ".") { print "yes"; exit }
    }')
  [ "$copied" = yes ] || problem "The runtime stage never copies anything to $entry_bin or $(dirname "$entry_bin")/, so its ENTRYPOINT would not exist."
fi

# The build stage: hack/deps.sh's C++ build packages, and CMake in Release with -DBERTH_WERROR=ON.
if [ "$nstages" -lt 2 ]; then
  problem "The Dockerfile has $nstages stage(s); it must build in one stage and run in a separate, smaller one."
else
  build_all=""
  for ((i = 1; i < nstages; i++)); do build_all+="$(stage "$i")"$'\n'; done
  mapfile -t build_pkgs < <(printf '%s' "$build_all" | apt_packages)
  # What hack/deps.sh installs for compiling: the toolchain and every C/C++ -dev package (the
  # rest, such as etcd, Go packages, clang's sanitizer runtimes and test tools, serves the local
  # control plane and tests).
  mapfile -t deps_pkgs < <(awk '/^PACKAGES=\(/ { on = 1; next } on && /^\)/ { on = 0 } on' "$ROOT/hack/deps.sh" | tr ' ' '\n' | grep -v '^$' || true)
  for p in "${deps_pkgs[@]}"; do
    case "$p" in
      golang-*) continue ;;
      libclang-rt-*) continue ;;  # sanitizer and libFuzzer runtimes: the test suite's clang stage only
      build-essential|cmake|ninja-build|pkg-config|*-dev) ;;
      *) continue ;;
    esac
    # Not `printf | grep -q`: under pipefail, grep leaving at the first match can kill printf
    # with SIGPIPE and make the pipeline fail (seen on a loaded machine).
    if ! grep -qx -- "$p" <<<"$(printf '%s\n' "${build_pkgs[@]}")"; then
      problem "The build stage does not install $p, which hack/deps.sh installs to build berth."
    fi
  done
  if ! grep -q 'cmake .*-DBERTH_WERROR=ON' <<<"$build_all"; then
    problem "The build stage does not configure CMake with -DBERTH_WERROR=ON."
  fi
  if ! grep -q 'cmake .*-DCMAKE_BUILD_TYPE=Release' <<<"$build_all"; then
    problem "The build stage does not configure CMake with -DCMAKE_BUILD_TYPE=Release."
  fi
fi

if [ "${#problems[@]}" -gt 0 ]; then
  echo "check-image-libs: $DOCKERFILE is not right:" >&2
  for p in "${problems[@]}"; do echo "  - $p" >&2; done
  exit 1
fi
echo "check-image-libs: $DOCKERFILE is right: runtime stage $runtime_from installs ${runtime_pkgs[*]}; USER $user; ENTRYPOINT $entry_bin"
for c in "${checked[@]}"; do echo "  $c"; done
