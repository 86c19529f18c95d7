#!/usr/bin/env bash
# A real one-node Kubernetes cluster on this machine, for the install test and
# for people: etcd, kube-apiserver (Node authorizer + NodeRestriction),
# kube-controller-manager, kube-scheduler, a real kubelet and kube-proxy (all
# from bin/, built by hack/build-controlplane.sh), containerd + runc + the CNI
# plugins from Debian, and a locally built pause image. Nothing is pulled:
# images reach the node through `import`.
#
#   hack/node-cluster.sh up          start it (idempotent); prints the kubeconfig
#   hack/node-cluster.sh import TAR  load an image tarball (docker save) into the node
#   hack/node-cluster.sh down        stop everything it started and clean the host
#   hack/node-cluster.sh env         print KUBECONFIG=... for eval
#
# Needs root (kubelet, containerd, iptables). State, logs and the PKI live in
# $GPUHEAL_NODE_CLUSTER_DIR (default /tmp/gpuheal-node-cluster). One cluster
# per machine: the kubelet owns the host's kubepods cgroups.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${GPUHEAL_BIN_DIR:-$root/bin}"
dir="${GPUHEAL_NODE_CLUSTER_DIR:-/tmp/gpuheal-node-cluster}"
node="${GPUHEAL_NODE_NAME:-gpu-node-0}"
# The node's address must be a real interface of this machine: Service
# endpoints may not be loopback. Traffic to it never leaves the machine.
ip="${GPUHEAL_NODE_IP:-$(hostname -I | awk '{print $1}')}"
api_port="${GPUHEAL_NODE_CLUSTER_API_PORT:-16443}"
etcd_port="${GPUHEAL_NODE_CLUSTER_ETCD_PORT:-23790}"
pod_cidr="10.244.0.0/24"   # the first /24 kube-controller-manager allocates from cluster_cidr
cluster_cidr="10.244.0.0/16"
service_cidr="10.96.0.0/16"
service_ip="10.96.0.1"
pause_image="registry.k8s.io/pause:3.10" # the name containerd expects; built here
pki="$dir/pki"
ctr_sock="$dir/containerd/containerd.sock"
# The labels GPU feature discovery would set, so the chart's nodeSelector matches.
node_labels="nvidia.com/gpu.present=true,nvidia.com/gpu.count=8,nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3"

log() { printf '>> %s\n' "$*" >&2; }
die() { printf 'node-cluster: %s\n' "$*" >&2; exit 1; }

# wait_for WHAT SECONDS CMD...: poll CMD until it succeeds or the deadline passes.
wait_for() {
  local what="$1" secs="$2"; shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || die "$what not ready after ${secs}s (logs in $dir/logs)"
    sleep 0.2
  done
}

running() { [[ -f "$dir/pids/$1" ]] && kill -0 "$(cat "$dir/pids/$1")" 2>/dev/null; }

# start NAME CMD...: run CMD in the background with its log and pid file.
start() {
  local name="$1"; shift
  running "$name" && return 0
  "$@" >"$dir/logs/$name.log" 2>&1 &
  echo $! >"$dir/pids/$name"
}

# shellcheck source=hack/node-cluster-pki.sh
source "$root/hack/node-cluster-pki.sh"
# shellcheck source=hack/node-cluster-config.sh
source "$root/hack/node-cluster-config.sh"

kubectl() { "$bin/kubectl" --kubeconfig "$dir/admin.kubeconfig" "$@"; }
ctr() { command ctr --address "$ctr_sock" --namespace k8s.io "$@"; }

check_prereqs() {
  [[ $(id -u) -eq 0 ]] || die "needs root (kubelet, containerd and kube-proxy manage the host)"
  local b
  for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl; do
    [[ -x "$bin/$b" ]] || die "$bin/$b missing: run hack/build-controlplane.sh (make controlplane)"
  done
  for b in containerd runc ctr openssl iptables; do
    command -v "$b" >/dev/null || die "$b missing: run hack/ensure-deps.sh"
  done
  [[ -x /usr/lib/cni/bridge ]] || die "CNI plugins missing in /usr/lib/cni: run hack/ensure-deps.sh"
  [[ -n "$ip" ]] || die "no address for the node: set GPUHEAL_NODE_IP"
}

