package soak

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuhealv1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/audit/sqlite"
	"github.com/gpuheal/gpuheal/internal/simfleet/schedule"
)

// Invariant is one promise and whether the run kept it.
type Invariant struct {
	Name   string
	OK     bool
	Detail string
}

// faultsRemediatedOnce: every fatal fault the fleet injected led to
// exactly one incident on its node, which ended; a Failed or Cancelled one
// is listed with its reason (a recorded refusal or outcome, not a silent
// one).
func faultsRemediatedOnce(injections []schedule.Injection, rems []gpuhealv1.NodeRemediation) (Invariant, map[string]int) {
	inv := Invariant{Name: "every injected fatal fault led to exactly one completed remediation", OK: true}
	outcomes := map[string]int{}
	byNode := map[string][]gpuhealv1.NodeRemediation{}
	for _, r := range rems {
		byNode[r.Spec.NodeName] = append(byNode[r.Spec.NodeName], r)
	}
	var problems []string
	for i, in := range injections {
		if !in.Fatal || in.Skipped != "" {
			continue
		}
		// The incidents this fault caused: opened after it, before the
		// node's next fault.
		until := time.Now().Add(time.Hour)
		for _, later := range injections[i+1:] {
			if later.Node == in.Node && later.Skipped == "" {
				until = later.Time
				break
			}
		}
		var mine []gpuhealv1.NodeRemediation
		for _, r := range byNode[in.Node] {
			if t := r.CreationTimestamp.Time; !t.Before(in.Time.Add(-time.Second)) && t.Before(until) {
				mine = append(mine, r)
			}
		}
		switch {
		case len(mine) == 0 && coveredBy(byNode[in.Node], in.Time) != "":
			// The node was already under repair, and that repair ended
			// with the node healthy (or replaced) after this fault came.
			outcomes["covered by an open incident"]++
		case len(mine) == 0:
			problems = append(problems, fmt.Sprintf("%s on %s at %s: no remediation", in.Class, in.Node, in.Time.Format(time.TimeOnly)))
			outcomes["none"]++
		case len(mine) > 1:
			problems = append(problems, fmt.Sprintf("%s on %s: %d remediations (done twice)", in.Class, in.Node, len(mine)))
			outcomes["duplicate"]++
		case heldByCauseBreaker(&mine[0]):
			// A recorded, explained refusal: incidents of one cause on
			// more nodes than the policy allows wait for a person (the
			// soak's compressed fault rate can make independent faults
			// look correlated; docs/reliability.md).
			outcomes["held by the cause breaker"]++
			inv.Detail += fmt.Sprintf("; %s held: %s", mine[0].Name, admittedMessage(&mine[0]))
		case !mine[0].Status.Phase.Terminal():
			problems = append(problems, fmt.Sprintf("%s on %s: remediation %s still %s", in.Class, in.Node, mine[0].Name, mine[0].Status.Phase))
			outcomes["unfinished"]++
		default:
			outcomes[string(mine[0].Status.Phase)]++
			if mine[0].Status.Phase != gpuhealv1.PhaseSucceeded {
				inv.Detail += fmt.Sprintf("; %s %s: %s", mine[0].Name, mine[0].Status.Phase, mine[0].Status.Message)
			}
		}
	}
	if len(problems) > 0 {
		inv.OK = false
		inv.Detail = strings.Join(problems, "; ") + inv.Detail
	}
	inv.Detail = strings.TrimPrefix(fmt.Sprintf("%v%s", outcomes, inv.Detail), "; ")
	return inv, outcomes
}

// heldByCauseBreaker: the incident waits in Pending because its cause's
// breaker is open, which only a person closes.
func heldByCauseBreaker(r *gpuhealv1.NodeRemediation) bool {
	c := meta.FindStatusCondition(r.Status.Conditions, gpuhealv1.ConditionAdmitted)
	return r.Status.Phase == gpuhealv1.PhasePending && c != nil && c.Status == metav1.ConditionFalse &&
		c.Reason == gpuhealv1.ReasonCauseBreakerOpen
}

func admittedMessage(r *gpuhealv1.NodeRemediation) string {
	if c := meta.FindStatusCondition(r.Status.Conditions, gpuhealv1.ConditionAdmitted); c != nil {
		return c.Message
	}
	return ""
}

// coveredBy names the incident of the node that was open at the moment a
// fault came and later Succeeded, if any: a Succeeded incident ends with
// the node Ready and healthy, or replaced, so the fault was repaired too.
func coveredBy(rems []gpuhealv1.NodeRemediation, at time.Time) string {
	for _, r := range rems {
		ph := r.Status.Phases
		if r.Status.Phase != gpuhealv1.PhaseSucceeded || len(ph) == 0 || !r.CreationTimestamp.Time.Before(at) {
			continue
		}
		if ph[len(ph)-1].Time.After(at) {
			return r.Name
		}
	}
	return ""
}

