package detect

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuheal/gpuheal/internal/finding"
)

// The fixtures are real captures from public repositories, copied here.

func TestFixtureDmesgTXid119(t *testing.T) {
	got := detectFile(t, "testdata/dmesg-T-xid119.log")
	at := func(hms string) time.Time {
		ts, err := time.Parse("2006-01-02 15:04:05", "2025-02-23 "+hms)
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	x := func(hms, pidName, fn string) finding.Finding {
		return finding.Finding{Source: "kmsg", Code: "XID119", Xid: 119, GPU: "0000:9b:00.0",
			Severity: fatal, Action: resetGPU, Time: at(hms),
			Message: "NVRM: Xid (PCI:0000:9b:00): 119, " + pidName + ", Timeout after 6s of waiting for RPC response from GPU4 GSP! Expected function " + fn}
	}
	// The RPC history tables, call trace and rate-limit notice around
	// the Xids are not findings.
	want := []finding.Finding{
		x("16:24:18", "pid=2024380, name=nvidia-smi", "103 (GSP_RM_ALLOC) (0x2081 0x4)."),
		x("16:24:24", "pid=2024380, name=nvidia-smi", "10 (FREE) (0xa55a0210 0x0)."),
		x("16:24:30", "pid=2024380, name=nvidia-smi", "10 (FREE) (0xa55a0090 0x0)."),
		x("16:27:12", "pid=1263500, name=cache_mgr_main", "76 (GSP_RM_CONTROL) (0x20801813 0x4c)."),
		x("16:30:13", "pid=1240590, name=gpud", "76 (GSP_RM_CONTROL) (0x20803032 0x58c)."),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestFixtureDmesgISOXid13OOM(t *testing.T) {
	got := detectFile(t, "testdata/dmesg-iso-xid13-oom.log")
	type short struct {
		Code string
		GPU  string
		Sev  finding.Severity
		Act  finding.Action
	}
	var gotShort []short
	for _, f := range got {
		gotShort = append(gotShort, short{f.Code, f.GPU, f.Severity, f.Action})
	}
	var want []short
	// Sixteen Xid 13 lines of one exception within 2ms: one occurrence
	// for the counter, so all stay warnings.
	for range 16 {
		want = append(want, short{"XID13", "0000:38:00.0", warning, restartApp})
	}
	want = append(want, short{"XID43", "0000:38:00.0", info, none})
	// The capture's OOM lines are a minute apart each, so none folds:
	// oom-kill (no pid), Killed 123, Kill 456, Killed 123, oom-kill
	// pid=863987, oom-kill (no pid). The oom_reaper line is not a kill.
	for range 6 {
		want = append(want, short{"OOM_KILL", "", warning, none})
	}
	if diff := cmp.Diff(want, gotShort); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if first := got[0]; !first.Time.Equal(time.Date(2025, 1, 21, 4, 41, 44, 283302000, time.UTC)) ||
		!strings.HasSuffix(first.Message, "Graphics SM Global Exception on (GPC 8, TPC 5, SM 1): Multiple Warp Errors") {
		t.Errorf("first finding %+v: wrong time or message", first)
	}
}

func TestFixtureDevKmsgRaw(t *testing.T) {
	// The capture holds NVSwitch opens, link-up notices and perf
	// throttling: no Xid, no SXid, nothing to report.
	if got := detectFile(t, "testdata/devkmsg-raw.log"); len(got) != 0 {
		t.Errorf("findings in a capture without faults: %+v", got)
	}
}
