package remediation

import (
	"context"
	"errors"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/provider/fake"
)

// TestLostAnswerThenRestartAfterEachPhase: the write of each phase lands
// but its answer is lost (a timeout), and the controller process dies; a
// new one resumes from the incident's status alone and the node is
// replaced exactly once. Crashes of a real process against a real API
// server are TestCrashAfterEachPhase's (integration).
func TestLostAnswerThenRestartAfterEachPhase(t *testing.T) {
	for _, phase := range []v1alpha1.Phase{v1alpha1.PhaseCordoned, v1alpha1.PhaseDraining, v1alpha1.PhaseDrained,
		v1alpha1.PhaseReplacing, v1alpha1.PhaseVerifying} {
		t.Run(string(phase), func(t *testing.T) {
			lost := false
			e := newClockEnv(t, interceptor.Funcs{
				SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
					if err := c.SubResource(sub).Update(ctx, obj, opts...); err != nil {
						return err
					}
					if nr, ok := obj.(*v1alpha1.NodeRemediation); ok && nr.Status.Phase == phase && !lost {
						lost = true
						return errors.New("http2: client connection lost")
					}
					return nil
				},
			})
			e.crashes = 1
			e.policy("p")
			node := e.addNodes("gpu", 1)[0]
			e.runPod("default", "job-0", node, nil)
			e.breakGPU(node, "replace")
			e.step(2 * time.Minute)
			if !lost || e.crashes != 0 {
				t.Fatalf("the answer of the %s write was never lost (lost %v, crashes left %d)", phase, lost, e.crashes)
			}
			e.replaceMachine(node, "new")
			e.step(e.opts.Poll)
			nr := e.only(node)
			if nr.Status.Phase != v1alpha1.PhaseSucceeded {
				t.Fatalf("phase %s (%s), want Succeeded", nr.Status.Phase, nr.Status.Message)
			}
			tokens := map[string]bool{}
			for _, c := range e.prov.CallsTo(fake.MethodReplace) {
				if c.Err == nil {
					tokens[c.Token] = true
				}
			}
			ok := 0
			for _, r := range nr.Status.ProviderRequests {
				if r.Error == "" {
					ok++
				}
			}
			if len(tokens) != 1 || ok != 1 || len(nr.Status.EvictedPods) != 1 {
				t.Errorf("replace tokens %v, %d successful requests, evicted %v: want one replacement, one drain", tokens, ok, nr.Status.EvictedPods)
			}
		})
	}
}
