//go:build integration

package nodestatus

import (
	"context"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/agent/kubecore"
	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
	"github.com/gpuheal/gpuheal/internal/testproc"
)

// The same against the real API server: the merge patches, the Event and
// its count-up, and the removal of the annotation.
func TestRiskPublisherOnRealAPIServer(t *testing.T) {
	env := testcluster.Start(t, testenv.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nodes, err := testenv.CreateGPUNodes(ctx, env.Client, "risk", 1)
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubecore.NewClient(env.Kubeconfig, 50)
	if err != nil {
		t.Fatal(err)
	}
	p := NewRisk(kube, nodes[0], clock.RealClock{}, slog.New(slog.DiscardHandler))
	go p.Run(ctx)
	node := func() *corev1.Node {
		var n corev1.Node
		if err := kube.Get().Resource("nodes").Name(nodes[0]).Do(ctx).Into(&n); err != nil {
			t.Fatal(err)
		}
		return &n
	}
	event := func() *corev1.Event {
		var list corev1.EventList
		if err := kube.Get().Namespace(EventNamespace).Resource("events").Do(ctx).Into(&list); err != nil {
			t.Fatal(err)
		}
		for i := range list.Items {
			if e := &list.Items[i]; e.Reason == v1alpha1.EventReasonGPUFailurePredicted && e.InvolvedObject.Name == nodes[0] {
				return e
			}
		}
		return nil
	}
	alarm := []Warning{{Key: "GPU-1111", Reason: v1alpha1.EventReasonGPUFailurePredicted, Message: "GPU 1 at risk"}}
	p.Set(0.5, alarm)
	testproc.EventuallyTrue(t, 30*time.Second, "annotation 0.50 and the Event", func() bool {
		return node().Annotations[v1alpha1.AnnotationFailureRisk] == "0.50" && event() != nil
	})
	p.Set(0.61, alarm)
	testproc.EventuallyTrue(t, 30*time.Second, "annotation 0.61 and the Event counted up", func() bool {
		e := event()
		return node().Annotations[v1alpha1.AnnotationFailureRisk] == "0.61" && e != nil && e.Count == 2
	})
	if e := event(); e.Type != corev1.EventTypeWarning || e.InvolvedObject.UID != node().UID {
		t.Errorf("event type %s on UID %s, want a Warning on the node's UID %s", e.Type, e.InvolvedObject.UID, node().UID)
	}
	if err := PatchRiskAnnotation(ctx, kube, nodes[0], ""); err != nil {
		t.Fatal(err)
	}
	if _, ok := node().Annotations[v1alpha1.AnnotationFailureRisk]; ok {
		t.Error("annotation still there after the removing patch")
	}
}
