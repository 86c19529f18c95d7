#!/usr/bin/env bash
# Builds the real control plane used by tests and the demo -- kube-apiserver,
# etcd, kwok, and for the demo's and soak's workloads kube-controller-manager
# (Deployments, PodDisruptionBudget status, node lifecycle) and
# kube-scheduler; for the one-node cluster (hack/node-cluster.sh) a real
# kubelet, kube-proxy and kubectl -- from the Go module proxy into bin/. Prebuilt downloads are
# not reachable here, so everything comes from source pinned in hack/tools/go.mod.
#
# The Kubernetes binaries are first fetched as the pinned release from
# dl.k8s.io where that host answers, each checked against the SHA-256 the
# release publishes beside it; where it does not (no internet, as in this
# project's own VMs) they are built from source, which takes minutes
# (kube-apiserver 8-14 min on 2 cores from a cold cache; README.md).
# GPUHEAL_FETCH_RELEASES=never always builds. etcd and kwok are always built:
# seconds to a minute. A stamp file records the hash of the pinned versions,
# this script and the Go toolchain; while it matches, nothing is redone.
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
# fetch NAME: the release binary, verified; fails (leaving nothing) when the
# host cannot be reached or the checksum does not match.
fetch() {
  [[ "${GPUHEAL_FETCH_RELEASES:-auto}" != never ]] || return 1
  local name="$1" start=$SECONDS
  local url="https://dl.k8s.io/release/${k8s_version}/bin/linux/$(go env GOARCH)/$name"
  local want got
  want="$(curl -fsSL --connect-timeout 5 --max-time 30 "$url.sha256" 2>/dev/null)" || return 1
  curl -fsSL --connect-timeout 5 --max-time 600 -o "$bin/$name.part" "$url" || { rm -f "$bin/$name.part"; return 1; }
  got="$(sha256sum "$bin/$name.part" | cut -d' ' -f1)"
  if [[ "$got" != "${want%% *}" ]]; then
    echo ">> $name from $url: checksum $got, the release publishes ${want%% *}; building instead" >&2
    rm -f "$bin/$name.part"
    return 1
  fi
  chmod +x "$bin/$name.part" && mv "$bin/$name.part" "$bin/$name"
  echo ">> fetched $name ${k8s_version} (sha256 verified) in $((SECONDS - start))s"
}
# One probe decides for all: a host that does not answer costs one lookup.
if [[ "${GPUHEAL_FETCH_RELEASES:-auto}" != never ]] &&
  curl -fsSL --connect-timeout 5 --max-time 15 -o /dev/null "https://dl.k8s.io/release/${k8s_version}/bin/linux/$(go env GOARCH)/kubectl.sha256" 2>/dev/null; then
  fetched=yes
else
  echo ">> release binaries not reachable: building Kubernetes ${k8s_version} from source"
  fetched=no
fi
for b in kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl; do
  if [[ $fetched == yes ]] && fetch "$b"; then continue; fi
  build "$b" "k8s.io/kubernetes/cmd/$b" "$ldflags"
done
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
