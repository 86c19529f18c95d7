package agent

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/rest"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/gpu/sim"
)

// SimFleetOptions configure --sim-fleet: one simulated agent per GPU node
// of the cluster, all in one process, for the demo and the soak test.
type SimFleetOptions struct {
	Enabled bool
	// NodeSelector picks the nodes that get an agent, as the DaemonSet's
	// nodeSelector does in a real cluster.
	NodeSelector string
	// Dir holds each agent's simulated kernel log; "" is a temporary
	// directory removed on exit.
	Dir string
	// FaultsPerMinute is the mean rate of faults injected into the fleet
	// (arrivals are a Poisson process); 0 injects none.
	FaultsPerMinute float64
	// Seed makes the fault draws and the simulated GPUs reproducible.
	Seed int64
	// Resync is how often the fleet lists the nodes to start agents on new
	// nodes and stop them on deleted or rebooting ones.
	Resync time.Duration
	// ScheduleFile is a fleet fault schedule (JSON lines of ScheduledFault,
	// see DrawSchedule), run from Epoch; a restarted fleet skips what its
	// journal says was done.
	ScheduleFile string
	// Epoch is when the schedule starts; zero means when the fleet starts.
	Epoch time.Time
}

// RunSimFleet runs the sim fleet until ctx ends. Every node matching the
// selector gets an agent with its own simulated GPUs and kernel log; the
// fleet serves its own metrics at /metrics and each node's at
// /nodes/NODE/metrics on o.MetricsAddress.
func RunSimFleet(ctx context.Context, o *Options, log *slog.Logger) error {
	// Loaded once for every agent, and a bad model file stops the fleet.
	model, err := loadPredictorModel(o)
	if err != nil {
		return err
	}
	o.predictorModel = model
	kube, err := clientFor(o.Kubeconfig, 50)
	if err != nil {
		return err
	}
	dir := o.SimFleet.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "gpuheal-simfleet-"); err != nil {
			return fmt.Errorf("sim fleet: %w", err)
		}
		defer func() { _ = os.RemoveAll(dir) }()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--sim-fleet-dir: %w", err)
	}
	f := newSimFleet(o, kube, dir, log)
	if err := f.loadSchedule(); err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(f.registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/nodes/", f.serveNodeMetrics)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	srv, addr, err := serveHTTP(o.MetricsAddress, mux)
	if err != nil {
		return err
	}
	log.Info("sim fleet serving metrics", "address", addr, "node metrics", "/nodes/NODE/metrics")
	f.run(ctx)
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(shutdown)
}

type simFleet struct {
	opts *Options
	kube rest.Interface
	dir  string
	log  *slog.Logger
	rng  *rand.Rand

	mu          sync.Mutex
	agents      map[string]*simAgent
	generations map[string]int // agents started per node, for fresh seeds and files
	// nonce tells this process's kernel-log files from a previous one's.
	nonce int64

	schedule []ScheduledFault
	next     int // first schedule entry not handled yet
	epoch    time.Time

	registry *prometheus.Registry
	running  prometheus.Gauge
	injected *prometheus.CounterVec
	starts   prometheus.Counter
}

// simAgent is one node's agent: its simulated GPUs and how to stop it.
type simAgent struct {
	name string
	node *sim.Node
	// hardware is what this boot's GPUs carry, also on disk.
	hardware nodeFaults
	logPath  string
	cancel   context.CancelFunc
	done     chan struct{}
	metrics  atomic.Pointer[http.Handler]
}

// faulted: a fatal fault was injected in this boot; the node gets no
// second one before its (simulated) repair.
func (a *simAgent) faulted() bool { return a.hardware.Faulted }

