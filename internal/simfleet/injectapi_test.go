package simfleet

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gpuheal/gpuheal/internal/gpu/sim"
	"github.com/gpuheal/gpuheal/internal/simfleet/schedule"
)

// A fault asked for over HTTP lands on the node now and is journaled as
// requested; a second fatal one, an unknown node, class or GPU, and a GET
// are refused.
func TestSimFleetInjectsAFaultAskedFor(t *testing.T) {
	dir := t.TempDir()
	o, tmpl := simFleetTestOptions("")
	f := newSimFleet(o, tmpl, nil, dir, slog.New(slog.DiscardHandler))
	so := f.simOptions("n-5", 0, "")
	n, err := sim.New(so)
	if err != nil {
		t.Fatal(err)
	}
	f.agents["n-5"] = &simAgent{name: "n-5", node: n, fabric: so.Fabric}

	for _, c := range []struct {
		method, path string
		want         int
	}{
		{http.MethodPost, "/nodes/n-5/faults?class=faulty-gpu&gpu=5", http.StatusOK},
		{http.MethodPost, "/nodes/n-5/faults?class=faulty-gpu&gpu=5", http.StatusConflict},
		{http.MethodPost, "/nodes/n-9/faults?class=faulty-gpu&gpu=5", http.StatusNotFound},
		{http.MethodPost, "/nodes/n-5/faults?class=no-such&gpu=5", http.StatusBadRequest},
		{http.MethodPost, "/nodes/n-5/faults?class=faulty-gpu&gpu=8", http.StatusBadRequest},
		{http.MethodGet, "/nodes/n-5/faults?class=faulty-gpu&gpu=5", http.StatusMethodNotAllowed},
	} {
		rec := httptest.NewRecorder()
		f.serveNode(rec, httptest.NewRequest(c.method, c.path, nil))
		if rec.Code != c.want {
			t.Errorf("%s %s = %d %q; want %d", c.method, c.path, rec.Code, rec.Body.String(), c.want)
		}
	}
	if !f.agents["n-5"].faulted() {
		t.Error("node n-5 does not carry the fault")
	}
	got, err := schedule.ReadInjections(dir)
	if err != nil || len(got) != 1 {
		t.Fatalf("journal = %+v, %v; want one injection", got, err)
	}
	if in := got[0]; in.Index != schedule.IndexRequested || in.Node != "n-5" || in.Class != "faulty-gpu" || in.GPU != 5 || !in.Fatal {
		t.Errorf("journal = %+v; want the requested faulty-gpu on GPU 5 of n-5", in)
	}
}