# The pause image: a static binary on scratch, written as an OCI archive by
# hack/pause itself (no image builder needed) and imported into containerd.
pause_image() {
  ctr images ls -q | grep -qx "$pause_image" && return 0
  log "building the pause image $pause_image"
  (cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$dir/pause" ./hack/pause)
  "$dir/pause" --write-image "$dir/pause.tar" --name "$pause_image"
  ctr images import "$dir/pause.tar" >/dev/null
}

up() {
  check_prereqs
  mkdir -p "$dir"/{logs,pids,etcd,kubelet,containerd,cni/net.d,kernel-log}
  local t0=$SECONDS
  make_pki
  write_configs

  start etcd "$bin/etcd" --name node-cluster --data-dir "$dir/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$((etcd_port + 10))" \
    --initial-advertise-peer-urls "http://127.0.0.1:$((etcd_port + 10))" \
    --initial-cluster "node-cluster=http://127.0.0.1:$((etcd_port + 10))" --unsafe-no-fsync
  start containerd containerd --config "$dir/containerd/config.toml"

  start kube-apiserver "$bin/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$etcd_port" \
    --bind-address 0.0.0.0 --advertise-address "$ip" --secure-port "$api_port" \
    --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
    --allow-privileged=true \
    --client-ca-file "$pki/ca.crt" --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --kubelet-client-certificate "$pki/apiserver-kubelet-client.crt" --kubelet-client-key "$pki/apiserver-kubelet-client.key" \
    --kubelet-preferred-address-types InternalIP \
    --service-account-issuer https://kubernetes.default.svc --service-account-key-file "$pki/sa.pub" \
    --service-account-signing-key-file "$pki/sa.key" --service-cluster-ip-range "$service_cidr"
  wait_for kube-apiserver 60 kubectl get --raw /readyz

  start kube-controller-manager "$bin/kube-controller-manager" --kubeconfig "$dir/controller-manager.kubeconfig" \
    --leader-elect=false --use-service-account-credentials \
    --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
    --allocate-node-cidrs --cluster-cidr "$cluster_cidr" --service-cluster-ip-range "$service_cidr" \
    --bind-address 127.0.0.1
  start kube-scheduler "$bin/kube-scheduler" --kubeconfig "$dir/scheduler.kubeconfig" \
    --leader-elect=false --bind-address 127.0.0.1

  wait_for containerd 30 ctr version
  pause_image
  start kubelet "$bin/kubelet" --config "$dir/kubelet.yaml" --kubeconfig "$dir/kubelet.kubeconfig" \
    --hostname-override "$node" --node-ip "$ip" --root-dir "$dir/kubelet" --node-labels "$node_labels"
  start kube-proxy "$bin/kube-proxy" --config "$dir/kube-proxy.yaml"

  wait_for "node $node" 90 kubectl wait --for=condition=Ready "node/$node" --timeout=2s
  # A service account exists only once its controller has run; pods need it.
  wait_for "the default ServiceAccount" 30 kubectl get serviceaccount default
  log "one-node cluster up in $((SECONDS - t0))s: node $node at $ip, API https://127.0.0.1:$api_port"
  echo "$dir/admin.kubeconfig"
}

import() {
  local tar="${1:?usage: node-cluster.sh import IMAGE.tar}"
  [[ -f "$tar" ]] || die "no image archive at $tar"
  ctr images import "$tar" >/dev/null
  log "imported $tar into the node's containerd"
}

# down stops in the order that leaves nothing behind: the kubelet first (so
# it restarts nothing), then every container and sandbox, then the runtime,
# then the control plane; then the host state the node created (mounts,
# network namespaces, the CNI bridge, kube-proxy's iptables rules).
down() {
  stop kubelet
  if running containerd; then
    local c
    for c in $(ctr tasks ls -q 2>/dev/null); do ctr tasks kill -s SIGKILL "$c" >/dev/null 2>&1 || true; done
    wait_for "the node's containers to exit" 30 no_tasks_left
    for c in $(ctr containers ls -q 2>/dev/null); do ctr containers delete "$c" >/dev/null 2>&1 || true; done
  fi
  stop kube-proxy
  [[ -x "$bin/kube-proxy" ]] && "$bin/kube-proxy" --cleanup >/dev/null 2>&1 || true
  stop containerd
  stop kube-scheduler
  stop kube-controller-manager
  stop kube-apiserver
  stop etcd
  # Leftover runc shims of this containerd, then mounts under our state dir.
  pkill -f "containerd-shim-runc-v2 -namespace k8s.io -address $ctr_sock" 2>/dev/null || true
  local m
  for m in $(awk -v d="$dir/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r); do umount -l "$m" 2>/dev/null || true; done
  for m in $(ip netns list 2>/dev/null | awk '/^cni-/ {print $1}'); do ip netns delete "$m" 2>/dev/null || true; done
  ip link delete cni0 2>/dev/null || true
  iptables -t nat -S 2>/dev/null | awk '/CNI-/ && /^-A/' | sed 's/^-A/-D/' | while read -r rule; do
    eval "iptables -t nat $rule" 2>/dev/null || true
  done
  # The kubelet's own chains (kube-proxy --cleanup removed kube-proxy's).
  local ipt table chain
  for ipt in iptables ip6tables; do
    command -v "$ipt" >/dev/null || continue
    for table in filter nat mangle; do
      "$ipt" -t "$table" -S 2>/dev/null | awk '/^-A (INPUT|OUTPUT|FORWARD|PREROUTING|POSTROUTING) .*-j KUBE-/' | sed 's/^-A/-D/' |
        while read -r rule; do eval "$ipt -t $table $rule" 2>/dev/null || true; done
      for chain in $("$ipt" -t "$table" -S 2>/dev/null | awk '/^-N KUBE-/ {print $2}'); do
        "$ipt" -t "$table" -F "$chain" 2>/dev/null || true
      done
      for chain in $("$ipt" -t "$table" -S 2>/dev/null | awk '/^-N KUBE-/ {print $2}'); do
        "$ipt" -t "$table" -X "$chain" 2>/dev/null || true
      done
    done
  done
  log "one-node cluster stopped"
}

# no_tasks_left deletes every task that has exited and succeeds when none is left.
no_tasks_left() {
  local c
  for c in $(ctr tasks ls -q 2>/dev/null); do ctr tasks delete "$c" >/dev/null 2>&1 || true; done
  [[ -z "$(ctr tasks ls -q 2>/dev/null)" ]]
}

stop() {
  running "$1" || { rm -f "$dir/pids/$1"; return 0; }
  local pid; pid="$(cat "$dir/pids/$1")"
  kill "$pid" 2>/dev/null || true
  local deadline=$((SECONDS + 20))
  while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$dir/pids/$1"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  import) shift; import "$@" ;;
  env) echo "KUBECONFIG=$dir/admin.kubeconfig" ;;
  *) die "usage: $0 up|down|import IMAGE.tar|env" ;;
esac
