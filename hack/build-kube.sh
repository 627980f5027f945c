#!/usr/bin/env bash
# Builds the Kubernetes control plane and node binaries, etcd, containerd and Helm from the Go
# module proxy with the Go at /usr/local/go, pinned, and caches them under ~/.cache/berth.
#
#   hack/build-kube.sh [TOOL...]            build what is missing (default: kube-apiserver etcd)
#   hack/build-kube.sh --bin [VERSION]      print the directory the binaries of VERSION are in
#   hack/build-kube.sh --kueue-dir          print the directory of Kueue's module (its config/)
#   hack/build-kube.sh --jobset-dir         print the directory of JobSet's module (its config/)
#   hack/build-kube.sh --trainer-dir        print the directory of Kubeflow Trainer's module (manifests/)
#   hack/build-kube.sh --dra-driver-dir     print the directory of the DRA example driver's module (deployments/)
#
# TOOL: kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl kubemark kube-proxy
#       etcd containerd helm kwok kueue jobset trainer dra-example-kubeletplugin
# BERTH_KUBE_VERSION picks the Kubernetes version (default 1.37 = v1.37.2; 1.35 = v1.35.4, the
# oldest supported); etcd, containerd and Helm have one pinned version each.
# Kubernetes binaries land in ~/.cache/berth/kubernetes-<version>/bin, the others in
# ~/.cache/berth/tools/bin. Prints nothing and exits 0 when every requested binary is cached.
#
# How: k8s.io/kubernetes' go.mod points its staging modules (k8s.io/api, k8s.io/client-go, ...) at
# ./staging, which the module's zip does not hold; a small main module under the cache requires
# k8s.io/kubernetes and replaces every staging module with its published v0.<minor>.<patch>.
# The version variables the release build sets with -ldflags -X are set the same way, so that
# `kubectl version` and the API server's /version say v1.37.2 (and compatibility versions work).
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
CACHE="${BERTH_CACHE:-$HOME/.cache/berth}"
export PATH="/usr/local/go/bin:$PATH"

kube_version() {  # 1.37 | 1.35 | v1.37.2 -> the pinned patch release
  case "${1:-${BERTH_KUBE_VERSION:-1.37}}" in
    1.37|v1.37.2|1.37.2) echo v1.37.2 ;;
    1.35|v1.35.4|1.35.4) echo v1.35.4 ;;
    *) echo "hack/build-kube.sh: Kubernetes ${1:-$BERTH_KUBE_VERSION} is not supported (1.37 or 1.35)" >&2; return 1 ;;
  esac
}

ETCD_VERSION=v3.7.3
CONTAINERD_VERSION=v2.4.2
HELM_VERSION=v3.22.0
KWOK_VERSION=v0.8.0
KUEUE_VERSION=v0.17.0
JOBSET_VERSION=v0.12.0
TRAINER_VERSION=v2.2.0
# The Kubernetes project's DRA example driver (issue 49). The checksum database does not list
# v0.3.0 (its lookup answers 404), so the module's hashes are pinned here instead and checked
# against what the proxy serves before anything is built from it.
DRA_DRIVER_VERSION=v0.3.0
DRA_DRIVER_SUM=h1:2LIpWQn2Inw174rb7XfP6QEsEkA8zB9s7K4cgN2yZ30=
DRA_DRIVER_GOMODSUM=h1:O5Ahs4rTMApBr3tmRFfkDhjtuSZiS7GC9CDGUVo+1g4=

if [ "${1:-}" = "--dra-driver-dir" ]; then
  echo "${GOMODCACHE:-$CACHE/gomod}/sigs.k8s.io/dra-example-driver@$DRA_DRIVER_VERSION"; exit 0
fi
if [ "${1:-}" = "--kueue-dir" ]; then  # where Kueue's module (its config/: CRDs, webhooks) is
  echo "${GOMODCACHE:-$CACHE/gomod}/sigs.k8s.io/kueue@$KUEUE_VERSION"; exit 0
