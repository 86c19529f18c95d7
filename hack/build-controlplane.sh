#!/usr/bin/env bash
# Builds the real control plane used by tests and the demo -- kube-apiserver,
# etcd, kwok, and for the demo's and soak's workloads kube-controller-manager
# (Deployments, PodDisruptionBudget status, node lifecycle) and
# kube-scheduler; for the one-node cluster (hack/node-cluster.sh) a real
# kubelet, kube-proxy and kubectl -- from the Go module proxy into bin/. Prebuilt downloads are
# not reachable here, so everything comes from source pinned in hack/tools/go.mod.
#
# The first build takes minutes (kube-apiserver ~8 min on 2 cores from a cold
# cache). A stamp file records the hash of the pinned versions and the Go
# toolchain; while it matches, nothing is rebuilt.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${GPUHEAL_BIN_DIR:-$root/bin}"
tools="$root/hack/tools"
stamp="$bin/.controlplane.stamp"

k8s_version="v1.37.2"
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=${k8s_version} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37"

want="$(cat "$tools/go.mod" "$tools/go.sum" "${BASH_SOURCE[0]}" | sha256sum | cut -d' ' -f1) $(go env GOVERSION)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$bin/kube-apiserver" && -x "$bin/etcd" && -x "$bin/kwok" && -x "$bin/kube-controller-manager" && -x "$bin/kube-scheduler" && -x "$bin/kubelet" && -x "$bin/kube-proxy" && -x "$bin/kubectl" && -f "$bin/kwok-stages.yaml" ]]; then
  echo "control plane up to date in $bin (kube-apiserver ${k8s_version}, kube-controller-manager, kube-scheduler, kubelet, kube-proxy, kubectl, etcd, kwok)"
  exit 0
fi

mkdir -p "$bin"
rm -f "$stamp"
build() { # name package [ldflags]
  local name="$1" pkg="$2" flags="${3:-}" start=$SECONDS
  echo ">> building $name from $pkg (this can take minutes on a cold cache)..."
  (cd "$tools" && CGO_ENABLED=0 go build -trimpath -ldflags "$flags" -o "$bin/$name" "$pkg")
  echo ">> built $name in $((SECONDS - start))s"
}
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "$ldflags"
build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager "$ldflags"
build kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler "$ldflags"
build kubelet k8s.io/kubernetes/cmd/kubelet "$ldflags"
build kube-proxy k8s.io/kubernetes/cmd/kube-proxy "$ldflags"
build kubectl k8s.io/kubernetes/cmd/kubectl "$ldflags"
build etcd go.etcd.io/etcd/server/v3 "-s -w"
build kwok sigs.k8s.io/kwok/cmd/kwok "-s -w"

# kwok's stock stages, taken from the pinned module rather than copied into
# our tree, so they always match the kwok binary.
kwok_dir="$(cd "$tools" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)"
stages=(node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml
  pod/general/pod-create.yaml pod/general/pod-ready.yaml pod/general/pod-complete.yaml pod/general/pod-delete.yaml)
: > "$bin/kwok-stages.yaml"
for s in "${stages[@]}"; do
  { echo "---"; cat "$kwok_dir/kustomize/stage/$s"; } >> "$bin/kwok-stages.yaml"
done
echo ">> wrote $bin/kwok-stages.yaml (${#stages[@]} stages)"
echo "$want" > "$stamp"
echo "control plane ready in $bin"
