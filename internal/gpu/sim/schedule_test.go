package sim

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuheal/gpuheal/internal/testproc"
)

const demoSchedule = `
# A node degrades, then falls off the bus.
- at: 30s
  node: gpu-node-1
  gpu: 3
  fault: pcie-replay
  params: {count: 50}
- after: 1m
  node: gpu-node-1
  gpu: 3
  fault: xid
  params:
    code: 79
    message: "GPU has fallen off the bus."
- at: 10s
  fault: driver-version-change
  params: {version: "575.57.08"}
- after: 0s
  node: gpu-node-2
  gpu: 1
  fault: retired-pages
  params: {dbe: 1, pending: false}
`

func TestLoadSchedule(t *testing.T) {
	s, err := LoadSchedule(strings.NewReader(demoSchedule))
	if err != nil {
		t.Fatal(err)
	}
	want := Schedule{
		{At: 30 * time.Second, Node: "gpu-node-1", Fault: Fault{Kind: KindPCIeReplay, GPU: 3, Params: params{"count": "50"}}},
		{At: 90 * time.Second, Node: "gpu-node-1", Fault: Fault{Kind: KindXid, GPU: 3, Params: params{"code": "79", "message": "GPU has fallen off the bus."}}},
		{At: 10 * time.Second, Node: "*", Fault: Fault{Kind: KindDriverVersionChange, Params: params{"version": "575.57.08"}}},
		{At: 10 * time.Second, Node: "gpu-node-2", Fault: Fault{Kind: KindRetiredPages, GPU: 1, Params: params{"dbe": "1", "pending": "false"}}},
	}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Fatalf("schedule (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Schedule{want[2], want[0], want[1]}, s.ForNode("gpu-node-1")); diff != "" {
		t.Errorf("ForNode (-want +got):\n%s", diff)
	}
	for _, empty := range []string{"", "# nothing yet\n", "[]"} {
		if s, err := LoadSchedule(strings.NewReader(empty)); err != nil || len(s) != 0 {
			t.Errorf("LoadSchedule(%q) = %v, %v", empty, s, err)
		}
	}
}

