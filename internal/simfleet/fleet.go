package simfleet

import (
	"context"
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
	"k8s.io/utils/clock"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/agent"
	"github.com/gpuheal/gpuheal/internal/agent/kubecore"
	"github.com/gpuheal/gpuheal/internal/agent/predictor"
	"github.com/gpuheal/gpuheal/internal/fabric"
	"github.com/gpuheal/gpuheal/internal/gpu/sim"
	"github.com/gpuheal/gpuheal/internal/simfleet/schedule"
)

// Run runs the sim fleet until ctx ends. Every node matching the selector
// gets an agent, run with the options of tmpl and its own simulated GPUs
// and kernel log; the fleet serves its own metrics at /metrics and each
// node's at /nodes/NODE/metrics on tmpl.MetricsAddress, and takes faults
// asked for at /nodes/NODE/faults (injectapi.go).
func Run(ctx context.Context, o Options, tmpl agent.Options, log *slog.Logger) error {
	// Loaded once for every agent, and a bad model file stops the fleet.
	model, err := predictor.Load(tmpl.Predictor)
	if err != nil {
		return err
	}
	kube, err := kubecore.NewClient(tmpl.Kubeconfig, 50)
	if err != nil {
		return err
	}
	dir := o.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "gpuheal-simfleet-"); err != nil {
			return fmt.Errorf("sim fleet: %w", err)
		}
		defer func() { _ = os.RemoveAll(dir) }()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--sim-fleet-dir: %w", err)
	}
	f := newSimFleet(o, tmpl, kube, dir, log)
	f.model = model
	if err := f.loadSchedule(); err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(f.registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/nodes/", f.serveNode)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	srv, addr, err := agent.ServeHTTP(tmpl.MetricsAddress, mux)
	if err != nil {
		return err
	}
	log.Info("sim fleet serving metrics", "address", addr, "nodeMetrics", "/nodes/NODE/metrics")
	f.run(ctx)
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(shutdown)
}

type simFleet struct {
	opts Options
	// agent is every agent's options but its node's.
	agent agent.Options
	kube  rest.Interface
	model *predictor.Model
	dir   string
	log   *slog.Logger
	rng   *rand.Rand

	mu          sync.Mutex
	agents      map[string]*simAgent
	generations map[string]int // agents started per node, for fresh seeds and files
	// nonce tells this process's kernel-log files from a previous one's.
	nonce int64
	// devices are the nodes' device managers (devicesOf).
	devices map[string]*deviceManager

	schedule []schedule.ScheduledFault
	next     int // first schedule entry not handled yet
	epoch    time.Time
	// lineage numbers each slot's boards, for faults pinned to one.
	lineage schedule.Lineage

	registry *prometheus.Registry
	running  prometheus.Gauge
	injected *prometheus.CounterVec
	starts   prometheus.Counter
}

// simAgent is one node's agent: its simulated GPUs and how to stop it.
type simAgent struct {
	name string
	node *sim.Node
	// fabric is the node's simulated RDMA fabric.
	fabric sim.FabricOptions
	// hardware is what this boot's GPUs carry, also on disk.
	hardware nodeFaults
	// board is what the machine carries across boots (latent faults,
	// fabric faults), also on disk.
	board   boardFaults
	logPath string
	cancel  context.CancelFunc
	done    chan struct{}
	metrics atomic.Pointer[http.Handler]
}

// faulted: a fatal fault was injected in this boot, or one that outlives
// reboots (a fabric fault) on this machine; the node gets no second one
// before its (simulated) repair.
func (a *simAgent) faulted() bool { return a.hardware.Faulted || a.board.Faulted }

func newSimFleet(o Options, tmpl agent.Options, kube rest.Interface, dir string, log *slog.Logger) *simFleet {
	f := &simFleet{
		opts: o, agent: tmpl, kube: kube, dir: dir, log: log,
		rng:         rand.New(rand.NewPCG(uint64(o.Seed), 0x5eed)), //nolint:gosec // a reproducible simulation, not security
		agents:      map[string]*simAgent{},
		generations: map[string]int{},
		nonce:       time.Now().UnixNano(),
		epoch:       o.Epoch,
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
	resync := time.NewTicker(f.opts.Resync)
	defer resync.Stop()
	if f.opts.AnswerChecks {
		checks, stopChecks := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); f.runCheckAnswerer(checks) }()
		defer func() { stopChecks(); <-done }()
	}
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

