package smi

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

var fixedNow = time.Date(2026, 4, 10, 10, 23, 1, 0, time.UTC)

func clock() time.Time { return fixedNow }

// fakeRunner returns canned output and records how it was called.
type fakeRunner struct {
	out   []byte
	err   error
	calls [][]string
}

func (f *fakeRunner) run(_ context.Context, path string, args ...string) ([]byte, error) {
	f.calls = append(f.calls, append([]string{path}, args...))
	return f.out, f.err
}

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSourceSnapshot(t *testing.T) {
	fake := &fakeRunner{out: readFixture(t, "rtx-3080-v13.xml")}
	src := New(Options{Run: fake.run, Now: clock})
	snap, err := src.Snapshot(context.Background())
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	if diff := cmp.Diff([][]string{{"nvidia-smi", "-q", "-x"}}, fake.calls); diff != "" {
		t.Errorf("runner calls (-want +got):\n%s", diff)
	}
	got := []any{src.Name(), snap.Backend, snap.Time, snap.DriverVersion, len(snap.GPUs), snap.GPUs[0].UUID}
	want := []any{"smi", "smi", fixedNow, "595.58.03", 1, "GPU-19d6d965-2acc-f646-00f8-4c76979aabb4"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("snapshot (-want +got):\n%s", diff)
	}
	if err := src.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func TestSourceCustomPath(t *testing.T) {
	fake := &fakeRunner{out: readFixture(t, "tesla-t4.xml")}
	src := New(Options{Path: "/usr/local/nvidia/bin/nvidia-smi", Run: fake.run, Now: clock})
	if _, err := src.Snapshot(context.Background()); err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	if diff := cmp.Diff([][]string{{"/usr/local/nvidia/bin/nvidia-smi", "-q", "-x"}}, fake.calls); diff != "" {
		t.Errorf("runner calls (-want +got):\n%s", diff)
	}
}

func TestSourceTimeout(t *testing.T) {
	blocking := func(ctx context.Context, _ string, _ ...string) ([]byte, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	// A deadline already past when the run starts: nothing waits.
	src := New(Options{Run: blocking, Timeout: time.Nanosecond, Now: clock})
	_, err := src.Snapshot(context.Background())
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "nvidia-smi -q -x timed out after 1ns") {
		t.Errorf("Snapshot = %v, want a timeout error", err)
	}
}

func TestSourceParentCanceled(t *testing.T) {
	blocking := func(ctx context.Context, _ string, _ ...string) ([]byte, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := New(Options{Run: blocking}).Snapshot(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Snapshot = %v, want context.Canceled", err)
	}
}

// A run that has returned is never taken for one still running: a
// Snapshot right after another always runs.
func TestBackToBackSnapshotsRun(t *testing.T) {
	out := readFixture(t, "tesla-t4.xml")
	src := New(Options{Run: func(context.Context, string, ...string) ([]byte, error) { return out, nil }, Timeout: time.Minute})
	for i := range 500 {
		if _, err := src.Snapshot(context.Background()); err != nil {
			t.Fatalf("snapshot %d: %v", i, err)
		}
	}
}

// A process stuck in the driver ignores its kill. Snapshot must still
// return at the deadline, refuse to stack a second run on the first, and
// run again once the first has exited.
func TestSourceHungRunner(t *testing.T) {
	release := make(chan struct{})
	exited := make(chan struct{})
	out := readFixture(t, "tesla-t4.xml")
	calls := 0
	run := func(_ context.Context, _ string, _ ...string) ([]byte, error) {
		calls++
		if calls == 1 {
			defer close(exited)
			<-release // ignores ctx on purpose
			return nil, errors.New("killed")
		}
		return out, nil
	}
	src := New(Options{Run: run, Timeout: time.Nanosecond})
	if _, err := src.Snapshot(context.Background()); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("first Snapshot = %v, want a timeout", err)
	}
	_, err := src.Snapshot(context.Background())
	if err == nil || !strings.Contains(err.Error(), "the previous run has not exited yet") {
		t.Fatalf("second Snapshot = %v, want a refusal", err)
	}

	close(release)
	<-exited
	src.timeout = time.Minute
	// The token is returned just after the runner exits; poll for it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		snap, err := src.Snapshot(context.Background())
		if err == nil {
			if len(snap.GPUs) != 1 {
				t.Errorf("got %d GPUs, want 1", len(snap.GPUs))
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Snapshot after the hung run exited: %v", err)
		}
		runtime.Gosched()
	}
}

func TestSourceMissingBinary(t *testing.T) {
	t.Run("fake", func(t *testing.T) {
		fake := &fakeRunner{err: &exec.Error{Name: "/opt/nvidia-smi", Err: exec.ErrNotFound}}
		_, err := New(Options{Path: "/opt/nvidia-smi", Run: fake.run}).Snapshot(context.Background())
		want := "no NVIDIA GPU found: nvidia-smi not found at /opt/nvidia-smi: "
		if err == nil || !strings.HasPrefix(err.Error(), want) || !errors.Is(err, exec.ErrNotFound) {
			t.Errorf("Snapshot = %v, want prefix %q wrapping exec.ErrNotFound", err, want)
		}
	})
	t.Run("exec", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "nvidia-smi")
		_, err := New(Options{Path: path}).Snapshot(context.Background())
		want := "no NVIDIA GPU found: nvidia-smi not found at " + path + ": "
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Snapshot = %v, want prefix %q", err, want)
		}
	})
}

