package diagnose

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/gpu"
)

func TestAddGroupsAndSortsWorstFirst(t *testing.T) {
	t0 := time.Date(2025, 2, 23, 16, 0, 0, 0, time.UTC)
	var r Report
	r.Add(finding.Finding{Source: "kmsg", Code: "XID13", Xid: 13, GPU: "0000:38:00.0", Severity: finding.Warning, Action: finding.ActionRestartApp, Time: t0.Add(time.Minute), Message: "first"})
	r.Add(finding.Finding{Source: "kmsg", Code: "XID43", Xid: 43, GPU: "0000:38:00.0", Severity: finding.Info, Action: finding.ActionNone, Time: t0})
	r.Add(finding.Finding{Source: "kmsg", Code: "XID13", Xid: 13, GPU: "0000:38:00.0", Severity: finding.Fatal, Action: finding.ActionResetGPU, Time: t0, Message: "escalated"})
	r.Add(finding.Finding{Source: "kmsg", Code: "XID13", Xid: 13, GPU: "0000:3b:00.0", Severity: finding.Warning, Action: finding.ActionRestartApp, Time: t0})
	r.Sort()
	r.Add(finding.Finding{Source: "kmsg", Code: "XID43", Xid: 43, GPU: "0000:38:00.0", Severity: finding.Info, Action: finding.ActionNone, Time: t0.Add(time.Hour)})

	want := []Group{
		{Source: "kmsg", Code: "XID13", Xid: 13, GPU: "0000:38:00.0", Severity: finding.Fatal, Action: finding.ActionResetGPU, Count: 2, First: t0, Last: t0.Add(time.Minute), Message: "first"},
		{Source: "kmsg", Code: "XID13", Xid: 13, GPU: "0000:3b:00.0", Severity: finding.Warning, Action: finding.ActionRestartApp, Count: 1, First: t0, Last: t0},
		{Source: "kmsg", Code: "XID43", Xid: 43, GPU: "0000:38:00.0", Severity: finding.Info, Action: finding.ActionNone, Count: 2, First: t0, Last: t0.Add(time.Hour)},
	}
	if d := cmp.Diff(want, r.Findings); d != "" {
		t.Fatalf("groups (-want +got):\n%s", d)
	}
	if r.ExitCode() != ExitFatal {
		t.Errorf("exit %d, want %d", r.ExitCode(), ExitFatal)
	}
}

// TestFabricFindingsGroupByDevice: findings of the fabric leave GPU empty
// and name their adapter; one code on two adapters is two groups, so a
// report says which cable to look at.
func TestFabricFindingsGroupByDevice(t *testing.T) {
	var r Report
	for _, dev := range []string{"0000:41:00.1", "0000:41:00.1", "0000:c1:00.0"} {
		r.Add(finding.Finding{Source: "kmsg", Code: "MLX5_CABLE_UNPLUGGED", Device: dev, Severity: finding.Warning, Action: finding.ActionNone})
	}
	r.Sort()
	var got []string
	for _, g := range r.Findings {
		got = append(got, g.Device+"×"+string(rune('0'+g.Count)))
	}
	if d := cmp.Diff([]string{"0000:41:00.1×2", "0000:c1:00.0×1"}, got); d != "" {
		t.Errorf("groups (-want +got):\n%s", d)
	}
}

func TestExitCodes(t *testing.T) {
	for sev, want := range map[finding.Severity]int{finding.Info: ExitClean, finding.Unknown: ExitWarning, finding.Warning: ExitWarning, finding.Fatal: ExitFatal} {
		var r Report
		r.Add(finding.Finding{Code: "X", Severity: sev})
		if got := r.ExitCode(); got != want {
			t.Errorf("%s: exit %d, want %d", sev, got, want)
		}
	}
	if (&Report{}).ExitCode() != ExitClean {
		t.Error("empty report is not clean")
	}
}

func TestSnapshotFindings(t *testing.T) {
	ra := gpu.RecoveryNodeReboot
	s := &gpu.NodeSnapshot{
		ExpectedGPUs: 8, FoundGPUs: 7, DriverVersion: "570.133.20", KernelModuleVersion: "570.124.06",
		GPUs: []gpu.GPUSnapshot{
			{Index: 0, PCIBusID: "0000:18:00.0", Name: "H100", ECC: gpu.ECCCounts{VolatileUncorrected: gpu.U64(3)},
				RemappedRows: &gpu.RemappedRows{Failure: true, Pending: true}, RecoveryAction: &ra},
			{Index: 1, PCIBusID: "0000:2a:00.0", Name: "H100", Missing: true},
			{Index: 2, PCIBusID: "0000:3a:00.0", Name: "V100", ECC: gpu.ECCCounts{AggregateUncorrected: gpu.U64(1), VolatileUncorrected: gpu.U64(0)},
				RetiredPages: &gpu.RetiredPages{SingleBit: 50, DoubleBit: 10}, ResetRequired: gpu.Bool(true),
				Errors: []gpu.QueryError{{Query: "power", Message: "gpu 2: power: Unknown Error"}}},
		},
	}
	var got []string
	for _, f := range SnapshotFindings(s, "smi") {
		got = append(got, f.Code+"/"+string(f.Severity)+"/"+string(f.Action)+"@"+f.GPU)
	}
	want := []string{
		"GPU_MISSING/fatal/reboot@",
		"DRIVER_MISMATCH/fatal/reboot@",
		"DBE/fatal/reset-gpu@0000:18:00.0",
		"ROW_REMAP_FAILURE/fatal/replace@0000:18:00.0",
		"ROW_REMAP_PENDING/warning/reset-gpu@0000:18:00.0",
		"GPU_RECOVERY_ACTION/fatal/reboot@0000:18:00.0",
		"GPU_MISSING/fatal/reboot@0000:2a:00.0",
		"DBE_HISTORY/warning/none@0000:3a:00.0",
		"RETIRED_PAGES_LIMIT/fatal/replace@0000:3a:00.0",
		"RESET_REQUIRED/warning/reset-gpu@0000:3a:00.0",
		"GPU_QUERY_ERROR/warning/none@0000:3a:00.0",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("findings (-want +got):\n%s", d)
	}
}
