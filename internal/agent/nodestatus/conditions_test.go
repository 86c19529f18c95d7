package nodestatus

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/agent/kubecore"
	"github.com/gpuheal/gpuheal/internal/agent/kubecore/kubecorefake"
	"github.com/gpuheal/gpuheal/internal/analyzer"
	"github.com/gpuheal/gpuheal/internal/finding"
)

var since = time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)

func newTestConditions(t *testing.T) (*Conditions, *kubecorefake.API, *clocktesting.FakeClock) {
	t.Helper()
	api := startFake(t, "n1")
	clk := clocktesting.NewFakeClock(since.Add(time.Hour))
	return NewConditions(api.Client, "n1", clk, slog.New(slog.DiscardHandler)), api, clk
}

func hardware(status string, at time.Time) analyzer.ConditionStatus {
	c := analyzer.ConditionStatus{Type: v1alpha1.ConditionGPUHealAcceleratorHealthy, Status: status, LastTransitionTime: at}
	if status == analyzer.StatusFalse {
		c.Reason, c.Message, c.Action = "NvidiaXID79Error", "GPU 3 fell off the bus", finding.ActionReplace
	}
	return c
}

func mustSync(t *testing.T, p *Conditions) {
	t.Helper()
	if err := p.sync(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func transition(t *testing.T, api *kubecorefake.API) (string, time.Time) {
	t.Helper()
	c, ok := api.Condition(v1alpha1.ConditionGPUHealAcceleratorHealthy)
	if !ok {
		t.Fatal("the node shows no GPUHealAcceleratorHealthy")
	}
	return c.Status, c.LastTransitionTime.UTC()
}

// A restarted agent finds its node False since T: while the problem stays
// it keeps T (its own engine's start time would make the old problem look
// like a new incident); recovering moves the time, and so does the next
// problem, which carries nothing any more.
func TestConditionsKeepTheTransitionTimeTheNodeShows(t *testing.T) {
	p, api, clk := newTestConditions(t)
	api.SetCondition(kubecore.NodeCondition{Type: v1alpha1.ConditionGPUHealAcceleratorHealthy, Status: analyzer.StatusFalse,
		Reason: "NvidiaXID79Error", LastTransitionTime: metav1.NewTime(since)})

	p.Set([]analyzer.ConditionStatus{hardware(analyzer.StatusFalse, clk.Now())}, 7, 0)
	mustSync(t, p)
	if st, at := transition(t, api); st != analyzer.StatusFalse || !at.Equal(since) {
		t.Fatalf("after the restart: %s since %s, want False since %s", st, at, since)
	}

	clk.Step(time.Minute)
	p.Set([]analyzer.ConditionStatus{hardware(analyzer.StatusTrue, clk.Now())}, 8, 0)
	mustSync(t, p)
	if st, at := transition(t, api); st != analyzer.StatusTrue || !at.Equal(clk.Now()) {
		t.Fatalf("after recovering: %s since %s, want True since %s", st, at, clk.Now())
	}

	clk.Step(time.Minute)
	p.Set([]analyzer.ConditionStatus{hardware(analyzer.StatusFalse, clk.Now())}, 7, 0)
	mustSync(t, p)
	if st, at := transition(t, api); st != analyzer.StatusFalse || !at.Equal(clk.Now()) {
		t.Fatalf("the next problem: %s since %s, want False since %s", st, at, clk.Now())
	}
}

// A condition the node does not show yet, or shows with another status,
// starts at the engine's transition time, or now without one.
func TestConditionsStartNewConditionsAtTheirOwnTime(t *testing.T) {
	p, api, clk := newTestConditions(t)
	api.SetCondition(kubecore.NodeCondition{Type: v1alpha1.ConditionGPUHealAcceleratorHealthy, Status: analyzer.StatusTrue,
		LastTransitionTime: metav1.NewTime(since)})
	engineSaw := clk.Now().Add(-time.Second)
	p.Set([]analyzer.ConditionStatus{hardware(analyzer.StatusFalse, engineSaw),
		{Type: v1alpha1.ConditionGPUHealKernelHealthy, Status: analyzer.StatusTrue}}, 7, 0)
	mustSync(t, p)
	if _, at := transition(t, api); !at.Equal(engineSaw) {
		t.Errorf("status changed since the node's: transition %s, want the engine's %s", at, engineSaw)
	}
	k, _ := api.Condition(v1alpha1.ConditionGPUHealKernelHealthy)
	if !k.LastTransitionTime.Equal(&metav1.Time{Time: clk.Now()}) || k.Reason != v1alpha1.ReasonNoProblemDetected {
		t.Errorf("GPUHealKernelHealthy %+v, want NoProblemDetected since now", k)
	}
}

// The advice leads a condition turning unhealthy and trails it turning
// healthy: whoever sees an unhealthy condition finds its advice. It sits
// in the same patch as the healthy-GPU label and the warnings count; the
// message keeps the advice for people. A state already written is not
// written again.
func TestConditionsAdviceLeadsAndTrailsTheCondition(t *testing.T) {
	p, api, clk := newTestConditions(t)
	api.SetAnnotation(v1alpha1.AnnotationRecommendedActions, `{"GPUHealKernelHealthy":"reboot"}`) // an earlier run's

	p.Set([]analyzer.ConditionStatus{hardware(analyzer.StatusTrue, clk.Now())}, 8, 0)
	mustSync(t, p)
	if v, ok := api.Annotation(v1alpha1.AnnotationRecommendedActions); ok {
		t.Errorf("healthy node keeps advice %q", v)
	}

	start := len(api.Requests())
	p.Set([]analyzer.ConditionStatus{hardware(analyzer.StatusFalse, clk.Now())}, 7, 1)
	p.SetExtra(analyzer.ConditionStatus{Type: v1alpha1.ConditionGPUFailurePredicted, Status: analyzer.StatusTrue,
		Reason: v1alpha1.ReasonGPUFailurePredicted, Message: "GPU 2 risk 0.40", Action: finding.ActionNone})
	mustSync(t, p)
	want := []string{"metadata " + `{"GPUFailurePredicted":"none","GPUHealAcceleratorHealthy":"replace"}`, "status"}
	if diff := cmp.Diff(want, writes(t, api.Requests()[start:])); diff != "" {
		t.Errorf("writes when turning unhealthy (-want +got):\n%s", diff)
	}
	n := api.Node()
	if n.Labels[v1alpha1.LabelGPUHealthyCount] != "7" || n.Annotations[v1alpha1.AnnotationActiveWarnings] != "1" {
		t.Errorf("labels %v, annotations %v; want 7 healthy GPUs and 1 warning", n.Labels, n.Annotations)
	}
	c, _ := api.Condition(v1alpha1.ConditionGPUHealAcceleratorHealthy)
	if !strings.HasSuffix(c.Message, "; recommended action: replace") {
		t.Errorf("message %q does not tell people the action", c.Message)
	}
	if c, _ := api.Condition(v1alpha1.ConditionGPUFailurePredicted); c.Message != "GPU 2 risk 0.40; recommended action: none" {
		t.Errorf("predicted condition message %q", c.Message)
	}

	start = len(api.Requests())
	mustSync(t, p)
	if got := writes(t, api.Requests()[start:]); len(got) != 0 {
		t.Errorf("unchanged state written again: %v", got)
	}

	start = len(api.Requests())
	p.Set([]analyzer.ConditionStatus{hardware(analyzer.StatusTrue, clk.Now())}, 8, 0)
	p.SetExtra(analyzer.ConditionStatus{Type: v1alpha1.ConditionGPUFailurePredicted, Status: analyzer.StatusFalse,
		Reason: v1alpha1.ReasonNoFailurePredicted})
	mustSync(t, p)
	want = []string{"metadata " + `{"GPUFailurePredicted":"none","GPUHealAcceleratorHealthy":"replace"}`, "status", "metadata "}
	if diff := cmp.Diff(want, writes(t, api.Requests()[start:])); diff != "" {
		t.Errorf("writes when turning healthy (-want +got):\n%s", diff)
	}
	if v, ok := api.Annotation(v1alpha1.AnnotationRecommendedActions); ok {
		t.Errorf("healthy node keeps advice %q", v)
	}
}

// A failed metadata patch does not hold the conditions back: the node
// shows the sick GPU at once, the sync reports the error, and the retry
// adds the advice.
func TestConditionsAreNotHeldBackByAFailingMetadataPatch(t *testing.T) {
	p, api, clk := newTestConditions(t)
	p.Set([]analyzer.ConditionStatus{hardware(analyzer.StatusFalse, clk.Now())}, 7, 0)
	api.FailNext(1)
	if err := p.sync(context.Background()); err == nil {
		t.Fatal("sync reported no error although the metadata patch failed")
	}
	if st, _ := transition(t, api); st != analyzer.StatusFalse {
		t.Fatalf("condition %s after the failed metadata patch, want False", st)
	}
	mustSync(t, p)
	if v, _ := api.Annotation(v1alpha1.AnnotationRecommendedActions); v != `{"GPUHealAcceleratorHealthy":"replace"}` {
		t.Fatalf("advice %q after the retry", v)
	}
}

// Until the rules have spoken nothing is written: a restarted agent leaves
// the advice, count and warnings of the conditions the node still shows.
func TestConditionsWriteNothingBeforeTheRulesSpeak(t *testing.T) {
	p, api, clk := newTestConditions(t)
	api.SetAnnotation(v1alpha1.AnnotationRecommendedActions, `{"GPUHealAcceleratorHealthy":"replace"}`)
	p.SetExtra(analyzer.ConditionStatus{Type: v1alpha1.ConditionGPUFailurePredicted, Status: analyzer.StatusFalse,
		Reason: v1alpha1.ReasonPredictorOff, LastTransitionTime: clk.Now()})
	mustSync(t, p)
	if n := len(writes(t, api.Requests())); n != 0 {
		t.Fatalf("%d writes before the first evaluation, want none", n)
	}
	if v, _ := api.Annotation(v1alpha1.AnnotationRecommendedActions); v != `{"GPUHealAcceleratorHealthy":"replace"}` {
		t.Fatalf("advice %q, want the one the node showed", v)
	}
}

// writes lists the Node writes: "status", or "metadata " and the advice
// the patch sets ("" when it removes it).
func writes(t *testing.T, reqs []kubecorefake.Request) []string {
	t.Helper()
	var out []string
	for _, r := range reqs {
		switch {
		case r.Method != http.MethodPatch:
		case strings.HasSuffix(r.Path, "/status"):
			out = append(out, "status")
		default:
			var patch struct {
				Metadata struct {
					Annotations map[string]*string `json:"annotations"`
				} `json:"metadata"`
			}
			if err := json.Unmarshal([]byte(r.Body), &patch); err != nil {
				t.Fatal(err)
			}
			advice := ""
			if v := patch.Metadata.Annotations[v1alpha1.AnnotationRecommendedActions]; v != nil {
				advice = *v
			}
			out = append(out, "metadata "+advice)
		}
	}
	return out
}

// TestPublishAsRenamesTypeAndReadyReason: under the EKS names a healthy
// condition's reason follows its type, a rule's reason stays, and other
// conditions keep their type.
func TestPublishAsRenamesTypeAndReadyReason(t *testing.T) {
	eks, _ := v1alpha1.AgentConditionTypesFor(v1alpha1.ConditionTypesEKS)
	got := renamed([]analyzer.ConditionStatus{
		{Type: v1alpha1.ConditionGPUHealAcceleratorHealthy, Status: analyzer.StatusTrue, Reason: "GPUHealAcceleratorIsHealthy"},
		{Type: v1alpha1.ConditionGPUHealKernelHealthy, Status: analyzer.StatusFalse, Reason: "KernelOops"},
		{Type: v1alpha1.ConditionGPUFailurePredicted, Status: analyzer.StatusFalse, Reason: v1alpha1.ReasonNoFailurePredicted},
	}, eks)
	want := []analyzer.ConditionStatus{
		{Type: v1alpha1.ConditionAcceleratedHardwareReady, Status: analyzer.StatusTrue, Reason: "AcceleratedHardwareIsReady"},
		{Type: v1alpha1.ConditionKernelReady, Status: analyzer.StatusFalse, Reason: "KernelOops"},
		{Type: v1alpha1.ConditionGPUFailurePredicted, Status: analyzer.StatusFalse, Reason: v1alpha1.ReasonNoFailurePredicted},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("renamed (-want +got):\n%s", diff)
	}
}
