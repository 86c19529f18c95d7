package remediation

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// TestCheckJobName: the name is the same for the same incident, attempt
// and check (a restarted controller finds its Job), differs otherwise, and
// fits a label value for the longest check name.
func TestCheckJobName(t *testing.T) {
	long := strings.Repeat("c", 20)
	a := checkJobName("0b8c3d4e-0000-4000-8000-000000000001", 1, long)
	if len(a) > 63 || a != checkJobName("0b8c3d4e-0000-4000-8000-000000000001", 1, long) {
		t.Fatalf("name %q (%d chars): want at most 63, the same each time", a, len(a))
	}
	if !strings.HasPrefix(a, "gpuheal-check-") || !strings.HasSuffix(a, "-"+long) || len(a) != len("gpuheal-check-")+10+1+20 {
		t.Errorf("name %q: want gpuheal-check-<10 hex>-<check>", a)
	}
	for _, other := range []string{
		checkJobName("0b8c3d4e-0000-4000-8000-000000000001", 2, long),
		checkJobName("0b8c3d4e-0000-4000-8000-000000000002", 1, long),
		checkJobName("0b8c3d4e-0000-4000-8000-000000000001", 1, "dcgm"),
	} {
		if other == a {
			t.Errorf("%q for another attempt, incident or check", other)
		}
	}
}

// TestMatchFloor: the first floor whose product the label contains,
// ignoring case; "*" matches any product, even none.
// TestCheckNodeLabel: a node name fits the label whole up to 63
// characters; a longer one is cut and told apart by a hash, a valid label
// value either way.
func TestCheckNodeLabel(t *testing.T) {
	long := strings.Repeat("ip-10-0-0-1.", 8) + "ec2.internal"
	for _, name := range []string{"gpu-0000", strings.Repeat("a", 63), long, long + "x", strings.Repeat("a", 51) + ".b" + strings.Repeat("c", 20)} {
		got := v1alpha1.NodeLabelValue(name)
		if errs := validation.IsValidLabelValue(got); len(errs) > 0 {
			t.Errorf("%s: label %q: %v", name, got, errs)
		}
		if len(name) <= 63 && got != name {
			t.Errorf("%s: label %q, want the name", name, got)
		}
	}
	if v1alpha1.NodeLabelValue(long) == v1alpha1.NodeLabelValue(long+"x") {
		t.Error("two long names share a label")
	}
}

func TestMatchFloor(t *testing.T) {
	floors := []v1alpha1.BandwidthFloor{{Product: "H100", MinGBps: 350}, {Product: "h200", MinGBps: 400}, {Product: "*", MinGBps: 100}}
	for product, want := range map[string]int32{
		"NVIDIA-H100-80GB-HBM3": 350, "NVIDIA-H200": 400, "NVIDIA-A100-SXM4-80GB": 100, "": 100,
	} {
		if f, ok := matchFloor(floors, product); !ok || f.MinGBps != want {
			t.Errorf("product %q: floor %+v %v, want %d", product, f, ok, want)
		}
	}
	if f, ok := matchFloor(floors[:2], "NVIDIA-B200"); ok {
		t.Errorf("B200 matched %+v", f)
	}
	if f, ok := matchFloor(floors[:2], ""); ok {
		t.Errorf("a node without a product label matched %+v", f)
	}
}