func TestLoadScheduleErrors(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"not a list", "at: 5s", "schedule: want a list of entries with fields after, at, fault, gpu, node, params"},
		{"bad yaml", "- at: [", "schedule: yaml: line 1: did not find expected node content"},
		{"duplicate key", "- at: 1s\n  at: 2s\n  fault: sbe", `schedule: yaml: unmarshal errors:` + "\n" + `  line 2: key "at" already set in map`},
		{"empty entry", "- at: 1s\n  fault: sbe\n-", "schedule entries[1]: empty entry; want fields after, at, fault, gpu, node, params"},
		{"unknown field", "- at: 1s\n  fault: sbe\n  gpus: 2", `schedule entries[0]: unknown field "gpus" (known: after, at, fault, gpu, node, params)`},
		{"no time", "- fault: sbe", `schedule entries[0]: field "at" or "after" is required`},
		{"both times", "- at: 1s\n  after: 1s\n  fault: sbe", `schedule entries[0]: fields "at" and "after": give only one`},
		{"number for duration", "- at: 30\n  fault: sbe", `schedule entries[0]: field "at": want a duration like "90s" or "5m", got 30`},
		{"bad duration", "- after: soon\n  fault: sbe", `schedule entries[0]: field "after": want a duration like "90s" or "5m", got "soon"`},
		{"negative", "- at: -5s\n  fault: sbe", `schedule entries[0]: field "at": negative duration "-5s"`},
		{"overflow", "- at: 2000000h\n  fault: sbe\n- after: 2000000h\n  fault: sbe", `schedule entries[1]: field "after": schedule time overflows`},
		{"empty node", "- at: 1s\n  node: ''\n  fault: sbe", `schedule entries[0]: field "node": want a node name or "*", got ""`},
		{"gpu text", "- at: 1s\n  gpu: first\n  fault: sbe", `schedule entries[0]: field "gpu": want a GPU index 0–7, got "first"`},
		{"gpu range", "- at: 1s\n  gpu: 8\n  fault: sbe", `schedule entries[0]: field "gpu": want a GPU index 0–7, got 8`},
		{"no fault", "- at: 1s", `schedule entries[0]: field "fault" is required (one of dbe, driver-version-change, efa-errors, fabric-degraded-rate, fabric-device-missing, fabric-link-flap, fabric-manager-stopped, fabric-port-down, fabric-symbol-errors, fell-off-bus, gpu-missing, latent, nvlink-down, nvlink-errors, pcie-downgrade, pcie-replay, power-brake, recovery-action, retired-pages, row-remap-failure, row-remap-pending, sbe, thermal-slowdown, xid)`},
		{"unknown fault", "- at: 1s\n  fault: meltdown", `schedule entries[0]: field "fault": unknown fault kind "meltdown" (known: dbe, driver-version-change, efa-errors, fabric-degraded-rate, fabric-device-missing, fabric-link-flap, fabric-manager-stopped, fabric-port-down, fabric-symbol-errors, fell-off-bus, gpu-missing, latent, nvlink-down, nvlink-errors, pcie-downgrade, pcie-replay, power-brake, recovery-action, retired-pages, row-remap-failure, row-remap-pending, sbe, thermal-slowdown, xid)`},
		{"fault not a string", "- at: 1s\n  fault: [sbe]", `schedule entries[0]: field "fault": want a fault kind, got ["sbe"]`},
		{"params not a map", "- at: 1s\n  fault: sbe\n  params: [1]", `schedule entries[0]: field "params": want a map of names to values, got [1]`},
		{"nested param", "- at: 1s\n  fault: sbe\n  params: {count: [1]}", `schedule entries[0]: field "params": param "count": want a string, number or boolean, got [1]`},
		{"boolean param name", "- at: 1s\n  fault: sbe\n  params: {on: 1}", `schedule entries[0]: field "params": param name "true" came from a YAML boolean (y, n, yes, no, on, off); quote the name`},
		{"null param", "- at: 1s\n  fault: sbe\n  params: {count: null}", `schedule entries[0]: field "params": param "count": want a string, number or boolean, got null`},
		{"bad param", "- at: 1s\n  fault: nvlink-down\n  params: {link: x}", `schedule entries[0]: fault nvlink-down: param "link": bad value "x": want a whole number`},
		{"missing param", "- at: 1s\n  fault: sbe\n- at: 2s\n  fault: xid", `schedule entries[1]: fault xid: param "code": required`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadSchedule(strings.NewReader(tc.yaml))
			if err == nil || err.Error() != tc.want {
				t.Fatalf("LoadSchedule error:\n got %v\nwant %s", err, tc.want)
			}
		})
	}
	big := strings.Repeat("#", maxScheduleBytes+1)
	if _, err := LoadSchedule(strings.NewReader(big)); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("oversized schedule: %v", err)
	}
}

