package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/agent/exporter"
	"github.com/gpuheal/gpuheal/internal/agent/kubecore"
	"github.com/gpuheal/gpuheal/internal/agent/nodestatus"
	"github.com/gpuheal/gpuheal/internal/gpu"
	"github.com/gpuheal/gpuheal/internal/gpu/nvml"
	"github.com/gpuheal/gpuheal/internal/gpureset"
)

// The agent's side of a single-GPU reset (docs/remediation.md,
// "Resetting one GPU"): it watches the NodeRemediations labelled with its
// node, takes a request the controller wrote into status.gpuReset, runs
// internal/gpureset's procedure on its own GPUs and answers in its Node's
// v1alpha1.AnnotationGPUReset. It never acts unasked, never for another
// node, and never twice on one request ID (resetJournal).

// noderemediationsPath is the NodeRemediation collection (cluster-scoped).
const noderemediationsPath = "/apis/gpuheal.io/v1alpha1/noderemediations"

// Watch timing. A watch is held longWatch by the server (a context
// bounds it on our side, longWatch+watchSlack, in case the server is
// partitioned away) and then resumes from the last resourceVersion; so a
// fleet's agents cost the API server a request each longWatch. Where the
// client's own request timeout cannot be lifted for the watch (a client
// that is not client-go's RESTClient) it is shortWatch, under the agent
// client's 10s. A failed list or watch is retried after a backoff that
// doubles from resetBackoffFirst to resetBackoffLast.
const (
	longWatch         = 5 * time.Minute
	watchSlack        = 30 * time.Second
	shortWatch        = 8 * time.Second
	resetBackoffFirst = time.Second
	resetBackoffLast  = 30 * time.Second
	// maxRequestGPUs bounds a request: a node has at most 16 GPUs.
	maxRequestGPUs = 16
	// maxRequestIDLen bounds the ID the agent journals and echoes.
	maxRequestIDLen = 253
)

var errReleasedForReset = errors.New("GPU backend released for a GPU reset")

// gpuResets takes and carries out GPU reset requests for one node.
type gpuResets struct {
	kube rest.Interface
	// watchKube is kube without its request timeout, for watches held
	// watchFor (watchClient).
	watchKube rest.Interface
	watchFor  time.Duration
	node      string
	log       *slog.Logger
	clk       clock.PassiveClock
	proc      *gpureset.Procedure
	before    func() *gpu.NodeSnapshot // the GPUs as the health loop last saw them
	forget    func(bus string)         // after a verified reset
	journal   *resetJournal
	metrics   *resetMetrics
	// published: request IDs whose final answer is on the Node (in this
	// process); a journaled answer not yet published is published again.
	published map[string]bool
}

// startGPUResets runs the reset side of the agent in the background. It
// does nothing without a GPU tool to reset with (the sim fleet's agents
// get theirs in Deps.GPUReset, the sim backend is its own, nvml and smi
// use nvidia-smi).
func startGPUResets(ctx context.Context, o *Options, d Deps, src gpu.Source, gate *driverGate, health *healthLoop,
	c *collector, exp *exporter.Exporter, clk clock.PassiveClock, log *slog.Logger) error {
	if d.Kube == nil || o.NodeName == "" {
		return nil
	}
	dev := d.GPUReset
	if dev == nil {
		dev = resetDevice(o, d.Source)
	}
	if dev == nil {
		log.Info("GPU reset off: no GPU tool to reset with")
		return nil
	}
	journal, err := openResetJournal(o.StateDir)
	if err != nil {
		// Not knowing which requests were taken, the agent takes none;
		// the controller escalates on its timeout.
		log.Error("GPU reset journal unreadable; GPU resets off", "err", err)
		return nil
	}
	m := newResetMetrics()
	if err := exp.Registry().Register(m); err != nil {
		return fmt.Errorf("registering GPU reset metrics: %w", err)
	}
	r := &gpuResets{
		kube: d.Kube, node: o.NodeName, log: log.With("component", "gpu-reset"), clk: clk,
		before: health.lastSnapshot, forget: health.forgetGPU, journal: journal, metrics: m,
		published: map[string]bool{},
	}
	r.watchKube, r.watchFor = watchClient(d.Kube)
	r.metrics.onChange = exp.Invalidate
	r.proc = &gpureset.Procedure{
		Device: dev,
		Clock:  clk,
		Snapshot: func(ctx context.Context) (*gpu.NodeSnapshot, error) {
			// Through the collector's path, so that the health loop sees
			// the repaired GPU now and the snapshot's NVML events are not
			// lost to it.
			s, err := src.Snapshot(ctx)
			if s != nil && c.onSnapshot != nil {
				c.onSnapshot(s)
			}
			return s, err
		},
	}
	if gate != nil && src.Name() != BackendSim {
		r.proc.Release = gate.releaseForReset
	}
	go r.run(ctx)
	return nil
}

