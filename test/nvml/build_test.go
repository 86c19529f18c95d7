//go:build integration

package nvml

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
)

// workDir holds what the tests build once for all of them.
var workDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gpuheal-nvml-abi-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	workDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// The Makefile's flags for the agent: cgo on, Go's internal linker, and
// CGO_CFLAGS unless the environment sets them (as `?=` does).
const (
	agentLDFlags     = "-s -w -X github.com/gpuheal/gpuheal/internal/version.Version=nvml-abi-test -linkmode=internal"
	makefileCgoFlags = "-O2 -g -Wno-deprecated-declarations"
)

var (
	agentOnce sync.Once
	agentPath string
	agentErr  error
)

// agentBinary builds cmd/gpuheal-agent once, the way `make build` does.
func agentBinary(t *testing.T) string {
	t.Helper()
	root := testcluster.RepoRoot(t)
	agentOnce.Do(func() {
		out := filepath.Join(workDir, "gpuheal-agent")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", agentLDFlags, "-o", out, "./cmd/gpuheal-agent")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
		if os.Getenv("CGO_CFLAGS") == "" {
			cmd.Env = append(cmd.Env, "CGO_CFLAGS="+makefileCgoFlags)
		}
		if b, err := cmd.CombinedOutput(); err != nil {
			agentErr = fmt.Errorf("building gpuheal-agent as `make build` does: %w\n%s", err, b)
			return
		}
		agentPath = out
	})
	if agentErr != nil {
		t.Fatal(agentErr)
	}
	return agentPath
}

// stubs are the two builds of the stand-in library.
type stubs struct {
	full string // every function the agent calls, as R550 has them
	r470 string // -DNVML_STUB_R470: the post-R470 functions absent
}

var (
	stubOnce sync.Once
	stubLibs stubs
	stubErr  error
)

// stubLibraries compiles stub/*.c with gcc into two shared objects named
// by their soname, each in its own directory.
func stubLibraries(t *testing.T) stubs {
	t.Helper()
	root := testcluster.RepoRoot(t)
	stubOnce.Do(func() {
		build := func(name string, defs ...string) (string, error) {
			out := filepath.Join(workDir, name, "libnvidia-ml.so.1")
			return out, testenv.BuildNVMLStub(root, out, defs...)
		}
		if stubLibs.full, stubErr = build("full"); stubErr != nil {
			return
		}
		stubLibs.r470, stubErr = build("r470", "-DNVML_STUB_R470")
	})
	if stubErr != nil {
		t.Fatal(stubErr)
	}
	return stubLibs
}