fi
if [ "${1:-}" = "--jobset-dir" ]; then  # where JobSet's module (its CRD: config/components/crd/bases) is
  echo "${GOMODCACHE:-$CACHE/gomod}/sigs.k8s.io/jobset@$JOBSET_VERSION"; exit 0
fi
if [ "${1:-}" = "--trainer-dir" ]; then  # where Kubeflow Trainer's module (manifests/base/crds) is
  echo "${GOMODCACHE:-$CACHE/gomod}/github.com/kubeflow/trainer/v2@$TRAINER_VERSION"; exit 0
fi
if [ "${1:-}" = "--bin" ]; then
  v=$(kube_version "${2:-}"); echo "$CACHE/kubernetes-${v#v}/bin"; exit 0
fi

KV=$(kube_version)
KBIN="$CACHE/kubernetes-${KV#v}/bin"
TBIN="$CACHE/tools/bin"
WHAT=("$@")
[ "${#WHAT[@]}" -gt 0 ] || WHAT=(kube-apiserver etcd)

out_of() {
  case "$1" in
    etcd|etcdctl|containerd|containerd-shim-runc-v2|ctr|helm|kwok|kueue|jobset|trainer|dra-example-kubeletplugin) echo "$TBIN/$1" ;;
    kube-apiserver|kube-controller-manager|kube-scheduler|kubelet|kubectl|kubemark|kube-proxy) echo "$KBIN/$1" ;;
    *) echo "hack/build-kube.sh: unknown tool $1" >&2; return 1 ;;
  esac
}

need=()
for w in "${WHAT[@]}"; do
  o=$(out_of "$w")
  [ -x "$o" ] || need+=("$w")
done
[ "${#need[@]}" -gt 0 ] || exit 0

[ -x /usr/local/go/bin/go ] || { echo "hack/build-kube.sh: Go is not at /usr/local/go (the machine's Go 1.26 is needed)" >&2; exit 1; }
mkdir -p "$CACHE" "$KBIN" "$TBIN"
exec 9>"$CACHE/build.lock"
flock 9

export GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0
export GOMODCACHE="${GOMODCACHE:-$CACHE/gomod}" GOCACHE="${GOCACHE:-$CACHE/gocache}"

# A main module DIR requiring MODULE@VERSION (plus replace lines) that imports the packages.
module_dir() {  # DIR MODULE VERSION PKG... ; replace lines from $REPLACE
  local dir=$1 mod=$2 ver=$3; shift 3
  mkdir -p "$dir"
  if [ ! -f "$dir/.ready" ]; then
    { echo "module berth.local/build"; echo; echo "go 1.26.0"; echo; echo "require $mod $ver"
      [ -n "${REPLACE:-}" ] && printf 'replace (\n%s\n)\n' "$REPLACE"; } > "$dir/go.mod"
    { echo "//go:build tools"; echo; echo "package tools"; echo; echo "import ("
      local p; for p in "$@"; do echo "	_ \"$p\""; done; echo ")"; } > "$dir/tools.go"
    (cd "$dir" && go mod tidy >"$dir/tidy.log" 2>&1) \
      || { echo "hack/build-kube.sh: resolving $mod $ver failed, see $dir/tidy.log" >&2; tail -20 "$dir/tidy.log" >&2; exit 1; }
    touch "$dir/.ready"
  fi
}

build_one() {  # DIR PACKAGE OUT [ldflags] [tags]
  local dir=$1 pkg=$2 out=$3 ldflags=${4:-} tags=${5:-}
  local name; name=$(basename "$out")
  echo "hack/build-kube.sh: building $name (first time only, several minutes)" >&2
  (cd "$dir" && go build -trimpath -tags "$tags" -ldflags "-s -w $ldflags" -o "$out.tmp" "$pkg" \
      >"$CACHE/build-$name.log" 2>&1) \
    || { echo "hack/build-kube.sh: building $name failed, see $CACHE/build-$name.log" >&2; tail -20 "$CACHE/build-$name.log" >&2; exit 1; }
  mv "$out.tmp" "$out"
}

