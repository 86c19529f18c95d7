//go:build tools

// Package tools pins helm, which hack/build-helm.sh builds into bin/helm
// for the chart tests. A module of its own keeps helm's dependencies out of
// gpuheal's go.mod and the control plane's.
//
// The prometheus-operator import is never built: it pins that module (a
// small package of it, so go mod tidy keeps the requirement) for the CRD
// files in its example/prometheus-operator-crd/, which test/chart installs
// to dry-run the chart's ServiceMonitor and PrometheusRule. Pinning it
// changes none of the modules helm is built from.
package tools

import (
	_ "github.com/prometheus-operator/prometheus-operator/pkg/versionutil"
	_ "helm.sh/helm/v3/cmd/helm"
)
