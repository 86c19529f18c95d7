package soak

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuhealv1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/fleetview"
	"github.com/gpuheal/gpuheal/internal/procs"
	"github.com/gpuheal/gpuheal/internal/simfleet/schedule"
	"github.com/gpuheal/gpuheal/internal/testenv"
)

// sampler watches the cluster several times a second for the invariants
// that can only be seen while they hold (or break), and measures lost
// capacity and the processes' footprints.
type sampler struct {
	r     *run
	every time.Duration

	mu sync.Mutex
	// in flight vs maxParallel
	maxActive   int
	overflows   []string
	breakerOpen []interval
	openSince   time.Time
	// PodDisruptionBudgets: the lowest currentHealthy − desiredHealthy seen
	pdbMargin     int
	pdbBelow      int
	pdbSeen       bool
	lostNodeTime  time.Duration // node-time out of service (unhealthy but scheduled, cordoned, down)
	podsSeen      map[string]bool
	podsHit       map[string]bool // on a node whose GPU or kernel condition was False
	placed        map[string]placement
	slotDown      map[string]time.Time
	outages       []time.Duration // per slot, out of service until back
	samples, miss int
	last          time.Time
	footprints    map[int]*footprint // by pid
}

type interval struct{ from, to time.Time }

// footprint is one process's resident memory and goroutines, sampled
// every few seconds after its warm-up.
type footprint struct {
	name    string
	samples []processSample
	// leader: a standby that becomes leader starts its controllers; its
	// samples start again then.
	leader bool
}

type processSample struct {
	Time       time.Time `json:"time"`
	RSS        int64     `json:"rss"`
	Goroutines int       `json:"goroutines"`
}

func newSampler(r *run) *sampler {
	return &sampler{r: r, every: 250 * time.Millisecond, pdbMargin: 1 << 30,
		podsSeen: map[string]bool{}, podsHit: map[string]bool{}, placed: map[string]placement{}, slotDown: map[string]time.Time{}, footprints: map[int]*footprint{}}
}

func (s *sampler) run(ctx context.Context) {
	tick := time.NewTicker(s.every)
	defer tick.Stop()
	resources := time.NewTicker(5 * time.Second)
	defer resources.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			s.sample(ctx, now)
		case <-resources.C:
			s.measureProcesses(ctx)
		}
	}
}

func (s *sampler) sample(ctx context.Context, now time.Time) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var nodes corev1.NodeList
	var rems gpuhealv1.NodeRemediationList
	var pols gpuhealv1.RemediationPolicyList
	var pdbs policyv1.PodDisruptionBudgetList
	var pods corev1.PodList
	c := s.r.c
	err := c.List(ctx, &nodes, client.MatchingLabels{gpuhealv1.LabelNvidiaGPUPresent: "true"})
	if err == nil {
		err = c.List(ctx, &rems)
	}
	if err == nil {
		err = c.List(ctx, &pols)
	}
	if err == nil {
		err = c.List(ctx, &pdbs, client.InNamespace(namespace))
	}
	if err == nil {
		err = c.List(ctx, &pods, client.InNamespace(namespace))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.miss++ // the API server is down: nothing can change through it
		return
	}
	s.samples++
	dt := time.Duration(0)
	if !s.last.IsZero() {
		dt = now.Sub(s.last)
	}
	s.last = now

	active := 0
	for _, rem := range rems.Items {
		if rem.Status.Phase.Active() {
			active++
		}
	}
	s.maxActive = max(s.maxActive, active)
	if limit := s.r.opts.maxParallel(); active > limit {
		s.overflows = append(s.overflows, fmt.Sprintf("%s: %d in flight, maxParallel %d", now.Format(time.TimeOnly), active, limit))
	}
	open := false
	for _, p := range pols.Items {
		open = open || p.Status.BreakerOpen
	}
	switch {
	case open && s.openSince.IsZero():
		s.openSince = now
	case !open && !s.openSince.IsZero():
		s.breakerOpen = append(s.breakerOpen, interval{s.openSince, now})
		s.openSince = time.Time{}
	}
	for _, pdb := range pdbs.Items {
		if pdb.Status.ObservedGeneration == 0 {
			continue
		}
		s.pdbSeen = true
		margin := int(pdb.Status.CurrentHealthy - pdb.Status.DesiredHealthy)
		s.pdbMargin = min(s.pdbMargin, margin)
		if margin < 0 {
			s.pdbBelow++
		}
	}
	s.capacity(now, dt, fleetview.Build(nodes.Items, rems.Items), nodes.Items, pods.Items)
}

