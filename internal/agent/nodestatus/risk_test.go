package nodestatus

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/clock"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/agent/kubecore/kubecorefake"
	"github.com/gpuheal/gpuheal/internal/testproc"
)

// The annotation is patched when its value changes and retried while the
// API server fails; a GPU alarming again counts up its one Event.
func TestRiskPublisherAnnotatesAndCountsUp(t *testing.T) {
	api := startFake(t, "n1")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := NewRisk(api.Client, "n1", clock.RealClock{}, slog.New(slog.DiscardHandler))
	go p.Run(ctx)
	const reason = v1alpha1.EventReasonGPUFailurePredicted
	warning := func(msg string) []Warning { return []Warning{{Key: "GPU-3333", Reason: reason, Message: msg}} }
	annotated := func(v string) func() bool {
		return func() bool { got, _ := api.Annotation(v1alpha1.AnnotationFailureRisk); return got == v }
	}
	events := func(count int32) func() bool {
		return func() bool {
			evs := api.EventsWithReason(reason)
			return len(evs) == 1 && evs[0].Count == count
		}
	}

	p.Set(0.4213, warning("GPU 3 at risk 0.421"))
	testproc.EventuallyTrue(t, 10*time.Second, "annotation 0.42 and one Event", func() bool { return annotated("0.42")() && events(1)() })
	ev := api.EventsWithReason(reason)[0]
	if ev.Message != "GPU 3 at risk 0.421" || ev.Type != "Warning" || ev.InvolvedObject.Kind != "Node" || ev.InvolvedObject.UID != "uid-1234" {
		t.Errorf("event %+v\nwant the warning's message on Node n1", ev)
	}

	p.Set(0.4249, nil) // rounds the same: no patch
	p.Set(0.10, nil)
	testproc.EventuallyTrue(t, 10*time.Second, "annotation 0.10", annotated("0.10"))

	api.FailNext(3)
	p.Set(0.9, warning("GPU 3 at risk 0.900"))
	testproc.EventuallyTrue(t, 10*time.Second, "annotation 0.90 and the Event counted up after failures", func() bool { return annotated("0.90")() && events(2)() })
	if evs := api.EventsWithReason(reason); !strings.Contains(evs[0].Message, "risk 0.900") {
		t.Errorf("counted-up event keeps message %q, want the new risk", evs[0].Message)
	}

	var values []string
	for _, b := range api.NodePatches() {
		_, v, _ := strings.Cut(b, v1alpha1.AnnotationFailureRisk+`":`)
		values = append(values, strings.Trim(v, `"}`))
	}
	if want := []string{"0.42", "0.10", "0.90"}; !slices.Equal(values, want) {
		t.Errorf("annotation patches %q, want %q", values, want)
	}
}

// startFake starts the fake API server with one Node, stopped at the end
// of the test.
func startFake(t *testing.T, node string) *kubecorefake.API {
	t.Helper()
	api, err := kubecorefake.Start(node)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(api.Close)
	return api
}
