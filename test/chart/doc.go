// Package chart tests the Helm chart in charts/gpuheal: helm lint, helm
// template with several value sets (testdata/), every rendered object
// applied to a real API server with a server-side dry run, the agent's
// least-privilege promise, and that deploy/ is the chart's rendering.
// helm comes from bin/ (hack/build-helm.sh).
//
// helm is run as a subprocess, so the tests that run it are built only
// with -tags integration; the schema's coverage of values.yaml is a plain
// test.
package chart