// faultTimer fires after an exponential wait, so faults arrive as a
// Poisson process at FaultsPerMinute; nil (never) when the rate is 0.
func (f *simFleet) faultTimer() <-chan time.Time {
	rate := f.opts.FaultsPerMinute
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
	var nodes kubecore.NodeList
	req := f.kube.Get().Resource("nodes")
	if sel := f.opts.NodeSelector; sel != "" {
		req = req.Param("labelSelector", sel)
	}
	if err := kubecore.Get(ctx, req, &nodes); err != nil {
		return err
	}
	up := make(map[string]*kubecore.Node, len(nodes.Items))
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if n.DeletionTimestamp == nil && n.Labels[v1alpha1.LabelKwokBooting] == "" {
			up[n.Name] = n
		}
	}
	f.mu.Lock()
	f.observeBoards(nodes.Items)
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
	return f.updateBusy(ctx)
}

// start runs a fresh agent for the node: new simulated GPUs (the
// hardware after a repair is healthy) and a new kernel-log file, so the
// old boot's Xid lines are not read again.
//
// A machine that is still in the boot it had when a previous fleet
// process stopped keeps its faults: they are injected again.
func (f *simFleet) start(ctx context.Context, n *kubecore.Node) error {
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
	so := f.simOptions(name, gen, n.Labels[v1alpha1.LabelInstanceType])
	so.KernelLog = logFile
	if want := fabric.ExpectedDevices(n.Labels[v1alpha1.LabelInstanceType]); want > 0 && want != so.Fabric.Devices {
		f.log.Warn("sim fleet: the node's instance type has another RDMA device count than its simulated fabric; the agent will read devices missing",
			"node", name, "instanceType", n.Labels[v1alpha1.LabelInstanceType], "expected", want, "simulated", so.Fabric.Devices)
	}
	node, err := sim.New(so)
	if err != nil {
		_ = logFile.Close()
		return err
	}
	a := &simAgent{name: name, node: node, fabric: so.Fabric, logPath: logPath, done: make(chan struct{}),
		hardware: f.loadFaults(name, bootOf(n)), board: f.loadBoard(name, string(n.UID))}
	for _, fault := range slices.Concat(a.board.Faults, a.hardware.Faults) {
		if err := node.Inject(fault); err != nil {
			f.log.Error("sim fleet: restoring a fault of this boot", "node", name, "fault", fault.Kind, "err", err)
		}
	}
	for _, gpu := range a.hardware.Surfaced {
		if err := node.SurfaceLatent(gpu); err != nil {
			f.log.Error("sim fleet: restoring a latent fault that surfaced in this boot", "node", name, "gpu", gpu, "err", err)
		}
	}
	o := f.agent
	o.NodeName = name
	o.ExpectedGPUs = f.agent.Sim.GPUs
	o.KmsgPath = logPath
	o.StateDir = "" // a new boot starts a new log; nothing to resume
	o.PushGateway = ""
	deps := agent.Deps{
		Source:         &closingSource{Source: newSMIChaosSource(node, f.dir, name, f.agent.CallTimeout), extra: logFile},
		GPUReset:       node, // the sim node resets its GPUs itself
		Kube:           f.kube,
		Model:          f.model,
		Clock:          clock.RealClock{},
		PublishMetrics: func(h http.Handler) { a.metrics.Store(&h) },
		PodResources:   f.devicesOf(name, node.UUIDs),
	}

	agentCtx, cancel := context.WithCancel(ctx)
	a.cancel = cancel
	f.mu.Lock()
	f.agents[name] = a
	f.mu.Unlock()
	f.starts.Inc()
	go func() {
		defer close(a.done)
		if err := agent.Run(agentCtx, &o, deps, io.Discard, f.log.With("node", name)); err != nil && agentCtx.Err() == nil {
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

// simOptions are the simulated hardware of the node's boot gen: the
// agents' GPUs, the fabric of its instance type (Options.Fabric) and a
// seed of its own.
func (f *simFleet) simOptions(name string, gen int, instanceType string) sim.Options {
	return sim.Options{
		NodeName: name, GPUs: f.agent.Sim.GPUs, Model: f.agent.Sim.Model,
		Seed: f.opts.Seed ^ nameSeed(name) ^ int64(gen), Fabric: f.opts.fabricFor(instanceType),
	}
}

// nameSeed gives each node its own simulated serials and UUIDs.
func nameSeed(name string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	return int64(h.Sum64() >> 1)
}
