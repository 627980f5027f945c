#!/usr/bin/env bash
# Installs every Debian package berth needs to build, test and run locally.
# Kubernetes, etcd, containerd and Helm are not Debian's: hack/build-kube.sh builds them from the
# Go module proxy with the Go at /usr/local/go (Debian's golang-go is not installed, so that it
# cannot shadow it).
# Idempotent: packages already present are not touched; apt-get runs only when something is missing.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git ca-certificates curl ccache
  libcpprest-dev rapidjson-dev libyaml-cpp-dev libssl-dev prometheus-cpp-dev
  libgtest-dev libgmock-dev libbenchmark-dev libspdlog-dev libfmt-dev libboost-dev
  rsync jq openssl procps
  socat iproute2
  runc busybox-static containernetworking-plugins python3 util-linux
  clang libclang-rt-14-dev llvm
  chromium
  prometheus
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! grep -q "install ok installed" <<<"$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)"; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi

echo "hack/deps.sh: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
# Packages here are tools, not services: the prometheus package (wanted for promtool) would
# start a Prometheus server on a systemd machine. A policy-rc.d that refuses every start keeps
# package scripts from starting anything during this install (Debian's documented mechanism).
policy=/usr/sbin/policy-rc.d
own_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
  $SUDO chmod 755 "$policy"
  own_policy=1
fi
status=0
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" || status=$?
if [ "$own_policy" = 1 ]; then $SUDO rm -f "$policy"; fi
exit "$status"