func TestSourceNonZeroExit(t *testing.T) {
	exitErr := errors.New("exit status 15")
	t.Run("with XML keeps the GPUs", func(t *testing.T) {
		fake := &fakeRunner{out: readFixture(t, "a10g.xml"), err: exitErr}
		snap, err := New(Options{Run: fake.run, Now: clock}).Snapshot(context.Background())
		if err != nil {
			t.Fatalf("Snapshot: %v", err)
		}
		want := gpu.QueryError{Query: "nvidia-smi -q -x", Message: "exit status 15"}
		if len(snap.GPUs) != 1 || len(snap.Errors) != 1 || snap.Errors[0] != want {
			t.Errorf("got %d GPUs and errors %v, want 1 GPU and %v", len(snap.GPUs), snap.Errors, want)
		}
	})
	t.Run("with text fails", func(t *testing.T) {
		fake := &fakeRunner{out: []byte("No devices were found\n"), err: exitErr}
		_, err := New(Options{Run: fake.run}).Snapshot(context.Background())
		if !errors.Is(err, exitErr) || !strings.Contains(err.Error(), "No devices were found") {
			t.Errorf("Snapshot = %v, want the exit status and the output text", err)
		}
	})
}

// ExecRunner against a stand-in script: arguments reach the binary, its
// output comes back, and its stderr explains a failure.
func TestExecRunner(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh to run stand-in scripts")
	}
	dir := t.TempDir()
	fixture, err := filepath.Abs(filepath.Join("testdata", "tesla-t4.xml"))
	if err != nil {
		t.Fatal(err)
	}
	ok := filepath.Join(dir, "nvidia-smi")
	script := "#!/bin/sh\n[ \"$1 $2\" = '-q -x' ] || exit 2\ncat '" + fixture + "'\n"
	if err := os.WriteFile(ok, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	snap, err := New(Options{Path: ok}).Snapshot(context.Background())
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	if snap.GPUs[0].Name != "Tesla T4" {
		t.Errorf("Name = %q, want Tesla T4", snap.GPUs[0].Name)
	}

	failing := filepath.Join(dir, "failing-smi")
	script = "#!/bin/sh\necho 'Failed to initialize NVML: Driver/library version mismatch' >&2\nexit 9\n"
	if err := os.WriteFile(failing, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = New(Options{Path: failing}).Snapshot(context.Background())
	if err == nil || !strings.Contains(err.Error(), "exit status 9: Failed to initialize NVML: Driver/library version mismatch") {
		t.Errorf("Snapshot = %v, want the exit status and stderr", err)
	}
}
