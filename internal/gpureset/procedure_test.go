package gpureset

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/gpu"
)

const bus3 = "0000:5d:00.0"

// fakeDevice answers like nvidia-smi would and records the calls.
type fakeDevice struct {
	pids     [][]int // Processes answers, one per call; the last repeats
	pmErr    error
	out      string
	failed   bool
	resetErr error
	block    bool // Reset waits for ctx
	calls    []string
}

func (d *fakeDevice) GPUProcesses(_ context.Context, bus string) ([]int, error) {
	d.calls = append(d.calls, "processes "+bus)
	if len(d.pids) == 0 {
		return nil, nil
	}
	p := d.pids[0]
	if len(d.pids) > 1 {
		d.pids = d.pids[1:]
	}
	return p, nil
}

func (d *fakeDevice) SetPersistenceMode(_ context.Context, bus string, on bool) error {
	d.calls = append(d.calls, "pm "+bus+" "+map[bool]string{true: "on", false: "off"}[on])
	return d.pmErr
}

func (d *fakeDevice) ResetGPU(ctx context.Context, bus string) (string, bool, error) {
	d.calls = append(d.calls, "reset "+bus)
	if d.block {
		<-ctx.Done()
		return "", true, ctx.Err()
	}
	return d.out, d.failed, d.resetErr
}

func node(mod func(*gpu.GPUSnapshot)) *gpu.NodeSnapshot {
	s := &gpu.NodeSnapshot{NVSwitch: true, FabricManager: "running"}
	for i, b := range []string{"0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0", bus3} {
		g := gpu.GPUSnapshot{Index: i, UUID: "GPU-" + b, PCIBusID: b, Name: "NVIDIA H100 80GB HBM3",
			PersistenceMode: gpu.Bool(true), ResetRequired: gpu.Bool(false), FabricState: "Completed",
			ECC: gpu.ECCCounts{VolatileUncorrected: gpu.U64(0)}, RemappedRows: &gpu.RemappedRows{}}
		if i == 3 && mod != nil {
			mod(&g)
		}
		s.GPUs = append(s.GPUs, g)
	}
	return s
}

var gpu3 = []v1alpha1.GPURef{{Index: 3, UUID: "GPU-" + bus3, BusID: "00000000:5D:00.0"}}

func proc(d Device, after *gpu.NodeSnapshot, released *int) *Procedure {
	return &Procedure{
		Device:   d,
		Release:  func([]string) func() { *released++; return func() { *released-- } },
		Snapshot: func(context.Context) (*gpu.NodeSnapshot, error) { return after, nil },
		// Bounded waits, short: the tests that run them out stay fast.
		ProcessWait: 30 * time.Millisecond, ResetTimeout: 30 * time.Millisecond, VerifyWait: 30 * time.Millisecond,
		PollInterval: time.Millisecond,
	}
}

func stepNames(r Result) []string {
	var out []string
	for _, s := range r.Steps {
		out = append(out, s.Name)
	}
	return out
}

// A clean reset runs every step in order, turns persistence mode off and
// on again around the reset, releases NVML and reopens it.
func TestResetSucceeds(t *testing.T) {
	d := &fakeDevice{pids: [][]int{{4242}, nil}, out: "GPU 00000000:5D:00.0 was successfully reset.\n"}
	released := 0
	before := node(func(g *gpu.GPUSnapshot) { g.ECC.VolatileUncorrected = gpu.U64(2); g.ResetRequired = gpu.Bool(true) })
	p := proc(d, node(nil), &released)
	var releasedFor []string
	release := p.Release
	p.Release = func(buses []string) func() { releasedFor = buses; return release(buses) }
	r := p.Run(context.Background(), gpu3, before)
	if !slices.Equal(releasedFor, []string{bus3}) {
		t.Errorf("NVML released for %v, want the GPU being reset [%s]", releasedFor, bus3)
	}
	if r.Outcome != v1alpha1.GPUResetSucceeded || r.Reason != "" {
		t.Fatalf("outcome %s %s %q; steps %+v", r.Outcome, r.Reason, r.Message, r.Steps)
	}
	want := []string{StepFabric, StepRelease, StepProcesses, StepPersistence, StepReset, StepRestore, StepReopen, StepVerify}
	if got := stepNames(r); !slices.Equal(got, want) {
		t.Errorf("steps %v, want %v", got, want)
	}
	for _, s := range r.Steps {
		if !s.OK || s.Time.IsZero() {
			t.Errorf("step %+v: want ok and stamped", s)
		}
	}
	wantCalls := []string{"processes " + bus3, "processes " + bus3, "pm " + bus3 + " off", "reset " + bus3, "pm " + bus3 + " on"}
	if !slices.Equal(d.calls, wantCalls) {
		t.Errorf("calls %v, want %v", d.calls, wantCalls)
	}
	if released != 0 {
		t.Errorf("NVML released %d times more than reopened", released)
	}
	if !slices.Equal(r.Buses, []string{bus3}) {
		t.Errorf("resolved buses %v, want [%s]", r.Buses, bus3)
	}
}

