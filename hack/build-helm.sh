#!/usr/bin/env bash
# Builds helm from the Go module proxy (pinned in hack/tools/helm/go.mod)
# into bin/helm, once; the chart tests run it. Rebuilds when the pin moves.
# Also fetches the pinned prometheus-operator module into the module cache:
# the chart tests install its ServiceMonitor and PrometheusRule CRDs
# (example/prometheus-operator-crd/) into the test API server.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${GPUHEAL_BIN_DIR:-$PWD/bin}"
want="$(awk '$1 == "helm.sh/helm/v3" {print $2}' hack/tools/helm/go.mod)"
# The Kubernetes version helm assumes without a cluster (helm template,
# lint) is its client-go's, as helm's own Makefile stamps it; unstamped it
# is 1.20 and fails the chart's kubeVersion.
k8s="$(awk '$1 == "k8s.io/client-go" {print $2}' hack/tools/helm/go.mod)" # v0.37.0
k8s_minor="$(cut -d. -f2 <<<"$k8s")"
stamp="$bin/.helm-version"
(cd hack/tools/helm && go mod download github.com/prometheus-operator/prometheus-operator)
if [[ -x "$bin/helm" && -f "$stamp" && "$(cat "$stamp")" == "$want k8s-1.$k8s_minor" ]]; then
  exit 0
fi
echo ">> building helm $want from the Go module proxy (a few minutes, once)"
mkdir -p "$bin"
# internal/version.version is what `helm version` prints and charts see as
# .Capabilities.HelmVersion.
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$want"
for pkg in pkg/lint/rules pkg/chartutil; do
  ldflags+=" -X helm.sh/helm/v3/$pkg.k8sVersionMajor=1 -X helm.sh/helm/v3/$pkg.k8sVersionMinor=$k8s_minor"
done
(cd hack/tools/helm && go build -trimpath -o "$bin/helm" -ldflags "$ldflags" helm.sh/helm/v3/cmd/helm)
echo "$want k8s-1.$k8s_minor" >"$stamp"
