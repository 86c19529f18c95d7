//go:build integration

package remediation

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/utils/ptr"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/audit"
)

// TestLemonReplacedOnTheRealAPIServer: on a real API server with kwok, a
// node whose instance (its provider ID) already had an incident under
// another name is replaced on its second one, as the policy's lemon rule
// asks, with the Event and the audit record saying why.
func TestLemonReplacedOnTheRealAPIServer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "lemon", 2)
	node := h.nodes[0]
	n, ok := h.node(node)
	if !ok || n.Spec.ProviderID == "" {
		t.Fatalf("node %s without a provider ID", node)
	}
	mem := audit.NewMemory()
	// The same instance's earlier incident, under the name it had then.
	if err := mem.Write(context.Background(), audit.Record{Key: "before/Decided/0", Time: time.Now().Add(-48 * time.Hour),
		Incident: "before", Node: "renamed-" + node, Kind: audit.Decided, Action: "Reboot",
		Severity: audit.SeverityCritical, Machine: n.Spec.ProviderID}); err != nil {
		t.Fatal(err)
	}
	p := fastPolicy("lemon")
	p.Spec.Lemon = v1alpha1.LemonSpec{Incidents: ptr.To[int32](2), Window: &metav1.Duration{Duration: 30 * 24 * time.Hour}, Action: v1alpha1.LemonReplace}
	h.create(p)
	h.startController(controllerConfig{audit: mem, history: mem})

	h.breakGPU(node, "reboot")
	h.waitFor("the lemon's incident to decide", 30*time.Second, func() (bool, error) {
		for _, nr := range h.incidents(node) {
			if nr.Status.Action != "" {
				return true, nil
			}
		}
		return false, nil
	})
	nr := h.incidents(node)[0]
	if nr.Status.Action != v1alpha1.ActionReplace {
		t.Fatalf("action %s (%s), want Replace", nr.Status.Action, nr.Status.Message)
	}
	h.waitFor("the LemonRetired Event naming the earlier incident", 10*time.Second, func() (bool, error) {
		var evs eventsv1.EventList
		if err := h.c.List(context.Background(), &evs); err != nil {
			return false, err
		}
		return slices.ContainsFunc(evs.Items, func(ev eventsv1.Event) bool {
			return ev.Regarding.Name == node && ev.Reason == v1alpha1.EventReasonLemon &&
				strings.Contains(ev.Note, "before on renamed-"+node) && strings.Contains(ev.Note, n.Spec.ProviderID)
		}), nil
	})
	rec := slices.IndexFunc(mem.Records(), func(r audit.Record) bool {
		return r.Incident == nr.Name && r.Kind == audit.Decided
	})
	if rec < 0 {
		t.Fatal("no Decided record")
	}
	if r := mem.Records()[rec]; r.Machine != n.Spec.ProviderID || !strings.Contains(r.Message, "lemon: machine "+n.Spec.ProviderID) {
		t.Errorf("Decided record: machine %q, message %q", r.Machine, r.Message)
	}
	// The other node, with no history, is not touched by the rule.
	h.breakGPU(h.nodes[1], "reboot")
	h.waitFor("the other node's incident to decide", 30*time.Second, func() (bool, error) {
		for _, nr := range h.incidents(h.nodes[1]) {
			if nr.Status.Action != "" {
				return true, nil
			}
		}
		return false, nil
	})
	if other := h.incidents(h.nodes[1])[0]; other.Status.Action != v1alpha1.ActionReboot {
		t.Errorf("the node without history: action %s (%s), want Reboot", other.Status.Action, other.Status.Message)
	}
}
