//go:build integration

package agent

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/agent/kubecore"
	"github.com/gpuheal/gpuheal/internal/gpu"
	"github.com/gpuheal/gpuheal/internal/gpu/sim"
	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
	"github.com/gpuheal/gpuheal/internal/testproc"
)

// The GPU Operator upgrades the driver of a node under a running agent:
// the label goes to drain-required, the agent lets go of the driver, the
// driver is unloaded for several collections while the clock runs far past
// the driver-unavailable rule's minute, the new driver loads, the label
// goes to upgrade-done and the agent reads the GPUs again. The GPU
// condition stays True throughout.
func TestAgentReleasesTheDriverDuringAnUpgrade(t *testing.T) {
	env := testcluster.Start(t, testenv.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	names, err := testenv.CreateGPUNodes(ctx, env.Client, "upg", 1)
	if err != nil {
		t.Fatal(err)
	}
	node := names[0]
	setUpgradeState(ctx, t, env.Client, node, v1alpha1.DriverUpgradeDone)
	kube, err := kubecore.NewClient(env.Kubeconfig, 0)
	if err != nil {
		t.Fatal(err)
	}

	drv := &fakeDriver{loaded: true}
	first, err := drv.open()
	if err != nil {
		t.Fatal(err)
	}
	// Each failed collection steps the clock five minutes: three of them
	// are a quarter of an hour without a GPU read, as the rules see it.
	clk := clocktesting.NewFakeClock(time.Now())
	pausedPasses := &logCounter{match: "GPU backend released", onMatch: func() { clk.Step(5 * time.Minute) }}
	o := validOptions()
	o.NodeName, o.Interval, o.MetricsAddress, o.KmsgPath, o.StateDir = node, time.Second, "127.0.0.1:0", "", t.TempDir()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- Run(runCtx, &o, Deps{Source: first, Open: drv.open, Kube: kube, Clock: clk}, nil, slog.New(pausedPasses))
	}()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("agent: %v", err)
		}
	}()

	gpuCondition := func() (string, error) {
		var n corev1.Node
		if err := env.Client.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
			return "", err
		}
		for _, c := range n.Status.Conditions {
			if string(c.Type) == v1alpha1.ConditionGPUHealAcceleratorHealthy {
				return string(c.Status), nil
			}
		}
		return "", nil
	}
	testproc.Eventually(t, 30*time.Second, "the agent publishing a healthy GPU condition", func(context.Context) (bool, error) {
		s, err := gpuCondition()
		return s == "True", err
	})

	setUpgradeState(ctx, t, env.Client, node, v1alpha1.DriverUpgradeDrainRequired)
	testproc.Eventually(t, 30*time.Second, "the agent closing the GPU backend", func(context.Context) (bool, error) {
		return drv.count().closes == 1, nil
	})
	drv.setLoaded(false) // the driver container unloads the module
	testproc.Eventually(t, 30*time.Second, "three collections while released", func(context.Context) (bool, error) {
		return pausedPasses.count() >= 3, nil
	})
	if s, err := gpuCondition(); err != nil || s != "True" {
		t.Fatalf("GPU condition %q (%v) while the driver is upgraded, want True", s, err)
	}

	drv.setLoaded(true)
	setUpgradeState(ctx, t, env.Client, node, v1alpha1.DriverUpgradeDone)
	testproc.Eventually(t, 30*time.Second, "the agent reading the new driver", func(context.Context) (bool, error) {
		c := drv.count()
		return c.opens == 2 && c.reads > 0, nil
	})
	if s, err := gpuCondition(); err != nil || s != "True" {
		t.Fatalf("GPU condition %q (%v) after the upgrade, want True", s, err)
	}
	if c := drv.count(); c.readsUnloaded > 0 {
		t.Errorf("the agent read the GPUs %d times while the driver was unloaded", c.readsUnloaded)
	}
}

func setUpgradeState(ctx context.Context, t *testing.T, c client.Client, node, state string) {
	t.Helper()
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{v1alpha1.LabelNvidiaDriverUpgradeState: state}}})
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}
	if err := c.Patch(ctx, n, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatalf("labelling %s %s=%s: %v", node, v1alpha1.LabelNvidiaDriverUpgradeState, state, err)
	}
}

// fakeDriver is a driver that can be unloaded: its backends fail to open
// and to read while it is.
type fakeDriver struct {
	mu                                  sync.Mutex
	loaded                              bool
	opens, closes, reads, readsUnloaded int
}

type driverCounts struct{ opens, closes, reads, readsUnloaded int }

func (d *fakeDriver) open() (gpu.Source, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.loaded {
		return nil, errors.New("libnvidia-ml.so.1: driver not loaded")
	}
	n, err := sim.New(sim.Options{NodeName: "upg", GPUs: 8, Seed: 1})
	if err != nil {
		return nil, err
	}
	d.opens++
	return &fakeDriverSource{Node: n, d: d}, nil
}

func (d *fakeDriver) setLoaded(v bool) { d.mu.Lock(); d.loaded = v; d.mu.Unlock() }

func (d *fakeDriver) count() driverCounts {
	d.mu.Lock()
	defer d.mu.Unlock()
	return driverCounts{d.opens, d.closes, d.reads, d.readsUnloaded}
}

type fakeDriverSource struct {
	*sim.Node
	d *fakeDriver
}

func (s *fakeDriverSource) Snapshot(ctx context.Context) (*gpu.NodeSnapshot, error) {
	s.d.mu.Lock()
	loaded := s.d.loaded
	if loaded {
		s.d.reads++
	} else {
		s.d.readsUnloaded++
	}
	s.d.mu.Unlock()
	if !loaded {
		return nil, errors.New("nvml: driver not loaded")
	}
	return s.Node.Snapshot(ctx)
}

func (s *fakeDriverSource) Close() error {
	s.d.mu.Lock()
	s.d.closes++
	s.d.mu.Unlock()
	return s.Node.Close()
}

// logCounter counts log records whose attributes mention match.
type logCounter struct {
	match   string
	onMatch func()
	mu      sync.Mutex
	n       int
}

func (l *logCounter) Enabled(context.Context, slog.Level) bool { return true }
func (l *logCounter) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logCounter) WithGroup(string) slog.Handler            { return l }
func (l *logCounter) Handle(_ context.Context, r slog.Record) error {
	hit := false
	r.Attrs(func(a slog.Attr) bool {
		hit = hit || strings.Contains(a.Value.String(), l.match)
		return !hit
	})
	if hit {
		l.mu.Lock()
		l.n++
		l.mu.Unlock()
		l.onMatch()
	}
	return nil
}

func (l *logCounter) count() int { l.mu.Lock(); defer l.mu.Unlock(); return l.n }
