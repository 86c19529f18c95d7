package promsourcetest

import (
	"testing"

	"github.com/gpuheal/gpuheal/internal/testproc"
)

// The process helpers are shared with other packages' tests.
var (
	// RequireTool finds a Debian-packaged tool: under CI=true a missing
	// tool fails the test; elsewhere the test skips, saying how to get it.
	RequireTool = testproc.RequireTool
	freePort    = testproc.FreePort
	waitReady   = testproc.WaitHTTP
)

// startProcess runs a server for the test until it ends.
func startProcess(t testing.TB, name string, args ...string) { testproc.Start(t, name, args...) }
