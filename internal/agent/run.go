package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/agent/exporter"
	"github.com/gpuheal/gpuheal/internal/agent/nodestatus"
	"github.com/gpuheal/gpuheal/internal/agent/predictor"
	"github.com/gpuheal/gpuheal/internal/analyzer"
	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/gpu"
	"github.com/gpuheal/gpuheal/internal/gpu/host"
	"github.com/gpuheal/gpuheal/internal/gpucheck"
	"github.com/gpuheal/gpuheal/internal/kmsg"
	"github.com/gpuheal/gpuheal/internal/xid"
)

// Run is gpuheal-agent: it collects from d.Source until ctx ends, and
// closes it. With Standalone+Once it prints one snapshot to out and
// returns.
func Run(ctx context.Context, o *Options, d Deps, out io.Writer, log *slog.Logger) error {
	if d.Source == nil {
		return errors.New("agent: no GPU backend given")
	}
	src, model, kube := d.Source, d.Model, d.Kube
	var gate *driverGate // releases the driver during GPU Operator upgrades
	if kube != nil && d.Open != nil && !o.Once {
		gate = newDriverGate(src, d.Open, log)
		src = gate
	}
	clk := d.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	defer func() {
		if err := src.Close(); err != nil {
			log.Warn("closing GPU backend", "err", err)
		}
	}()
	log.Info("GPU backend ready", "backend", src.Name())

	fab := fabricReader(o)
	if fab != nil {
		defer func() {
			if err := fab.Close(); err != nil {
				log.Warn("closing the fabric reader", "err", err)
			}
		}()
	}
	var expected, expectedRDMA atomic.Int64
	expected.Store(int64(o.ExpectedGPUs))
	expectedRDMA.Store(int64(o.ExpectedRDMADevices))
	exp := exporter.New(exporter.Options{RuntimeMetrics: true})
	c := &collector{
		src:          src,
		hostOpts:     host.Options{Root: o.HostRoot},
		probeHost:    src.Name() != BackendSim,
		expectedGPUs: func() int { return int(expected.Load()) },
		readFabric:   fab,
		expectedRDMA: func() int { return int(expectedRDMA.Load()) },
		exp:          exp,
		log:          log,
		now:          clk.Now,
		returnMemory: o.ReturnMemory,
	}

	if o.Once {
		// One snapshot is the GPUs' state; the kernel log is a stream and
		// belongs to the long-running agent (or `gpuheal diagnose`).
		snap, err := c.collectOnce(ctx, o.Interval)
		if err != nil {
			return err
		}
		return printSnapshot(out, snap, o.Output)
	}

	health, err := startHealth(ctx, o, exp, kube, clk, log)
	if err != nil {
		return err
	}
	if err := startGPUFaults(health, exp, d.PodResources, clk, log); err != nil {
		return err
	}
	threshold := o.ReadyThreshold
	if threshold == 0 {
		threshold = DefaultReadyThreshold
	}
	ready := newReadiness(clk, threshold)
	xids, err := startXidMerge(o, health, log)
	if err != nil {
		return err
	}
	c.onSnapshot = func(s *gpu.NodeSnapshot) {
		if gate != nil && gate.paused() {
			ready.observe(readyGPU, nil) // the driver is away on purpose
			return
		}
		var err error
		if s == nil {
			err = errNoSnapshot
		}
		ready.observe(readyGPU, err)
		// The snapshot first: an evaluation woken by the findings must
		// see the GPUs they name (on the first snapshot there was none,
		// and the NVML Xids were judged against no GPU and lost).
		health.setSnapshot(s)
		if health.conditions != nil && o.AgentChecksInterval > 0 {
			health.conditions.SetChecks(gpucheck.Report(s, d.BootID, clk.Now()))
		}
		// Not to the predictor: it reads NVML's Xids from the snapshot.
		xids.nvmlFindings(s, health.addFinding)
	}
	if health.conditions != nil {
		health.conditions.ObserveSync(func(err error) { ready.observe(readyAPI, err) })
	}
	onFinding := health.addFinding
	pred, err := startPredictor(ctx, o, model, exp, kube, clk, log)
	if err != nil {
		return err
	}
	if health.conditions != nil {
		if pred != nil {
			pred.Condition = health.conditions.SetExtra
		} else {
			health.conditions.SetExtra(predictor.OffCondition(clk.Now()))
		}
	}
	if pred != nil {
		c.beforeExport = pred.Observe
		onFinding = func(f finding.Finding) {
			health.addFinding(f)
			pred.AddFinding(f)
		}
	}

	if gate != nil {
		onFinding = gate.dropWhilePaused(onFinding)
	}
	if kube != nil {
		// The Node's count wins over --expected-gpus (expected's first
		// value), which stays only while the Node names none.
		go watchOwnNode(ctx, kube, o.NodeName, ownNodeFacts{gpus: &expected, rdma: &expectedRDMA, rdmaFixed: o.ExpectedRDMADevices > 0, gate: gate}, o.Interval, time.Minute, log)
	}
	if err := startGPUResets(ctx, o, d, src, gate, health, c, exp, clk, log); err != nil {
		return err
	}

	if o.FabricManagerLog != "" {
		go followFabricManagerLog(ctx, o.FabricManagerLog, clk, onFinding, log)
	}
	if o.KmsgPath != "" {
		fromKernel := onFinding
		kernel := func(f finding.Finding) {
			if xids.fromKernel(f) {
				fromKernel(f)
			}
		}
		mon, err := startKmsgMonitor(ctx, o, exp, health.engine.RuleSet().XIDOverrides, kernel, log)
		if err != nil {
			return err
		}
		health.onForget(mon.forgetJournaled)
		health.onReload(func(rs *analyzer.RuleSet) {
			cat, err := xidCatalog(o, rs.XIDOverrides)
			if err != nil {
				log.Error("Xid overrides of the reloaded config rejected; keeping the previous ones", "err", err)
				return
			}
			mon.setCatalog(cat)
		})
	}

	if d.PublishMetrics != nil {
		// One of a sim fleet's agents: the fleet serves every node's metrics.
		d.PublishMetrics(exp.Handler())
		c.run(ctx, o.Interval)
		return nil
	}
	srv, addr, err := ServeHTTP(o.MetricsAddress, metricsMux(exp.Handler(), ready))
	if err != nil {
		return err
	}
	log.Info("serving metrics", "address", addr)
	if o.PushGateway != "" {
		p := exporter.NewPusher(o.PushGateway, "gpuheal-agent", exp.Gatherer(), map[string]string{"instance": instanceName(o)})
		go exporter.RunPusher(ctx, p, o.PushInterval, func(err error) { log.Warn("pushing metrics", "err", err) })
	}

	c.run(ctx, o.Interval)

	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(shutdown)
}

