package nodestatus

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/agent/kubecore/kubecorefake"
	"github.com/gpuheal/gpuheal/internal/analyzer"
)

func report(at time.Time, passed bool) v1alpha1.AgentChecks {
	return v1alpha1.AgentChecks{Time: metav1.NewTime(at), BootID: "b00t", Checks: []v1alpha1.AgentCheck{
		{Name: v1alpha1.AgentCheckGPUsPresent, Passed: passed, Value: "8 GPUs", Expected: "8 GPUs"}}}
}

func shownReport(t *testing.T, api *kubecorefake.API) v1alpha1.AgentChecks {
	t.Helper()
	v, ok := api.Annotation(v1alpha1.AnnotationAgentChecks)
	if !ok {
		t.Fatal("the node shows no checks report")
	}
	var r v1alpha1.AgentChecks
	if err := json.Unmarshal([]byte(v), &r); err != nil {
		t.Fatalf("the node's checks report %q: %v", v, err)
	}
	return r
}

func reportWrites(api *kubecorefake.API) int {
	n := 0
	for _, b := range api.NodePatches() {
		if strings.Contains(b, v1alpha1.AnnotationAgentChecks) {
			n++
		}
	}
	return n
}

// TestChecksReportIsRewrittenOnChangeAndAfterTheInterval: the report lands
// with the first write, is not rewritten while it judges the same and is
// younger than the interval, and is rewritten at once when a result
// changes and again when the interval has passed, with the newest time.
func TestChecksReportIsRewrittenOnChangeAndAfterTheInterval(t *testing.T) {
	api := startFake(t, "gpu-0")
	t0 := time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	p := NewConditions(api.Client, "gpu-0", clk, slog.New(slog.DiscardHandler))
	p.ReportChecksEvery(30 * time.Second)
	p.Set([]analyzer.ConditionStatus{{Type: v1alpha1.ConditionGPUHealAcceleratorHealthy, Status: analyzer.StatusTrue}}, 8, 0)

	p.SetChecks(report(t0, true))
	mustSync(t, p)
	if r := shownReport(t, api); !r.Time.Time.Equal(t0) || r.BootID != "b00t" || len(r.Checks) != 1 || !r.Checks[0].Passed {
		t.Fatalf("first report %+v", r)
	}

	clk.Step(10 * time.Second)
	p.SetChecks(report(clk.Now(), true))
	mustSync(t, p)
	if n := reportWrites(api); n != 1 {
		t.Errorf("the same report 10s later was written again (%d writes)", n)
	}

	clk.Step(5 * time.Second)
	p.SetChecks(report(clk.Now(), false))
	mustSync(t, p)
	if r := shownReport(t, api); r.Checks[0].Passed || !r.Time.Time.Equal(clk.Now()) {
		t.Errorf("a changed result was not written at once: %+v", r)
	}

	clk.Step(29 * time.Second)
	p.SetChecks(report(clk.Now(), false))
	mustSync(t, p)
	if n := reportWrites(api); n != 2 {
		t.Errorf("the same report 29s after the last write was written again (%d writes)", n)
	}
	clk.Step(time.Second)
	p.SetChecks(report(clk.Now(), false))
	mustSync(t, p)
	if r := shownReport(t, api); !r.Time.Time.Equal(clk.Now()) || reportWrites(api) != 3 {
		t.Errorf("a report as old as the interval was not rewritten: %+v after %d writes", r, reportWrites(api))
	}
}

// TestChecksReportOff: with interval 0 no report is written.
func TestChecksReportOff(t *testing.T) {
	api := startFake(t, "gpu-0")
	p := NewConditions(api.Client, "gpu-0", clocktesting.NewFakeClock(time.Now()), slog.New(slog.DiscardHandler))
	p.Set([]analyzer.ConditionStatus{{Type: v1alpha1.ConditionGPUHealAcceleratorHealthy, Status: analyzer.StatusTrue}}, 8, 0)
	p.SetChecks(report(time.Now(), true))
	mustSync(t, p)
	if v, ok := api.Annotation(v1alpha1.AnnotationAgentChecks); ok {
		t.Errorf("report off, the node shows %q", v)
	}
	if api.Node().Labels[v1alpha1.LabelGPUHealthyCount] != "8" {
		t.Error("the metadata was not written")
	}
}

// TestJoinGateTaintsOnceBeforeTheFirstWrite: a never-validated node gets
// the join taint with the first sync, beside the taints it had, and the
// agent does not look again; a validated node is not tainted.
func TestJoinGateTaintsOnceBeforeTheFirstWrite(t *testing.T) {
	api := startFake(t, "gpu-0")
	api.SetResourceVersion("7")
	p := NewConditions(api.Client, "gpu-0", clocktesting.NewFakeClock(time.Now()), slog.New(slog.DiscardHandler))
	p.GateJoin()
	p.Set([]analyzer.ConditionStatus{{Type: v1alpha1.ConditionGPUHealAcceleratorHealthy, Status: analyzer.StatusTrue}}, 8, 0)
	mustSync(t, p)
	taints := api.Node().Spec.Taints
	if len(taints) != 1 || taints[0].Key != v1alpha1.TaintValidating || taints[0].Effect != "NoSchedule" {
		t.Fatalf("taints %+v, want %s:NoSchedule", taints, v1alpha1.TaintValidating)
	}
	reqs := api.Requests()
	if len(reqs) < 2 || !strings.Contains(reqs[1].Body, `"resourceVersion":"7"`) || !strings.Contains(reqs[1].Body, v1alpha1.TaintValidating) {
		t.Errorf("the taint was not the first write, or carried no resourceVersion: %+v", reqs)
	}

	// The controller lifts it on a pass; the same agent never taints again.
	api.SetAnnotation(v1alpha1.AnnotationValidatedAt, "")
	p.Set([]analyzer.ConditionStatus{{Type: v1alpha1.ConditionGPUHealAcceleratorHealthy, Status: analyzer.StatusFalse}}, 7, 0)
	before := len(api.Requests())
	mustSync(t, p)
	for _, r := range api.Requests()[before:] {
		if r.Method == "GET" || strings.Contains(r.Body, "taints") {
			t.Errorf("the join gate ran again: %+v", r)
		}
	}

	validated := startFake(t, "gpu-1")
	validated.SetAnnotation(v1alpha1.AnnotationValidatedAt, "2026-12-01T11:00:00Z")
	q := NewConditions(validated.Client, "gpu-1", clocktesting.NewFakeClock(time.Now()), slog.New(slog.DiscardHandler))
	q.GateJoin()
	q.Set([]analyzer.ConditionStatus{{Type: v1alpha1.ConditionGPUHealAcceleratorHealthy, Status: analyzer.StatusTrue}}, 8, 0)
	mustSync(t, q)
	if taints := validated.Node().Spec.Taints; len(taints) != 0 {
		t.Errorf("a validated node was tainted: %+v", taints)
	}
}