func loadDemo(t *testing.T) Schedule {
	t.Helper()
	s, err := LoadSchedule(strings.NewReader(demoSchedule))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// ApplyDue fires this node's entries, each once, when their time comes.
func TestApplyDue(t *testing.T) {
	n, clk := newTestNode(t, Options{NodeName: "gpu-node-1", Schedule: loadDemo(t)})
	kinds := func(es []Entry) (out []Kind) {
		for _, e := range es {
			out = append(out, e.Fault.Kind)
		}
		return out
	}
	steps := []struct {
		step time.Duration
		want []Kind
	}{
		{9 * time.Second, nil},
		{time.Second, []Kind{KindDriverVersionChange}},
		{10 * time.Second, nil},
		{10 * time.Second, []Kind{KindPCIeReplay}},
		{time.Hour, []Kind{KindXid}},
		{time.Hour, nil},
	}
	for i, st := range steps {
		clk.Step(st.step)
		got, err := n.ApplyDue(clk.Now())
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(st.want, kinds(got)); diff != "" {
			t.Errorf("step %d (-want +got):\n%s", i, diff)
		}
	}
	s := snapshot(t, n)
	if *s.GPUs[3].PCIe.ReplayCounter != 50 || s.GPUs[3].XidTotals[79] != 1 || s.DriverVersion != "575.57.08" {
		t.Errorf("replays %d, xid totals %v, driver %s", *s.GPUs[3].PCIe.ReplayCounter, s.GPUs[3].XidTotals, s.DriverVersion)
	}
	// Records carry the time they were applied, counted from boot (600s
	// before New): 10s for the first, 3630s for the last.
	recs := n.KernelLog(0)
	if recs[0].Usec != 610_000_000 || recs[len(recs)-1].Usec != 4_230_000_000 {
		t.Errorf("first/last usec = %d/%d", recs[0].Usec, recs[len(recs)-1].Usec)
	}
}

// Snapshot applies due entries itself, so an agent polling the sim needs
// no extra goroutine.
func TestSnapshotAppliesSchedule(t *testing.T) {
	n, clk := newTestNode(t, Options{NodeName: "gpu-node-2", Model: "V100", Schedule: loadDemo(t)})
	if s := snapshot(t, n); s.DriverVersion != "570.133.20" {
		t.Fatalf("driver changed before its time: %s", s.DriverVersion)
	}
	clk.Step(10 * time.Second)
	s := snapshot(t, n)
	if s.DriverVersion != "575.57.08" || s.GPUs[1].RetiredPages.DoubleBit != 1 || len(s.GPUs[1].XidEvents) != 1 {
		t.Errorf("driver %s, retired %v, events %v", s.DriverVersion, s.GPUs[1].RetiredPages, s.GPUs[1].XidEvents)
	}
}

func TestScheduleCheckedAgainstNode(t *testing.T) {
	s := Schedule{{At: time.Minute, Node: "*", Fault: Fault{Kind: KindDBE, GPU: 5}}}
	_, err := New(Options{GPUs: 4, Schedule: s})
	want := "sim: schedule entry 0 for node sim-0 (at 1m0s): fault dbe: gpu 5 out of range (node sim-0 has 4 GPUs)"
	if err == nil || err.Error() != want {
		t.Errorf("New error:\n got %v\nwant %s", err, want)
	}
	// Entries for other nodes are not this node's business.
	s[0].Node = "elsewhere"
	if _, err := New(Options{GPUs: 4, Schedule: s}); err != nil {
		t.Errorf("New with another node's entry: %v", err)
	}
}

// Run applies entries on the fake clock's timers: the test steps the
// clock and polls the kernel log, never sleeping a fixed time.
func TestRun(t *testing.T) {
	n, clk := newTestNode(t, Options{NodeName: "gpu-node-1"})
	done := make(chan error, 1)
	go func() { done <- n.Run(t.Context()) }()

	// Run waits on nothing until a schedule arrives.
	if err := n.SetSchedule(loadDemo(t)); err != nil {
		t.Fatal(err)
	}
	testproc.EventuallyTrue(t, 10*time.Second, "Run to wait for the first entry", clk.HasWaiters)
	clk.Step(10 * time.Second)
	testproc.EventuallyTrue(t, 10*time.Second, "driver change logged", func() bool { return len(n.KernelLog(0)) == 1 })
	testproc.EventuallyTrue(t, 10*time.Second, "Run to wait for the next entry", clk.HasWaiters)
	clk.Step(20 * time.Second)
	testproc.EventuallyTrue(t, 10*time.Second, "AER reports logged", func() bool { return len(n.KernelLog(0)) == 1+4*maxAERReports })
	testproc.EventuallyTrue(t, 10*time.Second, "Run to wait for the last entry", clk.HasWaiters)
	clk.Step(time.Minute)
	testproc.EventuallyTrue(t, 10*time.Second, "Xid 79 logged", func() bool {
		recs := n.KernelLog(0)
		return len(recs) > 0 && strings.Contains(recs[len(recs)-1].Message, "): 79, ")
	})

	// Close, not the context, ends this Run: both must stop it.
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
}

func TestRunStopsWithContext(t *testing.T) {
	n, _ := newTestNode(t, Options{})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
}

func TestRunNeedsClock(t *testing.T) {
	n, err := New(Options{Clock: passiveOnly{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Run(t.Context()); err == nil || !strings.Contains(err.Error(), "clock.Clock") {
		t.Errorf("Run = %v", err)
	}
}

type passiveOnly struct{}

func (passiveOnly) Now() time.Time                   { return t0 }
func (passiveOnly) Since(ts time.Time) time.Duration { return t0.Sub(ts) }
