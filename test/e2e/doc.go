// Package e2e runs the gpuheal binaries as a user would: built with go
// build, against a real API server with kwok, Prometheus and the demo.
// Every test needs those outside parts, so all are built only with
// -tags integration; without it the package has nothing to run.
package e2e