func newSimFleet(o *Options, kube rest.Interface, dir string, log *slog.Logger) *simFleet {
	f := &simFleet{
		opts: o, kube: kube, dir: dir, log: log,
		rng:         rand.New(rand.NewPCG(uint64(o.SimFleet.Seed), 0x5eed)), //nolint:gosec // a reproducible simulation, not security
		agents:      map[string]*simAgent{},
		generations: map[string]int{},
		nonce:       time.Now().UnixNano(),
		epoch:       o.SimFleet.Epoch,
		registry:    prometheus.NewRegistry(),
		running: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gpuheal_simfleet_agents", Help: "Simulated agents running, one per GPU node that is up.",
		}),
		injected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpuheal_simfleet_faults_injected_total", Help: "Faults the sim fleet injected, by failure class.",
		}, []string{"class"}),
		starts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpuheal_simfleet_agent_starts_total", Help: "Simulated agents started (node boots included).",
		}),
	}
	// The process's own footprint, as every gpuheal process serves it (the
	// soak test watches it for growth).
	f.registry.MustRegister(f.running, f.injected, f.starts, collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return f
}

func (f *simFleet) run(ctx context.Context) {
	resync := time.NewTicker(f.opts.SimFleet.Resync)
	defer resync.Stop()
	nextFault := f.faultTimer()
	defer f.stopAll()
	for {
		if err := f.reconcile(ctx); err != nil && ctx.Err() == nil {
			f.log.Warn("sim fleet: listing nodes", "err", err)
		}
		scheduled, stopScheduled := f.scheduleTimer()
		select {
		case <-ctx.Done():
			stopScheduled()
			return
		case <-resync.C:
		case <-nextFault:
			f.injectOne()
			nextFault = f.faultTimer()
		case <-scheduled:
			f.injectDue(time.Now())
		}
		stopScheduled()
	}
}

// scheduleTimer fires when the next scheduled fault is due (nil: none).
func (f *simFleet) scheduleTimer() (<-chan time.Time, func()) {
	if f.next >= len(f.schedule) {
		return nil, func() {}
	}
	t := time.NewTimer(time.Until(f.epoch.Add(f.schedule[f.next].At)))
	return t.C, func() { t.Stop() }
}

// loadSchedule reads the schedule and the journal of a previous run of
// the fleet, so that a restart injects nothing twice.
func (f *simFleet) loadSchedule() error {
	if f.epoch.IsZero() {
		f.epoch = time.Now()
	}
	if f.opts.SimFleet.ScheduleFile == "" {
		return nil
	}
	sched, err := LoadSchedule(f.opts.SimFleet.ScheduleFile)
	if err != nil {
		return fmt.Errorf("--sim-fleet-schedule: %w", err)
	}
	f.schedule = sched
	done, err := ReadInjections(f.dir)
	if err != nil {
		f.log.Warn("sim fleet: the injection journal ends in a bad line; going on after the good ones", "err", err)
	}
	for _, in := range done {
		f.next = max(f.next, in.Index+1)
	}
	return nil
}

// injectDue injects every scheduled fault whose time has come into the
// node now in its slot, or journals why not.
func (f *simFleet) injectDue(now time.Time) {
	for f.next < len(f.schedule) && !f.epoch.Add(f.schedule[f.next].At).After(now) {
		e := f.schedule[f.next]
		f.injectScheduled(f.next, e)
		f.next++
	}
}

func (f *simFleet) injectScheduled(index int, e ScheduledFault) {
	class, _ := faultClassNamed(e.Class)
	f.mu.Lock()
	defer f.mu.Unlock()
	var a *simAgent
	for name, cand := range f.agents {
		if SlotOf(name) == e.Slot {
			a = cand
		}
	}
	in := Injection{Index: index, Time: time.Now(), Slot: e.Slot, Class: e.Class, Kind: class.fault.Kind, GPU: e.GPU, Fatal: class.fatal}
	switch {
	case a == nil:
		in.Skipped = "no machine up in the slot (rebooting, booting or gone)"
	case class.fatal && a.faulted():
		in.Node = a.name
		in.Skipped = "the machine already has a fatal fault in this boot"
	default:
		f.injectLocked(a, class, e.GPU, in)
		return
	}
	f.journal(in)
	f.log.Info("sim fleet: scheduled fault skipped", "slot", e.Slot, "class", e.Class, "why", in.Skipped)
}