func instanceName(o *Options) string {
	if o.NodeName != "" {
		return o.NodeName
	}
	return "standalone"
}

// errNoSnapshot is the readiness error of a failed GPU read (the reason
// is in the log and the collector metrics).
var errNoSnapshot = errors.New("the GPU backend returned no snapshot")

// metricsMux serves h at /metrics with /healthz (the process answers) and
// /readyz (ready) beside it.
func metricsMux(h, ready http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	mux.Handle("/readyz", ready)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	return mux
}

// ServeHTTP serves h on addr. It listens first, so a port in use fails
// the start instead of a log line later, and returns the bound address
// (":0" in tests).
func ServeHTTP(addr string, h http.Handler) (*http.Server, string, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("listening for metrics on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			slog.Error("metrics server stopped", "err", err)
		}
	}()
	return srv, l.Addr().String(), nil
}

func printSnapshot(out io.Writer, snap *gpu.NodeSnapshot, format string) error {
	if format == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(snap)
	}
	fmt.Fprintf(out, "backend %s  driver %s  cuda %s  kernel module %s  GPUs %d found / %d expected\n",
		snap.Backend, snap.DriverVersion, snap.CUDADriverVersion, snap.KernelModuleVersion, snap.FoundGPUs, snap.ExpectedGPUs)
	for _, g := range snap.GPUs {
		temp := "n/a"
		if g.TemperatureCelsius != nil {
			temp = strconv.FormatFloat(*g.TemperatureCelsius, 'f', 0, 64) + "C"
		}
		state := "ok"
		if g.Missing {
			state = "MISSING"
		}
		fmt.Fprintf(out, "  %d  %s  %s  %s  %s  errors=%d\n", g.Index, g.PCIBusID, g.Name, temp, state, len(g.Errors))
	}
	return nil
}