// noStrayCordons: a node gpuheal cordoned or tainted has an incident that
// is open, or that failed (a failure leaves the node cordoned on purpose).
func noStrayCordons(nodes []corev1.Node, rems []gpuhealv1.NodeRemediation) Invariant {
	inv := Invariant{Name: "no node left cordoned or tainted by gpuheal without an open NodeRemediation", OK: true}
	keep := map[string]bool{}
	for _, r := range rems {
		if !r.Status.Phase.Terminal() || r.Status.Phase == gpuhealv1.PhaseFailed {
			keep[r.Spec.NodeName] = true
		}
	}
	var stray []string
	for _, n := range nodes {
		ours := n.Annotations[gpuhealv1.AnnotationCordonedBy] != ""
		for _, t := range n.Spec.Taints {
			ours = ours || t.Key == gpuhealv1.TaintUnhealthy
		}
		if ours && !keep[n.Name] {
			stray = append(stray, n.Name)
		}
	}
	inv.Detail = fmt.Sprintf("%d nodes checked, none stray", len(nodes))
	if len(stray) > 0 {
		inv.OK = false
		inv.Detail = "stray: " + strings.Join(stray, ", ")
	}
	return inv
}

// apiAuditEvent is the part of a kube-apiserver audit event we read.
type apiAuditEvent struct {
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	ObjectRef struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// podsRemovedByGPUHeal reads the API server's audit log: how the
// controller removed pods. The API server refuses an eviction a
// PodDisruptionBudget forbids (429), so only a direct DELETE can break a
// budget; under the policy's onTimeout: Wait there must be none.
func podsRemovedByGPUHeal(path string, pdbMargin int, pdbSeen bool) (Invariant, error) {
	inv := Invariant{Name: "no PodDisruptionBudget violated by an eviction of gpuheal"}
	f, err := os.Open(path)
	if err != nil {
		return inv, err
	}
	defer func() { _ = f.Close() }()
	evicted, refused, deleted := 0, 0, 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		var e apiAuditEvent
		if json.Unmarshal(sc.Bytes(), &e) != nil || !strings.HasPrefix(e.UserAgent, "gpuheal-controller") || e.ObjectRef.Resource != "pods" {
			continue
		}
		switch {
		case e.ObjectRef.Subresource == "eviction" && e.ResponseStatus.Code == 201:
			evicted++
		case e.ObjectRef.Subresource == "eviction" && e.ResponseStatus.Code == 429:
			refused++
		case e.ObjectRef.Subresource == "" && e.Verb == "delete" && e.ResponseStatus.Code < 300:
			deleted++
		}
	}
	if err := sc.Err(); err != nil {
		return inv, err
	}
	inv.OK = deleted == 0
	margin := "no budget status seen"
	if pdbSeen {
		margin = fmt.Sprintf("lowest currentHealthy−desiredHealthy sampled: %d", pdbMargin)
	}
	inv.Detail = fmt.Sprintf("%d evictions admitted, %d refused by a budget (429, retried), %d direct pod deletions; %s", evicted, refused, deleted, margin)
	return inv, nil
}

// noAdmissionWhileBreakerOpen: no incident went past Pending while the
// breaker was open (seen open by two samples in a row around it).
func noAdmissionWhileBreakerOpen(rems []gpuhealv1.NodeRemediation, open []interval, slack time.Duration) Invariant {
	inv := Invariant{Name: "never a new remediation while the breaker was open", OK: true}
	var bad []string
	for _, r := range rems {
		for _, p := range r.Status.Phases {
			if p.Phase == gpuhealv1.PhasePending {
				continue
			}
			t := p.Time.Time
			for _, iv := range open {
				if t.After(iv.from.Add(slack)) && t.Before(iv.to.Add(-slack)) {
					bad = append(bad, fmt.Sprintf("%s admitted at %s, breaker open %s–%s", r.Name, t.Format(time.TimeOnly),
						iv.from.Format(time.TimeOnly), iv.to.Format(time.TimeOnly)))
				}
			}
			break // the first phase after Pending is the admission
		}
	}
	inv.Detail = fmt.Sprintf("breaker open %d times", len(open))
	if len(bad) > 0 {
		inv.OK = false
		inv.Detail += ": " + strings.Join(bad, "; ")
	}
	return inv
}

