#!/usr/bin/env bash
# Installs the Debian packages the tests use when they are missing. Safe to
# run repeatedly: it does nothing when everything is there.
set -euo pipefail

need=()
command -v gcc >/dev/null || need+=(gcc)     # cgo for the NVML backend
command -v git >/dev/null || need+=(git)
command -v curl >/dev/null || need+=(curl)     # hack/bench-agent.sh
[[ -x /usr/bin/time ]] || need+=(time)          # hack/bench-diagnose.sh
# A real Prometheus (and promtool) and Pushgateway for the exporter's tests.
command -v prometheus >/dev/null || need+=(prometheus)
command -v prometheus-pushgateway >/dev/null || need+=(prometheus-pushgateway)
# Node.js and npm install dynalite, the DynamoDB-compatible server of the audit tests.
command -v node >/dev/null || need+=(nodejs)
command -v npm >/dev/null || need+=(npm)
# Headless Chromium loads the controller's status page in its tests.
command -v chromium >/dev/null || need+=(chromium)
# The one-node cluster of the install test and `make images`: a real
# container runtime (containerd + runc) with the CNI plugins for the kubelet,
# dockerd to build images, debootstrap for the locally made base images,
# iptables and conntrack for kube-proxy, openssl for the cluster's PKI, and
# an arm64 cross compiler for the agent's cgo build.
command -v containerd >/dev/null || need+=(containerd)
command -v runc >/dev/null || need+=(runc)
[[ -x /usr/lib/cni/bridge ]] || need+=(containernetworking-plugins)
command -v dockerd >/dev/null || need+=(docker.io)
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v iptables >/dev/null || need+=(iptables)
command -v conntrack >/dev/null || need+=(conntrack)
command -v openssl >/dev/null || need+=(openssl)
command -v aarch64-linux-gnu-gcc >/dev/null || need+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross)

if ((${#need[@]})); then
  echo ">> installing Debian packages: ${need[*]}"
  sudo=""; [[ $(id -u) -ne 0 ]] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