// startKmsgMonitor runs the kernel-log monitor in the background. A kernel
// log the agent cannot read (no privilege, no device) is logged and the
// agent goes on with GPU telemetry alone.
//
// The Xid catalog is the default, then --xid-config, then the `xid:`
// section of the rules config (again on every reload of it).
func startKmsgMonitor(ctx context.Context, o *Options, exp *exporter.Exporter, overrides map[uint64]xid.Override, onFinding func(finding.Finding), log *slog.Logger) (*kmsgMonitor, error) {
	cat, err := xidCatalog(o, overrides)
	if err != nil {
		return nil, err
	}
	if o.StateDir != "" {
		if err := os.MkdirAll(o.StateDir, 0o755); err != nil {
			return nil, fmt.Errorf("--state-dir: %w", err)
		}
	}
	var journal *findingJournal
	if o.StateDir != "" {
		boot, _ := kmsg.ReadBootID(kmsg.DefaultBootIDPath) // "" when unknown: the journal then never matches a later boot
		var replay []finding.Finding
		journal, replay, err = openJournal(o.StateDir, boot)
		if err != nil {
			log.Warn("fatal-finding journal unreadable; starting a new one", "err", err)
		}
		for _, f := range replay {
			onFinding(f)
		}
		if len(replay) > 0 {
			log.Info("replayed fatal findings of this boot", "findings", len(replay))
		}
	}
	mon := &kmsgMonitor{path: o.KmsgPath, stateDir: o.StateDir, bootIDPath: kmsg.DefaultBootIDPath,
		catalog: cat, catalogs: make(chan xid.Catalog, 1), poll: o.KmsgPoll, log: log, journal: journal}
	km := newKmsgMetrics(mon)
	mon.onFinding = func(f finding.Finding) {
		km.observe(f)
		if journal != nil {
			if err := journal.record(f); err != nil {
				log.Warn("recording fatal finding", "err", err)
			}
		}
		onFinding(f)
		exp.Invalidate()
		if f.Severity == finding.Fatal {
			log.Warn("kernel log: fatal finding", "code", f.Code, "gpu", f.GPU, "action", f.Action, "message", f.Message)
		}
	}
	if err := exp.Registry().Register(km); err != nil {
		return nil, fmt.Errorf("registering kernel-log metrics: %w", err)
	}
	go func() {
		if err := mon.run(ctx); err != nil {
			log.Error("kernel-log monitor stopped", "path", o.KmsgPath, "err", err)
		}
	}()
	return mon, nil
}

// xidCatalog is the default catalog with --xid-config and then the rules
// config's overrides applied.
func xidCatalog(o *Options, overrides map[uint64]xid.Override) (xid.Catalog, error) {
	cat, err := xid.LoadFile(o.XidConfig)
	if err != nil {
		return cat, err
	}
	if len(overrides) > 0 {
		if cat, err = cat.WithOverrides(overrides); err != nil {
			return cat, fmt.Errorf("--config %s: xid: %w", o.ConfigFile, err)
		}
	}
	return cat, nil
}

// startHealth loads the rules (the defaults, or --config, watched for
// changes), and runs the analyzer on every snapshot and finding. Inside a
// cluster its conditions are published on the agent's own Node.
func startHealth(ctx context.Context, o *Options, exp *exporter.Exporter, kube rest.Interface, clk clock.Clock, log *slog.Logger) (*healthLoop, error) {
	rules := analyzer.DefaultRuleSet()
	if o.ConfigFile != "" {
		var err error
		if rules, err = analyzer.LoadFile(o.ConfigFile); err != nil {
			return nil, fmt.Errorf("--config: %w", err)
		}
	}
	engine := analyzer.NewEngine(rules, clk)
	if boot, err := kmsg.ReadBootID(kmsg.DefaultBootIDPath); err == nil {
		engine.Reboot(boot)
	}
	hm := newHealthMetrics(engine)
	if err := exp.Registry().Register(hm); err != nil {
		return nil, fmt.Errorf("registering health metrics: %w", err)
	}
	var pub *nodestatus.Conditions
	var events *nodestatus.WarningEvents
	if kube != nil {
		pub = nodestatus.NewConditions(kube, o.NodeName, clk, log)
		types, _ := v1alpha1.AgentConditionTypesFor(o.ConditionTypes) // validated
		pub.PublishAs(types)
		pub.ReportChecksEvery(o.AgentChecksInterval)
		if o.JoinGate {
			pub.GateJoin()
		}
		go pub.Run(ctx)
		events = nodestatus.NewWarningEvents(kube, o.NodeName, clk, log)
		go events.Run(ctx)
	}
	h := newHealthLoop(engine, func(r analyzer.Result, healthy int) {
		// The collection that led here has just encoded the metrics; encode
		// again only when the health view changed.
		if hm.set(r) {
			exp.Refresh()
		}
		for _, err := range r.Errors {
			log.Warn("health rule failed", "err", err)
		}
		if pub != nil {
			pub.Set(r.Conditions, healthy, activeWarnings(r))
			events.Offer(r)
		}
	})
	h.conditions = pub
	go h.run(ctx)
	if o.ConfigFile != "" {
		go analyzer.Watch(ctx, analyzer.WatchOptions{Path: o.ConfigFile, Current: rules,
			OnLoad: func(rs *analyzer.RuleSet) {
				engine.SetRuleSet(rs)
				h.reloaded(rs)
				exp.Invalidate() // gpuheal_rules_loaded
				log.Info("health rules reloaded", "rules", rs.Len())
			},
			OnError: func(err error) {
				hm.reloadErrors.Add(1)
				exp.Invalidate()
				log.Error("health rules rejected; the last good set stays active", "file", o.ConfigFile, "err", err)
			},
		})
	}
	return h, nil
}
