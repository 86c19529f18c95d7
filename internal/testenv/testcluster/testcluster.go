// Package testcluster gives a test its own control plane: testenv.Start
// for the length of one test, stopped at cleanup or on SIGINT/SIGTERM.
//
// It is a sub-package of testenv, not part of it or of internal/testproc,
// for two reasons. testenv must not import package testing: the operator
// CLI links it for the demo and `gpuheal dev cluster`. And testproc is
// imported by tests that need no Kubernetes (dynalite, Prometheus,
// promtool); folding the cluster into it would link envtest and
// controller-runtime into all of them.
package testcluster

import (
	"context"
	"errors"
	"testing"

	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testproc"
)

// Start starts an environment for t and stops it when t ends, whether the
// test passed, failed or was interrupted by SIGINT/SIGTERM. Without the
// binaries it fails under CI and skips elsewhere, saying how to build them.
func Start(t testing.TB, opts testenv.Options) *testenv.Env {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e, err := testenv.Start(ctx, opts)
	var missing *testenv.MissingBinariesError
	switch {
	case errors.As(err, &missing) && !testproc.InCI():
		t.Skipf("skipping: %v", err)
	case err != nil:
		t.Fatalf("starting test control plane: %v", err)
	}
	untrack := track(e)
	t.Cleanup(func() {
		untrack()
		if err := e.Stop(); err != nil {
			t.Errorf("stopping test control plane: %v", err)
		}
	})
	return e
}

// RequireBinaries returns the control-plane bin directory for a test that
// runs the binaries itself (through the CLI or the demo); without them it
// fails under CI and skips elsewhere. withKwok and withWorkloads are as
// for testenv.MissingBinaries.
func RequireBinaries(t testing.TB, withKwok, withWorkloads bool) string {
	t.Helper()
	binDir, err := testenv.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	if missing := testenv.MissingBinaries(binDir, withKwok, withWorkloads); len(missing) > 0 {
		err := &testenv.MissingBinariesError{Dir: binDir, Missing: missing}
		if testproc.InCI() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	return binDir
}

// RepoRoot is the repository's root (the directory with go.mod) above the
// test's working directory.
func RepoRoot(t testing.TB) string {
	t.Helper()
	root, err := testenv.RepoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	return root
}