// capacity adds up node-time out of service and which pods a broken GPU
// hit, and tracks each slot's outages. In service is what the fleet view
// says (as `gpuheal status` and the status page count it): healthy or
// merely warned, not cordoned, no incident open.
func (s *sampler) capacity(now time.Time, dt time.Duration, view fleetview.View, nodes []corev1.Node, pods []corev1.Pod) {
	broken := map[string]bool{}
	for i := range nodes {
		broken[nodes[i].Name] = brokenNode(&nodes[i])
	}
	inService := map[string]bool{}
	for _, row := range view.Nodes {
		up := row.State.InService()
		if !up {
			s.lostNodeTime += dt
		}
		inService[schedule.SlotOf(row.Name)] = inService[schedule.SlotOf(row.Name)] || up
	}
	for i := range s.r.opts.Nodes {
		slot := testenv.NodeName(nodePrefix, i)
		since, down := s.slotDown[slot]
		switch {
		case !inService[slot] && !down:
			s.slotDown[slot] = now
		case inService[slot] && down:
			s.outages = append(s.outages, now.Sub(since))
			delete(s.slotDown, slot)
		}
	}
	for _, p := range pods {
		if p.Spec.NodeName == "" {
			continue
		}
		s.podsSeen[string(p.UID)] = true
		if _, ok := s.placed[string(p.UID)]; !ok {
			s.placed[string(p.UID)] = placement{node: p.Spec.NodeName, at: now}
		}
		if broken[p.Spec.NodeName] {
			s.podsHit[string(p.UID)] = true
		}
	}
}

// measureProcesses reads the RSS and goroutines of every live process of
// ours once it has run a minute (its warm-up).
func (s *sampler) measureProcesses(ctx context.Context) {
	s.r.mu.Lock()
	live := []struct {
		p    *procs.Process
		addr string
	}{{s.r.fleet, s.r.fleetAddr}}
	for i, c := range s.r.controllers {
		live = append(live, struct {
			p    *procs.Process
			addr string
		}{c, s.r.controllerAddr[i]})
	}
	s.r.mu.Unlock()
	for _, l := range live {
		if l.p == nil || time.Since(l.p.Started()) < time.Minute {
			continue
		}
		select {
		case <-l.p.Done():
			continue
		default:
		}
		rss, err := rssOf(l.p.PID())
		if err != nil {
			continue
		}
		routines, leader, err := scrapeProcess(ctx, "http://"+l.addr+"/metrics")
		if err != nil {
			continue
		}
		s.mu.Lock()
		f := s.footprints[l.p.PID()]
		if f == nil || f.leader != leader {
			f = &footprint{name: l.p.Name, leader: leader}
			s.footprints[l.p.PID()] = f
		}
		f.samples = append(f.samples, processSample{Time: time.Now(), RSS: rss, Goroutines: routines})
		s.mu.Unlock()
	}
}

// rssOf reads VmRSS of a process, in bytes.
func rssOf(pid int) (int64, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no VmRSS for pid %d", pid)
}

// scrapeProcess reads go_goroutines from a /metrics endpoint, and whether
// the process leads (controller-runtime's leader_election_master_status).
func scrapeProcess(ctx context.Context, url string) (routines int, leader bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, false, err
	}
	defer func() { _ = resp.Body.Close() }()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	found := false
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "go_goroutines "); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, false, err
			}
			routines, found = int(n), true
		}
		if strings.HasPrefix(line, "leader_election_master_status{") && strings.HasSuffix(line, " 1") {
			leader = true
		}
	}
	if !found {
		return 0, false, fmt.Errorf("%s has no go_goroutines", url)
	}
	return routines, leader, nil
}