// auditComplete verifies the chain and checks, per incident, one Detected
// record, one Cordoned record per cordon and one terminal record matching
// the incident's end: nothing missing, nothing twice.
func auditComplete(ctx context.Context, path string, rems []gpuhealv1.NodeRemediation) (Invariant, error) {
	inv := Invariant{Name: "the audit chain verifies, with no record missing or duplicated"}
	s, err := sqlite.Open(ctx, path, sqlite.Options{ReadOnly: true})
	if err != nil {
		return inv, err
	}
	defer func() { _ = s.Close() }()
	rep, err := s.Verify(ctx)
	if err != nil {
		return inv, err
	}
	recs, err := s.Query(ctx, audit.Filter{Limit: -1})
	if err != nil {
		return inv, err
	}
	count := map[string]map[audit.Kind]int{}
	for _, r := range recs {
		if count[r.Incident] == nil {
			count[r.Incident] = map[audit.Kind]int{}
		}
		count[r.Incident][r.Kind]++
	}
	var bad []string
	for _, r := range rems {
		c := count[r.Name]
		cordons := 0
		for _, p := range r.Status.Phases {
			if p.Phase == gpuhealv1.PhaseCordoned {
				cordons++
			}
		}
		want := map[audit.Kind]int{audit.Detected: 1, audit.Cordoned: cordons}
		if r.Status.Phase.Terminal() {
			want[audit.Kind(r.Status.Phase)] = 1
		}
		for kind, n := range want {
			if c[kind] != n {
				bad = append(bad, fmt.Sprintf("%s: %d %s records, want %d", r.Name, c[kind], kind, n))
			}
		}
	}
	slices.Sort(bad)
	inv.OK = rep.OK && len(bad) == 0
	inv.Detail = fmt.Sprintf("%d records, chain ok=%v", rep.Records, rep.OK)
	if rep.FirstBad != nil {
		inv.Detail += fmt.Sprintf(", first bad record %d: %s", rep.FirstBad.Seq, rep.FirstBad.Problem)
	}
	if len(bad) > 0 {
		inv.Detail += "; " + strings.Join(bad[:min(len(bad), 10)], "; ")
	}
	return inv, nil
}

// growth is a process life's RSS and goroutines at its start and end,
// judged by how much it may grow over its life: a quarter of
// its resident memory plus 16 MiB, a fifth of its goroutines plus 25.
// Caches fill and settle within these; a leak per incident or per
// reconnect does not stay inside them over an hour.
//
// Growth compares the medians of the first and last thirds of a life's
// samples, not its first and last sample: RSS swings with each GC cycle
// (the sim fleet's by a third), and during an API outage every agent holds
// a request and its retry, which a single last sample can catch. A leak
// keeps growing and moves the median; a swing or an outage does not.
type growth struct {
	rssFrom, rssTo           int64
	routinesFrom, routinesTo int
	rssMax                   int64
	routinesMax              int
}

// minGrowthSamples: a life shorter than 40 s of samples (every 5 s) is too short
// to tell growth from warm-up.
const minGrowthSamples = 8

func growthOf(samples []processSample) growth {
	var g growth
	third := max(len(samples)/3, 1)
	median := func(part []processSample) (int64, int) {
		rss := make([]int64, len(part))
		routines := make([]int, len(part))
		for i, s := range part {
			rss[i], routines[i] = s.RSS, s.Goroutines
		}
		slices.Sort(rss)
		slices.Sort(routines)
		return rss[len(rss)/2], routines[len(routines)/2]
	}
	g.rssFrom, g.routinesFrom = median(samples[:third])
	g.rssTo, g.routinesTo = median(samples[len(samples)-third:])
	for _, s := range samples {
		g.rssMax, g.routinesMax = max(g.rssMax, s.RSS), max(g.routinesMax, s.Goroutines)
	}
	return g
}

func (g growth) within() bool {
	return float64(g.rssTo) <= 1.25*float64(g.rssFrom)+16<<20 &&
		float64(g.routinesTo) <= 1.2*float64(g.routinesFrom)+25
}

func noGrowth(fps map[int]*footprint) Invariant {
	inv := Invariant{Name: "no goroutine or memory growth beyond the bound (median of a life's last third vs its first: RSS ≤ 1.25×+16 MiB, goroutines ≤ 1.2×+25)", OK: true}
	var parts []string
	keys := make([]int, 0, len(fps))
	for pid := range fps {
		keys = append(keys, pid)
	}
	slices.Sort(keys)
	short := 0
	for _, pid := range keys {
		f := fps[pid]
		if len(f.samples) < minGrowthSamples {
			short++
			continue
		}
		g := growthOf(f.samples)
		ok := g.within()
		inv.OK = inv.OK && ok
		parts = append(parts, fmt.Sprintf("%s pid %d: RSS %.1f→%.1f MiB (max %.1f), goroutines %d→%d (max %d) over %d samples%s",
			f.name, pid, mib(g.rssFrom), mib(g.rssTo), mib(g.rssMax), g.routinesFrom, g.routinesTo, g.routinesMax, len(f.samples),
			map[bool]string{true: "", false: " OVER"}[ok]))
	}
	if short > 0 {
		parts = append(parts, fmt.Sprintf("%d process lives under %d samples not judged", short, minGrowthSamples))
	}
	if len(parts) == 0 {
		parts = append(parts, "no process lived long enough to measure")
	}
	inv.Detail = strings.Join(parts, "; ")
	return inv
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