// faultTimer fires after an exponential wait, so faults arrive as a
// Poisson process at FaultsPerMinute; nil (never) when the rate is 0.
func (f *simFleet) faultTimer() <-chan time.Time {
	rate := f.opts.SimFleet.FaultsPerMinute
	if rate <= 0 {
		return nil
	}
	wait := time.Duration(f.rng.ExpFloat64() / rate * float64(time.Minute))
	return time.After(wait)
}

// reconcile starts an agent on every up node and stops those whose node
// went away or is rebooting: while the kwok provider's booting label is on
// a node its agent is down, as on a real machine, and the next one starts
// on healed hardware.
func (f *simFleet) reconcile(ctx context.Context) error {
	var nodes kubeNodeList
	req := f.kube.Get().Resource("nodes")
	if sel := f.opts.SimFleet.NodeSelector; sel != "" {
		req = req.Param("labelSelector", sel)
	}
	if err := getInto(ctx, req, &nodes); err != nil {
		return err
	}
	up := make(map[string]*kubeNode, len(nodes.Items))
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if n.DeletionTimestamp == nil && n.Labels[v1alpha1.LabelKwokBooting] == "" {
			up[n.Name] = n
		}
	}
	f.mu.Lock()
	var stop []*simAgent
	for name, a := range f.agents {
		if up[name] == nil {
			stop = append(stop, a)
			delete(f.agents, name)
		}
	}
	var start []string
	for name := range up {
		if f.agents[name] == nil {
			start = append(start, name)
		}
	}
	f.mu.Unlock()
	for _, a := range stop {
		a.stop()
	}
	slices.Sort(start)
	for _, name := range start {
		if err := f.start(ctx, up[name]); err != nil {
			f.log.Error("sim fleet: starting agent", "node", name, "err", err)
		}
	}
	f.mu.Lock()
	f.running.Set(float64(len(f.agents)))
	f.mu.Unlock()
	return nil
}

// start runs a fresh agent for the node: new simulated GPUs (the
// hardware after a repair is healthy) and a new kernel-log file, so the
// old boot's Xid lines are not read again.
//
// A machine that is still in the boot it had when a previous fleet
// process stopped keeps its faults: they are injected again.
func (f *simFleet) start(ctx context.Context, n *kubeNode) error {
	name := n.Name
	f.mu.Lock()
	gen := f.generations[name]
	f.generations[name] = gen + 1
	f.mu.Unlock()

	logPath := filepath.Join(f.dir, fmt.Sprintf("%s.%x.%d.kmsg", name, f.nonce, gen))
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	node, err := sim.New(sim.Options{
		NodeName: name, GPUs: f.opts.Sim.GPUs, Model: f.opts.Sim.Model,
		Seed: f.opts.SimFleet.Seed ^ nameSeed(name) ^ int64(gen), KernelLog: logFile,
	})
	if err != nil {
		_ = logFile.Close()
		return err
	}
	a := &simAgent{name: name, node: node, logPath: logPath, done: make(chan struct{}), hardware: f.loadFaults(name, bootOf(n))}
	for _, fault := range a.hardware.Faults {
		if err := node.Inject(fault); err != nil {
			f.log.Error("sim fleet: restoring a fault of this boot", "node", name, "fault", fault.Kind, "err", err)
		}
	}
	o := *f.opts
	o.NodeName = name
	o.ExpectedGPUs = f.opts.Sim.GPUs
	o.KmsgPath = logPath
	o.StateDir = "" // a new boot starts a new log; nothing to resume
	o.PushGateway = ""
	o.source = &closingSource{Source: newSMIChaosSource(node, f.dir, name, f.opts), extra: logFile}
	o.kube = f.kube
	o.publishMetrics = func(h http.Handler) { a.metrics.Store(&h) }

	agentCtx, cancel := context.WithCancel(ctx)
	a.cancel = cancel
	f.mu.Lock()
	f.agents[name] = a
	f.mu.Unlock()
	f.starts.Inc()
	go func() {
		defer close(a.done)
		if err := Run(agentCtx, &o, io.Discard, f.log.With("node", name)); err != nil && agentCtx.Err() == nil {
			f.log.Error("sim fleet: agent stopped", "node", name, "err", err)
		}
	}()
	f.log.Debug("sim fleet: agent started", "node", name, "boot", gen)
	return nil
}