// Every way a reset fails names its reason, stops at its step, and still
// puts persistence mode back and reopens NVML.
func TestResetFailures(t *testing.T) {
	ok := "GPU 00000000:5D:00.0 was successfully reset.\n"
	cases := []struct {
		name   string
		dev    *fakeDevice
		before func(*gpu.GPUSnapshot)
		node   func(*gpu.NodeSnapshot)
		after  func(*gpu.GPUSnapshot)
		refs   []v1alpha1.GPURef
		reason string
		step   string
	}{
		{name: "processes stay", dev: &fakeDevice{pids: [][]int{{7, 8}}}, reason: v1alpha1.ResetReasonInUse, step: StepProcesses},
		{name: "in use by another client", dev: &fakeDevice{out: "The following GPUs could not be reset:\n  GPU 00000000:5D:00.0: In use by another client\n", failed: true},
			reason: v1alpha1.ResetReasonInUse, step: StepReset},
		{name: "primary", dev: &fakeDevice{out: "GPU 00000000:5D:00.0 is the primary GPU.\n", failed: true}, reason: v1alpha1.ResetReasonPrimaryGPU, step: StepReset},
		{name: "not supported", dev: &fakeDevice{out: "  GPU 00000000:5D:00.0: Not Supported\n", failed: true}, reason: v1alpha1.ResetReasonNotSupported, step: StepReset},
		{name: "no device", dev: &fakeDevice{out: "No devices were found\n", failed: true}, reason: v1alpha1.ResetReasonNotFound, step: StepReset},
		{name: "other error", dev: &fakeDevice{out: "Unknown Error\n", failed: true}, reason: v1alpha1.ResetReasonError, step: StepReset},
		{name: "tool missing", dev: &fakeDevice{resetErr: errors.New("exec: nvidia-smi: not found")}, reason: v1alpha1.ResetReasonError, step: StepReset},
		{name: "timeout", dev: &fakeDevice{block: true}, reason: v1alpha1.ResetReasonTimeout, step: StepReset},
		{name: "persistence mode stuck", dev: &fakeDevice{pmErr: errors.New("Insufficient Permissions")}, reason: v1alpha1.ResetReasonError, step: StepPersistence},
		{name: "volta baseboard", dev: &fakeDevice{out: ok}, before: func(g *gpu.GPUSnapshot) { g.Name = "Tesla V100-SXM3-32GB" },
			reason: v1alpha1.ResetReasonNotSupported, step: StepFabric},
		{name: "ampere without fabric manager", dev: &fakeDevice{out: ok}, before: func(g *gpu.GPUSnapshot) { g.Name = "NVIDIA A100-SXM4-80GB" },
			node: func(s *gpu.NodeSnapshot) { s.FabricManager = "stopped" }, reason: v1alpha1.ResetReasonNotSupported, step: StepFabric},
		{name: "fault remains", dev: &fakeDevice{out: ok}, after: func(g *gpu.GPUSnapshot) { g.ECC.VolatileUncorrected = gpu.U64(1) },
			reason: v1alpha1.ResetReasonFaultRemains, step: StepVerify},
		{name: "remap pending", dev: &fakeDevice{out: ok}, after: func(g *gpu.GPUSnapshot) { g.RemappedRows.Pending = true },
			reason: v1alpha1.ResetReasonFaultRemains, step: StepVerify},
		{name: "fabric not back", dev: &fakeDevice{out: ok}, after: func(g *gpu.GPUSnapshot) { g.FabricState = "In Progress" },
			reason: v1alpha1.ResetReasonFabric, step: StepVerify},
		{name: "another GPU answers", dev: &fakeDevice{out: ok}, after: func(g *gpu.GPUSnapshot) { g.UUID = "GPU-other" },
			reason: v1alpha1.ResetReasonNotFound, step: StepVerify},
		{name: "gone after", dev: &fakeDevice{out: ok}, after: func(g *gpu.GPUSnapshot) { g.Missing = true },
			reason: v1alpha1.ResetReasonNotFound, step: StepVerify},
		{name: "wrong UUID asked", dev: &fakeDevice{out: ok}, refs: []v1alpha1.GPURef{{Index: 3, UUID: "GPU-else"}},
			reason: v1alpha1.ResetReasonRefused, step: StepFabric},
		{name: "no such index", dev: &fakeDevice{out: ok}, refs: []v1alpha1.GPURef{{Index: 7}}, reason: v1alpha1.ResetReasonNotFound, step: StepFabric},
		{name: "nothing asked", dev: &fakeDevice{out: ok}, refs: []v1alpha1.GPURef{}, reason: v1alpha1.ResetReasonRefused},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before, after := node(c.before), node(c.after)
			if c.node != nil {
				c.node(before)
			}
			refs := c.refs
			if refs == nil {
				refs = gpu3
			}
			released := 0
			r := proc(c.dev, after, &released).Run(context.Background(), refs, before)
			if r.Outcome != v1alpha1.GPUResetFailed || r.Reason != c.reason || r.Message == "" {
				t.Fatalf("outcome %s reason %s %q; want Failed %s", r.Outcome, r.Reason, r.Message, c.reason)
			}
			if c.step != "" {
				var last string
				for _, s := range r.Steps {
					if !s.OK {
						last = s.Name
					}
				}
				if last != c.step {
					t.Errorf("failed step %q, want %q; steps %+v", last, c.step, r.Steps)
				}
			}
			if released != 0 {
				t.Errorf("NVML left released")
			}
			off := slices.Contains(c.dev.calls, "pm "+bus3+" off")
			on := slices.Contains(c.dev.calls, "pm "+bus3+" on")
			if off && !on && c.dev.pmErr == nil {
				t.Errorf("persistence mode left off: calls %v", c.dev.calls)
			}
			if c.step == StepFabric && slices.ContainsFunc(c.dev.calls, func(s string) bool { return strings.HasPrefix(s, "reset") }) {
				t.Errorf("reset ran though refused: %v", c.dev.calls)
			}
		})
	}
}

// The fabric manager's rules by generation.
func TestFabricAllows(t *testing.T) {
	g := func(name string) *gpu.GPUSnapshot { return &gpu.GPUSnapshot{Name: name} }
	cases := []struct {
		nvswitch bool
		fm, name string
		ok       bool
	}{
		{false, "", "Tesla V100-SXM2-16GB", true},
		{true, "running", "Tesla V100-SXM3-32GB", false},
		{true, "running", "NVIDIA A100-SXM4-80GB", true},
		{true, "stopped", "NVIDIA A100-SXM4-80GB", false},
		{true, "stopped", "NVIDIA H100 80GB HBM3", true},
		{true, "not-installed", "NVIDIA B200", true},
		{true, "running", "Mystery GPU", true},
		{true, "stopped", "Mystery GPU", false},
	}
	for _, c := range cases {
		ok, why := FabricAllows(&gpu.NodeSnapshot{NVSwitch: c.nvswitch, FabricManager: c.fm}, g(c.name))
		if ok != c.ok || why == "" {
			t.Errorf("%s nvswitch=%v fm=%s: %v (%s), want %v", c.name, c.nvswitch, c.fm, ok, why, c.ok)
		}
	}
}