func report(t *testing.T, made time.Time, bootID string, failing ...string) string {
	t.Helper()
	rep := v1alpha1.AgentChecks{Time: metav1.NewTime(made), BootID: bootID}
	for _, name := range v1alpha1.AgentCheckNames {
		passed := true
		for _, f := range failing {
			passed = passed && f != name
		}
		rep.Checks = append(rep.Checks, v1alpha1.AgentCheck{Name: name, Passed: passed, Value: "x", Expected: "y", Message: "bad\x1b[31m"})
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestJudgeAgentReport: what passes, what waits, what fails.
func TestJudgeAgentReport(t *testing.T) {
	since := time.Date(2026, 12, 1, 12, 0, 0, 500_000_000, time.UTC)
	fresh := since.Add(time.Second)
	partial := `{"time":"2026-12-01T12:00:01Z","checks":[{"name":"GPUsPresent","passed":true}]}`
	for _, tc := range []struct {
		name    string
		raw     string
		absent  bool
		bootID  string
		names   []string
		outcome v1alpha1.CheckOutcome // empty: waits
		says    string
	}{
		{name: "all pass", raw: report(t, fresh, "b1"), bootID: "b1", outcome: v1alpha1.CheckPassed, says: "passes GPUsPresent"},
		{name: "same second as the start", raw: report(t, since.Truncate(time.Second), ""), outcome: v1alpha1.CheckPassed},
		{name: "before the start", raw: report(t, since.Add(-time.Second), ""), says: "before the check began"},
		{name: "another boot", raw: report(t, fresh, "b0"), bootID: "b1", says: "of boot b0"},
		{name: "no report", absent: true, says: "no report"},
		{name: "one fails", raw: report(t, fresh, "", v1alpha1.AgentCheckNVLinksUp), outcome: v1alpha1.CheckFailed, says: "NVLinksUp: bad [31m (found x, expected y)"},
		{name: "a failure not asked about", raw: report(t, fresh, "", v1alpha1.AgentCheckNVLinksUp), names: []string{v1alpha1.AgentCheckGPUsPresent}, outcome: v1alpha1.CheckPassed},
		{name: "a named check absent", raw: partial, names: []string{v1alpha1.AgentCheckFabricHealthy}, outcome: v1alpha1.CheckFailed, says: "FabricHealthy: absent"},
		// Unreadable reports wait like no report (the check's timeout ends
		// them as Error), the parse error in what the check waits for.
		{name: "not JSON", raw: "{", says: "unreadable: annotation gpuheal.io/agent-checks: not a report of the agent's checks: cut short"},
		{name: "empty", raw: "", says: "empty"},
		{name: "unknown field", raw: `{"time":"2026-12-01T12:00:01Z","checks":[{"name":"GPUsPresent","passed":true,"gpus":8}],"passed":true,"agentVersion":"9.9"}`,
			names: []string{v1alpha1.AgentCheckGPUsPresent}, outcome: v1alpha1.CheckPassed, says: "passes GPUsPresent"},
		{name: "trailing data", raw: partial + `{}`, says: "data after the report"},
		{name: "no time", raw: `{"checks":[]}`, says: "no time"},
		{name: "duplicate", raw: `{"time":"2026-12-01T12:00:01Z","checks":[{"name":"a","passed":false},{"name":"a","passed":true}]}`, says: `"a" twice`},
		{name: "huge", raw: `{"time":"2026-12-01T12:00:01Z","checks":[],"x":"` + strings.Repeat("a", maxAgentReport) + `"}`, says: "more than the 16384"},
		{name: "wrong type", raw: `{"time":"2026-12-01T12:00:01Z","checks":[{"name":"a","passed":"yes"}]}`, says: "at byte"},
		{name: "unreadable with control characters", raw: "{\"time\":\x1b[2J", says: "unreadable"},
	} {
		v := judgeAgentReport(tc.raw, !tc.absent, since, tc.bootID, tc.names)
		said := v.message + v.pending
		if v.outcome != tc.outcome || !strings.Contains(said, tc.says) {
			t.Errorf("%s: outcome %q, said %q; want %q saying %q", tc.name, v.outcome, said, tc.outcome, tc.says)
		}
		if strings.ContainsRune(said, 0x1b) || strings.ContainsRune(v.excerpt, 0x1b) {
			t.Errorf("%s: a control character from the node reached the message or excerpt: %q, %q", tc.name, said, v.excerpt)
		}
		if len(v.excerpt) > 2048 {
			t.Errorf("%s: excerpt of %d bytes", tc.name, len(v.excerpt))
		}
	}
}

// TestCheckOptionsValidate: flags the controller cannot run checks with.
func TestCheckOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		o    CheckOptions
		says string
	}{
		{CheckOptions{Namespace: "Bad_NS"}, "--check-namespace"},
		{CheckOptions{Images: map[v1alpha1.CheckKind]string{v1alpha1.CheckNCCL: "a b"}}, "--check-image-nccl"},
		{CheckOptions{JobsManagedBy: "simfleet"}, "--check-jobs-managed-by"},
	} {
		if err := tc.o.Validate(); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%+v: %v, want an error naming %s", tc.o, err, tc.says)
		}
	}
	ok := CheckOptions{Namespace: "gpuheal", JobsManagedBy: "gpuheal.io/simfleet"}.withDefaults()
	if err := ok.Validate(); err != nil || ok.Images[v1alpha1.CheckDCGM] != DefaultCheckImageDCGM {
		t.Errorf("defaults: %v, images %v", err, ok.Images)
	}
}

// FuzzParseAgentReport: the annotation is written by the node, which may be
// an attacker's: whatever it holds, judging it ends in an outcome or a
// wait with a bounded, single-line message, never a panic.
func FuzzParseAgentReport(f *testing.F) {
	since := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	f.Add(report(&testing.T{}, since, "b"))
	f.Add(report(&testing.T{}, since, "", v1alpha1.AgentCheckFabricHealthy))
	f.Add(`{"time":"2026-12-01T12:00:01Z","checks":[{"name":"a","passed":"yes"}]}`)
	f.Add(`{"time":null,"checks":null}`)
	f.Add("")
	f.Fuzz(func(t *testing.T, raw string) {
		v := judgeAgentReport(raw, true, since, "b", nil)
		if (v.outcome == "") == (v.pending == "") {
			t.Fatalf("outcome %q and pending %q: want exactly one", v.outcome, v.pending)
		}
		if len(v.message) > 1024+len(v.floor) || len(v.value) > 160 || len(v.excerpt) > 2048 {
			t.Fatalf("unbounded verdict: message %d, value %d, excerpt %d bytes", len(v.message), len(v.value), len(v.excerpt))
		}
		if v.outcome == v1alpha1.CheckPassed {
			rep, err := parseAgentReport(raw)
			if err != nil || rep.Time.Before(&metav1.Time{Time: since}) {
				t.Fatalf("passed a report that does not parse or is stale: %v", err)
			}
		}
	})
}
