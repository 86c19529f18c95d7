package remediation

import (
	"testing"
	"time"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/audit"
)

// collectOnce reconciles every incident once, finished ones included (the
// work queue does so at start and when their requeue falls due).
func (e *clockEnv) collectOnce() {
	e.t.Helper()
	for _, nr := range e.list() {
		if _, err := e.rems.Reconcile(e.ctx, ctrlRequest{NamespacedName: clientKey(nr.Name)}); err != nil {
			e.t.Fatalf("reconciling %s: %v", nr.Name, err)
		}
	}
}

// TestFinishedIncidentsAreCollectedAfterRetention: a finished incident is
// deleted 30 days (the default) after it ended, not before; its audit
// records stay. An incident that ended later is kept.
func TestFinishedIncidentsAreCollectedAfterRetention(t *testing.T) {
	e := newClockEnv(t)
	e.policy("p")
	nodes := e.addNodes("gpu", 2)
	done, open := nodes[0], nodes[1]
	e.breakGPU(done, "replace")
	e.step(2 * time.Minute)
	e.replaceMachine(done, "new")
	e.step(e.opts.Poll)
	finished := e.only(done)
	if finished.Status.Phase != v1alpha1.PhaseSucceeded {
		t.Fatalf("phase %s, want Succeeded", finished.Status.Phase)
	}
	e.breakGPU(open, "replace")
	e.step(2 * time.Minute) // this one stays open: nothing replaces the node
	records := len(e.audit.Records())

	res, err := e.rems.Reconcile(e.ctx, ctrlRequest{NamespacedName: clientKey(finished.Name)})
	if err != nil || res.RequeueAfter != finishedAt(&finished).Add(DefaultIncidentRetention).Sub(e.clock.Now()) {
		t.Fatalf("reconciling the finished incident: %+v, %v; want a requeue at its retention", res, err)
	}
	e.clock.Step(finishedAt(&finished).Add(DefaultIncidentRetention - time.Minute).Sub(e.clock.Now()))
	e.collectOnce()
	if len(e.incidents(done)) != 1 {
		t.Fatal("finished incident deleted before its retention")
	}
	e.clock.Step(time.Minute)
	e.collectOnce()
	if items := e.incidents(done); len(items) != 0 {
		t.Errorf("finished incident still there %v after it ended: %+v", DefaultIncidentRetention, items[0].Status.Phase)
	}
	if got := len(e.audit.Records()); got < records {
		t.Errorf("audit records went from %d to %d; the log must keep them", records, got)
	}
	var kept bool
	for _, r := range e.audit.Records() {
		if r.Incident == finished.Name && r.Kind == audit.Succeeded {
			kept = true
		}
	}
	if !kept {
		t.Error("the collected incident's Succeeded audit record is gone")
	}
	// The other incident ran on to its replace timeout and ended a month
	// after the first: it is kept.
	if items := e.incidents(open); len(items) != 1 {
		t.Errorf("%d incidents of %s, want the later one kept", len(items), open)
	}
}

// TestIncidentKeptWhileItsNodeShowsTheSameTransition: a CordonOnly incident
// over a month ago, on a node whose condition never changed since, is kept:
// deleting it would open the same incident again for the same transition.
func TestIncidentKeptWhileItsNodeShowsTheSameTransition(t *testing.T) {
	e := newClockEnv(t)
	e.policy("p", func(s *v1alpha1.RemediationPolicySpec) {
		s.Actions = []v1alpha1.ActionRule{{Action: v1alpha1.ActionCordonOnly}}
	})
	node := e.addNodes("gpu", 1)[0]
	e.breakGPU(node, "replace")
	e.step(2 * time.Minute)
	nr := e.only(node)
	if nr.Status.Phase != v1alpha1.PhaseSucceeded {
		t.Fatalf("phase %s, want Succeeded by CordonOnly", nr.Status.Phase)
	}
	e.clock.Step(DefaultIncidentRetention + time.Hour)
	e.collectOnce()
	e.settle()
	if items := e.incidents(node); len(items) != 1 || !items[0].CreationTimestamp.Equal(&nr.CreationTimestamp) || items[0].Status.Phase != v1alpha1.PhaseSucceeded {
		t.Fatalf("incidents %d (first %s), want the finished one kept, not deleted and opened again", len(items), items[0].Status.Phase)
	}
}