// watchClient is kube for long watches (kubecore.WatchClient) and the
// watch length to ask for: shortWatch where the timeout stays.
func watchClient(kube rest.Interface) (rest.Interface, time.Duration) {
	if w, ok := kubecore.WatchClient(kube); ok {
		return w, longWatch
	}
	return kube, shortWatch
}

// resetDevice is the GPU tool for the agent's backend: the sim node
// itself, or nvidia-smi (nvml and smi backends).
func resetDevice(o *Options, src gpu.Source) gpureset.Device {
	for src != nil {
		if dev, ok := src.(gpureset.Device); ok {
			return dev
		}
		cs, ok := src.(*closingSource)
		if !ok {
			break
		}
		src = cs.Source
	}
	if o.Backend == BackendSim {
		return nil
	}
	path, env := resetToolPath(o)
	return &gpureset.SMIDevice{Path: path, Env: env}
}

// resetToolPath is the nvidia-smi the reset runs. In driver-root mode
// (--driver-root, the GPU Operator's /run/nvidia/driver) it is the
// driver's own, under the root, with the root's library directory on
// LD_LIBRARY_PATH; otherwise --nvidia-smi-path, which the container
// toolkit's injection or the host's PATH provides.
func resetToolPath(o *Options) (string, []string) {
	root := o.DriverRoot
	if root == "" || filepath.Clean(root) == "/" || filepath.IsAbs(o.SMIPath) {
		if p, err := exec.LookPath(o.SMIPath); err == nil {
			return p, nil
		}
		return o.SMIPath, nil
	}
	var env []string
	if lib, err := nvml.FindLibrary(root); err == nil && lib != "" {
		env = []string{"LD_LIBRARY_PATH=" + filepath.Dir(lib)}
	}
	for _, dir := range []string{"usr/bin", "bin", "."} {
		p := filepath.Join(root, dir, "nvidia-smi")
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, env
		}
	}
	return filepath.Join(root, "usr/bin/nvidia-smi"), env
}

// releaseForReset closes the backend for a reset of the GPUs at buses (an
// open NVML handle is a client of the GPU, and the reset is refused while
// one is) and pauses the health rules' reading of the GPUs; findings of
// the reset GPUs are dropped until it ends (dropWhilePaused), those of
// the others still count. The returned function lets the next read open
// the backend again.
func (g *driverGate) releaseForReset(buses []string) func() {
	set := make(map[string]bool, len(buses))
	for _, b := range buses {
		set[b] = true
	}
	g.mu.Lock()
	g.resetBuses.Store(&set)
	g.resetting.Store(true)
	if g.src != nil {
		if err := g.src.Close(); err != nil {
			g.log.Warn("closing GPU backend for a GPU reset", "err", err)
		}
		g.src = nil
	}
	g.mu.Unlock()
	return func() {
		g.resetting.Store(false)
		g.resetBuses.Store(nil)
	}
}

// forgetJournaled drops a reset GPU's findings from the fatal-finding
// journal, so that a restart does not replay them.
func (m *kmsgMonitor) forgetJournaled(bus string) {
	if m.journal == nil {
		return
	}
	if err := m.journal.forgetGPU(bus); err != nil {
		m.log.Warn("dropping a reset GPU's findings from the journal", "gpu", bus, "err", err)
	}
}

func (r *gpuResets) run(ctx context.Context) {
	r.answerInterrupted(ctx)
	backoff := resetBackoffFirst
	for ctx.Err() == nil {
		rv, err := r.list(ctx)
		for err == nil && ctx.Err() == nil {
			var progressed bool
			rv, progressed, err = r.watch(ctx, rv)
			if progressed {
				backoff = resetBackoffFirst
			}
		}
		if ctx.Err() != nil {
			return
		}
		r.log.Warn("watching GPU reset requests; listing again after a pause", "node", r.node, "err", err, "pause", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, resetBackoffLast)
	}
}

// answerInterrupted answers the requests a previous run of the agent took
// and never answered: the GPU may be half reset, so nothing runs again.
func (r *gpuResets) answerInterrupted(ctx context.Context) {
	for _, e := range r.journal.unfinished() {
		now := metav1.NewTime(r.clk.Now())
		rep := &v1alpha1.GPUResetReport{
			RequestID: e.RequestID, GPUs: e.GPUs, Outcome: v1alpha1.GPUResetFailed,
			Reason:    v1alpha1.ResetReasonInterrupted,
			Message:   "the agent restarted during this reset; it does not reset again (the GPU may be half reset)",
			StartedAt: e.StartedAt, FinishedAt: &now,
		}
		r.log.Warn("GPU reset interrupted by a restart; answering Failed", "request", e.RequestID)
		if err := r.journal.finish(rep); err != nil {
			r.log.Error("journaling the interrupted GPU reset", "request", e.RequestID, "err", err)
		}
		r.metrics.observe(rep, 0)
		r.publish(ctx, rep)
	}
}

