package simfleet

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gpuheal/gpuheal/internal/simfleet/schedule"
)

// serveInject puts a fault of the failure mix on a node now: POST
// /nodes/NODE/faults?class=CLASS&gpu=N. A schedule is fixed before the
// fleet starts; this is for a fault that must wait on the cluster, such as
// the demo's repeat offender, whose next fault may come only once its last
// repair is over. It answers 409 when the node already carries a fatal
// fault (the fleet gives a node one at a time) and 404 when no agent runs
// for it (unknown, rebooting or gone).
func (f *simFleet) serveInject(w http.ResponseWriter, r *http.Request, node string) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "want POST /nodes/NODE/faults?class=CLASS&gpu=N", http.StatusMethodNotAllowed)
		return
	}
	name := r.FormValue("class")
	class, ok := schedule.ClassNamed(name)
	if !ok {
		http.Error(w, fmt.Sprintf("unknown fault class %q", name), http.StatusBadRequest)
		return
	}
	gpu, err := strconv.Atoi(r.FormValue("gpu"))
	if err != nil || gpu < 0 || gpu >= max(f.agent.Sim.GPUs, 1) {
		http.Error(w, fmt.Sprintf("gpu %q: want 0 to %d", r.FormValue("gpu"), max(f.agent.Sim.GPUs, 1)-1), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	a := f.agents[node]
	switch {
	case a == nil:
		http.Error(w, fmt.Sprintf("no agent runs for node %q (unknown, deleted or rebooting)", node), http.StatusNotFound)
		return
	case class.Fatal && a.faulted():
		http.Error(w, fmt.Sprintf("node %s already has a fatal fault in this boot", node), http.StatusConflict)
		return
	}
	_, board, _ := f.lineage.SlotBoard(node)
	f.injectLocked(a, class, gpu, schedule.Injection{Index: schedule.IndexRequested, Time: time.Now(),
		Slot: schedule.SlotOf(node), Class: class.Name, Board: board})
	_, _ = fmt.Fprintf(w, "injected %s on GPU %d of node %s\n", class.Name, gpu, node)
}

// serveNode routes /nodes/NODE/metrics and /nodes/NODE/faults.
func (f *simFleet) serveNode(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/nodes/")
	if node, ok := strings.CutSuffix(rest, "/faults"); ok && node != "" && !strings.Contains(node, "/") {
		f.serveInject(w, r, node)
		return
	}
	f.serveNodeMetrics(w, r)
}