kube_module() {
  local dir="$CACHE/src/kubernetes-${KV#v}" staging ver_minor=${KV#v1.}
  if [ ! -f "$dir/.ready" ]; then
    mkdir -p "$dir"
    (cd "$dir" && go mod download -json "k8s.io/kubernetes@$KV" >"$dir/download.json") \
      || { echo "hack/build-kube.sh: k8s.io/kubernetes@$KV could not be downloaded from the module proxy" >&2; exit 1; }
    staging=$(sed -n '/^replace (/,/^)/p' "$(jq -r .GoMod "$dir/download.json")" | awk '/=>/ {print $1}')
    REPLACE=$(for m in $staging; do printf '\t%s => %s v0.%s\n' "$m" "$m" "$ver_minor"; done)
    REPLACE="$REPLACE" module_dir "$dir" k8s.io/kubernetes "$KV" \
      k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
      k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet \
      k8s.io/kubernetes/cmd/kubectl k8s.io/kubernetes/cmd/kubemark k8s.io/kubernetes/cmd/kube-proxy
  fi
  echo "$dir"
}

for w in "${need[@]}"; do
  out=$(out_of "$w")
  [ -x "$out" ] && continue
  case "$w" in
    kube-*|kubelet|kubectl|kubemark)
      dir=$(kube_module)
      minor=${KV#v1.}; minor=${minor%%.*}
      ld=""
      for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        ld+=" -X $pkg.gitVersion=$KV -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
        ld+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
      done
      build_one "$dir" "k8s.io/kubernetes/cmd/$w" "$out" "$ld" ;;
    etcd|etcdctl)
      dir="$CACHE/src/etcd-${ETCD_VERSION#v}"
      module_dir "$dir" go.etcd.io/etcd/server/v3 "$ETCD_VERSION" go.etcd.io/etcd/server/v3/etcdmain
      # etcd's main package is the v3 root module; etcdmain.Main is what it calls.
      if [ ! -f "$dir/main/main.go" ]; then
        mkdir -p "$dir/main"
        printf 'package main\n\nimport (\n\t"os"\n\n\t"go.etcd.io/etcd/server/v3/etcdmain"\n)\n\nfunc main() { etcdmain.Main(os.Args) }\n' > "$dir/main/main.go"
      fi
      build_one "$dir" ./main "$TBIN/etcd" "-X go.etcd.io/etcd/api/v3/version.GitSHA=${ETCD_VERSION}" ;;
    containerd|containerd-shim-runc-v2|ctr)
      dir="$CACHE/src/containerd-${CONTAINERD_VERSION#v}"
      module_dir "$dir" github.com/containerd/containerd/v2 "$CONTAINERD_VERSION" \
        github.com/containerd/containerd/v2/cmd/containerd github.com/containerd/containerd/v2/cmd/ctr \
        github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2
      # no_btrfs: no btrfs C headers needed; the snapshotter used is overlayfs.
      for c in containerd containerd-shim-runc-v2 ctr; do
        [ -x "$TBIN/$c" ] || build_one "$dir" "github.com/containerd/containerd/v2/cmd/$c" "$TBIN/$c" \
          "-X github.com/containerd/containerd/v2/version.Version=$CONTAINERD_VERSION" "no_btrfs no_devmapper no_zfs"
      done ;;
    helm)
      dir="$CACHE/src/helm-${HELM_VERSION#v}"
      module_dir "$dir" helm.sh/helm/v3 "$HELM_VERSION" helm.sh/helm/v3/cmd/helm
      # The Kubernetes version `helm template` and `helm lint` assume without a cluster: that of
      # Helm's client-go (v0.37.x: 1.37), set as Helm's own Makefile sets it.
      kminor=$(cd "$dir" && go list -m -f '{{.Version}}' k8s.io/client-go | cut -d. -f2)
      ld="-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
      for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
        ld+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$kminor"
      done
      build_one "$dir" helm.sh/helm/v3/cmd/helm "$TBIN/helm" "$ld" ;;
    kwok)
      # kwok (sigs.k8s.io/kwok): thousands of simulated nodes and their Pods' lifecycle in one
      # process, the Kubernetes community's tool for scale tests.
      dir="$CACHE/src/kwok-${KWOK_VERSION#v}"
      module_dir "$dir" sigs.k8s.io/kwok "$KWOK_VERSION" sigs.k8s.io/kwok/cmd/kwok
      build_one "$dir" sigs.k8s.io/kwok/cmd/kwok "$TBIN/kwok" "-X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION#v}" ;;
    kueue)
      # Kueue (sigs.k8s.io/kueue), the queue berth is measured beside (bench/peers.sh); its CRDs
      # and webhook configuration come from the same module's config/components (kueue_config_dir).
      dir="$CACHE/src/kueue-${KUEUE_VERSION#v}"
      module_dir "$dir" sigs.k8s.io/kueue "$KUEUE_VERSION" sigs.k8s.io/kueue/cmd/kueue
      build_one "$dir" sigs.k8s.io/kueue/cmd/kueue "$TBIN/kueue" \
        "-X sigs.k8s.io/kueue/pkg/version.GitVersion=$KUEUE_VERSION" ;;
    jobset)
      # The JobSet controller (sigs.k8s.io/jobset; issue 45): its manager is the module's root
      # package (main.go). Tests and hack/real-nodes.sh run it with a kubeconfig against the
      # control plane and a config file that turns its internal cert management off and serves
      # its webhooks from a self-signed certificate (hack/real-nodes.sh); its CRD comes from the
      # same module's config/components/crd/bases (--jobset-dir).
      dir="$CACHE/src/jobset-${JOBSET_VERSION#v}"
      module_dir "$dir" sigs.k8s.io/jobset "$JOBSET_VERSION" sigs.k8s.io/jobset
      build_one "$dir" sigs.k8s.io/jobset "$TBIN/jobset" \
        "-X sigs.k8s.io/jobset/pkg/version.GitVersion=$JOBSET_VERSION" ;;
    trainer)
      # Kubeflow Trainer (github.com/kubeflow/trainer/v2; issue 45 item 5: a framework that makes
      # JobSets): its controller manager, run like the JobSet controller (hack/real-nodes.sh trainer).
      dir="$CACHE/src/trainer-${TRAINER_VERSION#v}"
      module_dir "$dir" github.com/kubeflow/trainer/v2 "$TRAINER_VERSION" github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager
      build_one "$dir" github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager "$TBIN/trainer" ;;
    dra-example-kubeletplugin)
      # The DRA example driver's kubelet plugin (sigs.k8s.io/dra-example-driver, issue 49): it
      # publishes a node's example GPUs as ResourceSlices and prepares claims (CDI files).
      export GONOSUMDB="${GONOSUMDB:+$GONOSUMDB,}sigs.k8s.io/dra-example-driver"
      got=$(go mod download -json "sigs.k8s.io/dra-example-driver@$DRA_DRIVER_VERSION" | grep -E '"(Sum|GoModSum)"' | tr -d ' \t",' | sort | tr '\n' ' ')
      want="GoModSum:$DRA_DRIVER_GOMODSUM Sum:$DRA_DRIVER_SUM "
      [ "$got" = "$want" ] || { echo "hack/build-kube.sh: sigs.k8s.io/dra-example-driver@$DRA_DRIVER_VERSION does not have the pinned hashes (got: $got)" >&2; exit 1; }
      dir="$CACHE/src/dra-example-driver-${DRA_DRIVER_VERSION#v}"
      module_dir "$dir" sigs.k8s.io/dra-example-driver "$DRA_DRIVER_VERSION" sigs.k8s.io/dra-example-driver/cmd/dra-example-kubeletplugin
      build_one "$dir" sigs.k8s.io/dra-example-driver/cmd/dra-example-kubeletplugin "$TBIN/dra-example-kubeletplugin" ;;
  esac
done