// selector picks the node's incidents by the controller's label, whose
// value is the node name cut and hashed past 63 characters.
func (r *gpuResets) selector() string {
	return v1alpha1.LabelNode + "=" + v1alpha1.NodeLabelValue(r.node)
}

// list reads the node's incidents and offers each; it returns the list's
// resourceVersion to watch from.
func (r *gpuResets) list(ctx context.Context) (string, error) {
	var l v1alpha1.NodeRemediationList
	raw, err := r.kube.Get().AbsPath(noderemediationsPath).Param("labelSelector", r.selector()).DoRaw(ctx)
	if err != nil {
		return "", fmt.Errorf("listing NodeRemediations of node %s: %w", r.node, err)
	}
	if err := json.Unmarshal(raw, &l); err != nil {
		return "", fmt.Errorf("decoding NodeRemediations of node %s: %w", r.node, err)
	}
	for i := range l.Items {
		r.offer(ctx, &l.Items[i])
	}
	return l.ResourceVersion, nil
}

type watchEvent struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

// watch follows the node's incidents from rv until the server ends the
// watch (nil error: watch again from the returned version) or it fails
// (list again). progressed says an event came.
func (r *gpuResets) watch(ctx context.Context, rv string) (string, bool, error) {
	kube, length := r.watchKube, r.watchFor
	if kube == nil {
		kube, length = r.kube, shortWatch
	}
	// The stream's context, not the offers': a reset taken from this
	// watch must not end with it.
	wctx, cancel := context.WithTimeout(ctx, length+watchSlack)
	defer cancel()
	stream, err := kube.Get().AbsPath(noderemediationsPath).
		Param("labelSelector", r.selector()).Param("watch", "true").
		Param("resourceVersion", rv).Param("allowWatchBookmarks", "true").
		Param("timeoutSeconds", strconv.Itoa(int(length/time.Second))).Stream(wctx)
	if err != nil {
		return rv, false, fmt.Errorf("watching NodeRemediations of node %s: %w", r.node, err)
	}
	defer func() { _ = stream.Close() }()
	dec := json.NewDecoder(stream)
	progressed := false
	for {
		var ev watchEvent
		if err := dec.Decode(&ev); err != nil {
			if errors.Is(err, io.EOF) {
				return rv, progressed, nil
			}
			return rv, progressed, fmt.Errorf("reading the NodeRemediation watch of node %s: %w", r.node, err)
		}
		progressed = true
		switch ev.Type {
		case "ERROR":
			var st metav1.Status
			_ = json.Unmarshal(ev.Object, &st)
			return rv, progressed, fmt.Errorf("NodeRemediation watch of node %s: %s (%d)", r.node, st.Message, st.Code)
		case "ADDED", "MODIFIED", "BOOKMARK":
			var nr v1alpha1.NodeRemediation
			if err := json.Unmarshal(ev.Object, &nr); err != nil {
				return rv, progressed, fmt.Errorf("decoding a NodeRemediation of node %s: %w", r.node, err)
			}
			if nr.ResourceVersion != "" {
				rv = nr.ResourceVersion
			}
			if ev.Type != "BOOKMARK" {
				r.offer(ctx, &nr)
			}
		case "DELETED":
		}
	}
}

