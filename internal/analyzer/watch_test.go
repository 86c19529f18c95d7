package analyzer

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	fakeclock "k8s.io/utils/clock/testing"

	"github.com/gpuheal/gpuheal/internal/testproc"
)

func TestWatch(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "agent.yaml")
	write := func(s string) { t.Helper(); writeAtomic(t, path, []byte(s)) }
	v1 := "rules:\n- {name: dead, expr: gpu.missing, severity: fatal, condition: AcceleratedHardwareReady, reason: Dead}\n"
	write(v1)
	rs1, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	clk := fakeclock.NewFakeClock(t0)
	eng := NewEngine(rs1, clk)
	loads := make(chan *RuleSet, 10)
	errs := make(chan error, 10)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Watch(ctx, WatchOptions{Path: path, Clock: clk, Interval: 10 * time.Second, Current: rs1,
			OnLoad:  func(rs *RuleSet) { eng.SetRuleSet(rs); loads <- rs },
			OnError: func(err error) { errs <- err }})
	}()
	defer func() { cancel(); <-done }()
	testproc.EventuallyTrue(t, 10*time.Second, "the watch ticker", clk.HasWaiters)
	tick := func() { clk.Step(10 * time.Second) }

	// A bad edit: reported with the rule and CEL's message; the engine
	// keeps the last good set.
	write(strings.Replace(v1, "gpu.missing", "gpu.missing ||", 1))
	tick()
	select {
	case err := <-errs:
		if !strings.Contains(err.Error(), "rule 0 (dead): expr: CEL:") || !strings.Contains(err.Error(), path) {
			t.Errorf("error = %v", err)
		}
	case rs := <-loads:
		t.Fatalf("bad file loaded: %v", rs)
	case <-time.After(10 * time.Second):
		t.Fatal("no error reported for a bad file")
	}
	if eng.RuleSet() != rs1 {
		t.Error("the engine lost the last good rule set")
	}
	tick() // the same bad content: not reported again

	v2 := v1 + "- {name: count, expr: node.foundGPUs < 8, scope: node, severity: fatal, condition: AcceleratedHardwareReady, reason: Few}\n"
	write(v2)
	tick()
	select {
	case rs := <-loads:
		if rs.Len() != 2 || eng.RuleSet() != rs {
			t.Errorf("loaded %d rules; engine has %p, want %p", rs.Len(), eng.RuleSet(), rs)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("good file not loaded")
	}
	if len(errs) != 0 {
		t.Errorf("the unchanged bad file was reported again: %v", <-errs)
	}
}

func TestWatchMissingFileLoadsWhenCreated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.yaml")
	clk := fakeclock.NewFakeClock(t0)
	loads := make(chan *RuleSet, 10)
	errs := make(chan error, 10)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Watch(ctx, WatchOptions{Path: path, Clock: clk, OnLoad: func(rs *RuleSet) { loads <- rs }, OnError: func(err error) { errs <- err }})
	}()
	defer func() { cancel(); <-done }()
	select {
	case err := <-errs:
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("error = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("missing file not reported")
	}
	testproc.EventuallyTrue(t, 10*time.Second, "the watch ticker", clk.HasWaiters)
	writeAtomic(t, path, DefaultRulesYAML())
	clk.Step(DefaultWatchInterval)
	select {
	case rs := <-loads:
		if rs.Len() != DefaultRuleSet().Len() {
			t.Errorf("loaded %d rules", rs.Len())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("created file not loaded")
	}
}

// writeAtomic replaces path as a ConfigMap volume update does: a reader
// never sees half a file.
func writeAtomic(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