func (a *simAgent) stop() {
	a.cancel()
	<-a.done
	_ = os.Remove(a.logPath)
}

func (f *simFleet) stopAll() {
	f.mu.Lock()
	agents := f.agents
	f.agents = map[string]*simAgent{}
	f.mu.Unlock()
	for _, a := range agents {
		a.stop()
	}
}

// injectOne puts a fault drawn from the failure mix on a random node that
// has none yet.
func (f *simFleet) injectOne() {
	f.mu.Lock()
	defer f.mu.Unlock()
	var healthy []string
	for name, a := range f.agents {
		if !a.faulted() {
			healthy = append(healthy, name)
		}
	}
	if len(healthy) == 0 {
		return
	}
	slices.Sort(healthy)
	name := healthy[f.rng.IntN(len(healthy))]
	class := drawFault(f.rng)
	gpu := f.rng.IntN(max(f.opts.Sim.GPUs, 1))
	f.injectLocked(f.agents[name], class, gpu, Injection{Index: -1, Time: time.Now(), Slot: SlotOf(name), Class: class.name})
}

// injectLocked puts the fault on the agent's GPUs, keeps it on disk for a
// restarted fleet, and journals it. f.mu is held.
func (f *simFleet) injectLocked(a *simAgent, class faultClass, gpu int, in Injection) {
	fault := class.fault
	fault.GPU = gpu
	in.Node, in.Kind, in.GPU, in.Fatal = a.name, fault.Kind, gpu, class.fatal
	if err := a.node.Inject(fault); err != nil {
		in.Skipped = "the simulator refused it: " + err.Error()
		f.journal(in)
		f.log.Error("sim fleet: injecting fault", "node", a.name, "class", class.name, "err", err)
		return
	}
	a.hardware.Faults = append(a.hardware.Faults, fault)
	a.hardware.Faulted = a.hardware.Faulted || class.fatal
	if err := f.saveFaults(a.name, a.hardware); err != nil {
		f.log.Error("sim fleet: keeping the fault on disk", "node", a.name, "err", err)
	}
	f.journal(in)
	f.injected.WithLabelValues(class.name).Inc()
	f.log.Info("sim fleet: fault injected", "node", a.name, "gpu", gpu, "class", class.name, "fault", fault.Kind, "fatal", class.fatal)
}

// serveNodeMetrics serves /nodes/NODE/metrics from that node's agent.
func (f *simFleet) serveNodeMetrics(w http.ResponseWriter, r *http.Request) {
	name, ok := strings.CutSuffix(strings.TrimPrefix(r.URL.Path, "/nodes/"), "/metrics")
	if !ok || name == "" {
		http.Error(w, "want /nodes/NODE/metrics", http.StatusNotFound)
		return
	}
	f.mu.Lock()
	a := f.agents[name]
	f.mu.Unlock()
	if a == nil {
		http.Error(w, fmt.Sprintf("no agent runs for node %q (unknown, deleted or rebooting)", name), http.StatusNotFound)
		return
	}
	h := a.metrics.Load()
	if h == nil {
		http.Error(w, fmt.Sprintf("agent of node %q has not collected yet", name), http.StatusServiceUnavailable)
		return
	}
	(*h).ServeHTTP(w, r)
}

// nameSeed gives each node its own simulated serials and UUIDs.
func nameSeed(name string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	return int64(h.Sum64() >> 1)
}

// errSimFleetStandalone: the fleet exists only to talk to a cluster.
var errSimFleetStandalone = errors.New("--sim-fleet needs a cluster: it cannot run with --standalone")