// offer takes the incident's reset request when it is one for this node
// that nobody answered, and carries it out.
func (r *gpuResets) offer(ctx context.Context, nr *v1alpha1.NodeRemediation) {
	req := nr.Status.GPUReset
	switch {
	case nr.Spec.NodeName != r.node:
		// The label is the controller's; the spec says which node the
		// incident is for. Another node's request is not ours to run.
		return
	case req == nil || req.RequestedAt == nil || req.RequestID == "" || req.Outcome != "":
		return
	case nr.Status.Phase != v1alpha1.PhaseResetting:
		return
	}
	if e, ok := r.journal.lookup(req.RequestID); ok {
		if e.Report != nil && !r.published[req.RequestID] {
			r.publish(ctx, e.Report) // answered before, not yet seen on the Node
		}
		return
	}
	start := r.clk.Now()
	rep := &v1alpha1.GPUResetReport{RequestID: req.RequestID, GPUs: req.GPUs, Outcome: v1alpha1.GPUResetRunning, StartedAt: metav1.NewTime(start)}
	if why := badRequest(req); why != "" {
		r.refuse(ctx, nr, rep, why)
		return
	}
	if err := r.journal.start(req.RequestID, req.GPUs, rep.StartedAt); err != nil {
		// Unjournaled, the reset might run twice after a crash: refuse.
		r.log.Error("journaling a GPU reset request; refusing it", "request", req.RequestID, "err", err)
		r.refuse(ctx, nr, rep, "the agent cannot journal the request: "+err.Error())
		return
	}
	r.log.Info("GPU reset requested", "incident", nr.Name, "request", req.RequestID, "gpus", describeRefs(req.GPUs))
	r.publish(ctx, rep)

	res := r.proc.Run(ctx, req.GPUs, r.before())
	now := r.clk.Now()
	final := *rep
	final.Outcome, final.Reason, final.Message, final.Steps = res.Outcome, res.Reason, res.Message, res.Steps
	final.FinishedAt = &metav1.Time{Time: now}
	if ctx.Err() != nil && res.Outcome != v1alpha1.GPUResetSucceeded {
		final.Reason = v1alpha1.ResetReasonInterrupted
		final.Message = "the agent stopped during the reset: " + res.Message
	}
	if res.Outcome == v1alpha1.GPUResetSucceeded {
		// The buses the procedure resolved before the reset: the health
		// loop's snapshot may be gone by now (a collection failed).
		for _, bus := range res.Buses {
			r.forget(bus)
		}
	}
	if err := r.journal.finish(&final); err != nil {
		r.log.Error("journaling the GPU reset's answer", "request", req.RequestID, "err", err)
	}
	r.metrics.observe(&final, now.Sub(start))
	r.log.Info("GPU reset done", "request", req.RequestID, "outcome", final.Outcome, "reason", final.Reason, "message", final.Message, "took", now.Sub(start))
	pctx := ctx
	if ctx.Err() != nil {
		// Stopping: one short try, the next start publishes it otherwise.
		var cancel context.CancelFunc
		pctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
	}
	r.publish(pctx, &final)
}

// badRequest says what is wrong with a request before it is taken.
func badRequest(req *v1alpha1.GPUResetStatus) string {
	switch {
	case len(req.RequestID) > maxRequestIDLen:
		return fmt.Sprintf("request ID of %d characters, more than %d", len(req.RequestID), maxRequestIDLen)
	case len(req.GPUs) == 0:
		return "the request names no GPU"
	case len(req.GPUs) > maxRequestGPUs:
		return fmt.Sprintf("the request names %d GPUs, more than %d", len(req.GPUs), maxRequestGPUs)
	}
	return ""
}

// refuse answers a request Failed/ResetRefused without acting; it is
// journaled (best effort) so that it is refused once.
func (r *gpuResets) refuse(ctx context.Context, nr *v1alpha1.NodeRemediation, rep *v1alpha1.GPUResetReport, why string) {
	now := metav1.NewTime(r.clk.Now())
	rep.Outcome, rep.Reason, rep.Message, rep.FinishedAt = v1alpha1.GPUResetFailed, v1alpha1.ResetReasonRefused, why, &now
	if len(rep.RequestID) > maxRequestIDLen {
		rep.RequestID = rep.RequestID[:maxRequestIDLen]
	}
	if len(rep.GPUs) > maxRequestGPUs {
		rep.GPUs = rep.GPUs[:maxRequestGPUs]
	}
	if err := r.journal.start(rep.RequestID, rep.GPUs, rep.StartedAt); err == nil {
		_ = r.journal.finish(rep)
	}
	r.log.Warn("GPU reset request refused", "incident", nr.Name, "request", rep.RequestID, "why", why)
	r.metrics.observe(rep, 0)
	r.publish(ctx, rep)
}

// publish writes the answer on the Node, retrying with backoff for about
// half a minute; a final answer that never got through is published again
// when the request is seen next (offer).
func (r *gpuResets) publish(ctx context.Context, rep *v1alpha1.GPUResetReport) {
	wait := resetBackoffFirst
	for attempt := 1; ; attempt++ {
		err := nodestatus.PatchGPUReset(ctx, r.kube, r.node, rep)
		if err == nil {
			if rep.Outcome != v1alpha1.GPUResetRunning {
				r.published[rep.RequestID] = true
			}
			return
		}
		if attempt == 5 || ctx.Err() != nil {
			r.log.Error("publishing the GPU reset answer", "request", rep.RequestID, "outcome", rep.Outcome, "err", err)
			return
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
		wait *= 2
	}
}

func describeRefs(refs []v1alpha1.GPURef) string {
	b, _ := json.Marshal(refs)
	return string(b)
}
