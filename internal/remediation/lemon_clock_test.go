package remediation

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/utils/ptr"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/audit"
)

// pastIncident writes a decision of an earlier incident on machine to
// the audit store, days before t0, under node (an older name).
func (e *clockEnv) pastIncident(name, node, machine, action string, days int) {
	e.t.Helper()
	at := t0.Add(-time.Duration(days) * 24 * time.Hour)
	r := audit.Record{Key: audit.Key(name, string(audit.Decided), 0), Time: at, Incident: name, Node: node,
		Kind: audit.Decided, Action: action, Severity: audit.SeverityCritical, Machine: machine}
	if err := e.audit.Write(e.ctx, r); err != nil {
		e.t.Fatal(err)
	}
}

// The lemon rule counts a machine's incidents from the audit log (read by
// a freshly started controller), under whatever name the node had, and
// turns the reboot a third incident would get into a replacement or a
// quarantine, saying why with the history; below the count, or with the
// rule off, the reboot stays.
func TestLemonRule(t *testing.T) {
	for _, tc := range []struct {
		name     string
		lemon    v1alpha1.LemonSpec
		past     int // earlier incidents on the machine within the window
		elsewise bool
		want     v1alpha1.Action
	}{
		{"third incident: replaced", v1alpha1.LemonSpec{Incidents: ptr.To[int32](3), Action: v1alpha1.LemonReplace}, 2, false, v1alpha1.ActionReplace},
		{"third incident: quarantined", v1alpha1.LemonSpec{Action: v1alpha1.LemonQuarantine}, 2, false, v1alpha1.ActionCordonOnly},
		{"second incident: rebooted", v1alpha1.LemonSpec{}, 1, false, v1alpha1.ActionReboot},
		{"the history is another machine's", v1alpha1.LemonSpec{}, 2, true, v1alpha1.ActionReboot},
		{"rule off", v1alpha1.LemonSpec{Incidents: ptr.To[int32](0)}, 5, false, v1alpha1.ActionReboot},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newClockEnv(t)
			e.opts.AuditReader = e.audit
			e.policy("p", func(s *v1alpha1.RemediationPolicySpec) {
				s.Lemon = tc.lemon
				s.Lemon.Window = &metav1.Duration{Duration: 30 * 24 * time.Hour}
			})
			node := e.addNodes("gpu", 1)[0]
			// The kubelet reports the board's SMBIOS UUID in the node's status.
			n, _ := e.node(node)
			n.Status.NodeInfo.SystemUUID = "4c4c4544-0042-board-1"
			if err := e.c.Status().Update(e.ctx, n); err != nil {
				t.Fatal(err)
			}
			machine := "4c4c4544-0042-board-1"
			if tc.elsewise {
				machine = "4c4c4544-0042-board-2"
			}
			for i := range tc.past {
				e.pastIncident("old-"+string(rune('a'+i)), "gpu-before-replacement", machine, "Reboot", 3+i)
			}
			e.pastIncident("long-ago", node, "4c4c4544-0042-board-1", "Reboot", 45) // outside the window
			e.restart()

			e.breakGPU(node, "reboot")
			e.step(2 * time.Minute)
			nr := e.only(node)
			if nr.Status.Action != tc.want {
				t.Fatalf("action %s (%s), want %s", nr.Status.Action, nr.Status.Message, tc.want)
			}
			evs := e.events.find(node, v1alpha1.EventReasonLemon)
			if tc.want == v1alpha1.ActionReboot {
				if len(evs) != 0 {
					t.Errorf("lemon Events for a reboot: %+v", evs)
				}
				return
			}
			if len(evs) != 1 {
				t.Fatalf("%d %s Events, want 1", len(evs), v1alpha1.EventReasonLemon)
			}
			for _, text := range []string{evs[0].note, decidedRecord(t, e, nr.Name).Message} {
				for _, want := range []string{"machine 4c4c4544-0042-board-1 had 3 hardware incidents", "old-a on gpu-before-replacement",
					"old-b", nr.Name} {
					if !strings.Contains(text, want) {
						t.Errorf("%q lacks %q", text, want)
					}
				}
				if strings.Contains(text, "long-ago") {
					t.Errorf("%q counts an incident outside the window", text)
				}
			}
			if got := decidedRecord(t, e, nr.Name).Machine; got != "4c4c4544-0042-board-1" {
				t.Errorf("Decided record's machine %q", got)
			}
		})
	}
}

func decidedRecord(t *testing.T, e *clockEnv, incident string) audit.Record {
	t.Helper()
	recs, err := e.audit.Query(e.ctx, audit.Filter{Incident: incident})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Kind == audit.Decided {
			return r
		}
	}
	t.Fatalf("no Decided record for %s", incident)
	return audit.Record{}
}

// An incident decided twice (a conflicting status write, a restart in
// between) counts once, whether the history came from the store or from
// this process.
func TestLemonHistoryCountsAnIncidentOnce(t *testing.T) {
	mem := audit.NewMemory()
	h := &lemonHistory{store: mem}
	r := audit.Record{Key: "a/Decided/0", Kind: audit.Decided, Incident: "a", Node: "n", Machine: "m", Action: "Reboot", Time: t0}
	if err := mem.Write(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	h.observe(r)
	h.observe(r)
	got, err := h.since(t.Context(), t0.Add(-time.Hour))
	if err != nil || len(got) != 1 {
		t.Fatalf("history %+v, %v: want incident a once", got, err)
	}
	h.observe(r)
	if got, _ := h.since(t.Context(), t0.Add(-time.Hour)); len(got) != 1 {
		t.Fatalf("after a third decision: %d incidents", len(got))
	}
}
