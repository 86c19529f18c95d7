package remediation

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/audit"
)

// The health gate outside an incident. A node that joins tainted
// TaintValidating runs its policy's checks before it takes work (purpose
// join); a node in service without GPU work runs them every idleInterval
// at the lowest priority (purpose idle), so a latent fault is found before
// a workload finds it. The checks are the incident's own (stepCheck);
// their record is the node's AnnotationGateRun (gaterun.go).

// joinRetryBackoff: a joining node that failed its checks is checked
// again no sooner than this, so a broken new node is not hammered (its
// Events say why it waits).
const joinRetryBackoff = 10 * time.Minute

// idleBusyRecheck: a node due for an idle check that runs GPU work is
// looked at again this much later (a pod's end also wakes it).
const idleBusyRecheck = 5 * time.Minute

// idleShare is the share of a policy's nodes that may run idle checks at
// once (at least one).
const idleShare = 5

// gateReconciler runs join and idle checks on nodes. It shares the
// incident reconciler's check machinery (Jobs, output, judging, clock).
type gateReconciler struct {
	*remediationReconciler

	mu sync.Mutex
	// idle: nodes this process started idle runs on, until it ends them,
	// so the bound holds while the cache lags our own writes.
	idle map[string]string // node → policy
}

func newGateReconciler(r *remediationReconciler) *gateReconciler {
	return &gateReconciler{remediationReconciler: r, idle: map[string]string{}}
}

func (g *gateReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	res, err := g.reconcileNode(ctx, req)
	if apierrors.IsConflict(err) {
		return ctrl.Result{RequeueAfter: 20 * time.Millisecond}, nil
	}
	return res, err
}

func (g *gateReconciler) reconcileNode(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var node corev1.Node
	if err := g.client.Get(ctx, req.NamespacedName, &node); err != nil {
		if apierrors.IsNotFound(err) {
			g.forget(req.Name) // its idle run, if any, went with it
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	run, perr := nodeRun(&node)
	if perr != nil {
		// The next run to start overwrites it.
		log.FromContext(ctx).Error(perr, "ignoring the node's check run record", "node", node.Name)
		run = nil
	}
	pols, err := policiesFor(ctx, g.client, &node)
	if err != nil {
		return ctrl.Result{}, err
	}
	var p *policy
	if len(pols) == 1 && pols[0].Spec.Validation != nil && len(pols[0].Spec.Validation.Checks) > 0 {
		p = pols[0]
	}
	items, err := incidentsOf(ctx, g.client, node.Name)
	if err != nil {
		return ctrl.Result{}, err
	}
	held := ""
	switch {
	case openIncident(items) != nil:
		held = "incident " + openIncident(items).Name + " took the node"
	case optedOut(&node):
		held = "the node is opted out of remediation"
	case p == nil:
		held = "no one policy with checks selects the node"
	}
	if run.running() {
		if held != "" || p.Name != run.Policy {
			if held == "" {
				held = "the node's policy is now " + p.Name
			}
			return ctrl.Result{}, g.endRun(ctx, &node, run, runSkipped, held+"; the run was abandoned", nil)
		}
		return g.advance(ctx, &node, p, run)
	}
	if held != "" || !nodeReady(&node) {
		return ctrl.Result{}, nil
	}
	v := p.Spec.Validation
	now := g.clock.Now()
	if v.OnJoin && hasValidatingTaint(&node) && node.Annotations[v1alpha1.AnnotationValidatedAt] == "" {
		if run != nil && run.Outcome != string(v1alpha1.CheckPassed) && run.Outcome != runSkipped {
			if wait := run.Ended.Add(joinRetryBackoff).Sub(now); wait > 0 {
				return ctrl.Result{RequeueAfter: wait}, nil
			}
		}
		// GPU pods that came before the taint, or tolerate it, hold the
		// GPUs the check's Job requests: it could not be scheduled.
		busy, err := g.gpuWorkload(ctx, node.Name)
		if err != nil || busy != "" {
			return ctrl.Result{RequeueAfter: idleBusyRecheck}, err
		}
		return g.startRun(ctx, &node, p, run, v1alpha1.CheckPurposeJoin)
	}
	if v.IdleInterval == nil || !inService(&node, p) {
		return ctrl.Result{}, nil
	}
	if wait := lastChecked(&node, run).Add(v.IdleInterval.Duration).Sub(now); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	busy, err := g.gpuWorkload(ctx, node.Name)
	if err != nil {
		return ctrl.Result{}, err
	}
	if busy != "" {
		return ctrl.Result{RequeueAfter: idleBusyRecheck}, nil
	}
	return g.startIdle(ctx, &node, p, run)
}

// inService reports whether the node takes work: Ready, not cordoned, no
// taint of gpuheal's and none of the policy's unhealthy conditions.
func inService(n *corev1.Node, p *policy) bool {
	return nodeReady(n) && !n.Spec.Unschedulable && !hasValidatingTaint(n) && !hasTaint(n) && p.unhealthyNow(n) == nil
}

// lastChecked is when the node was last validated, or its last idle run
// ended without a verdict: an idle check that gave way waits an interval.
func lastChecked(n *corev1.Node, run *gateRun) time.Time {
	var last time.Time
	if t, err := time.Parse(time.RFC3339, n.Annotations[v1alpha1.AnnotationValidatedAt]); err == nil {
		last = t
	}
	if run != nil && run.Ended != nil && run.Ended.After(last) {
		last = run.Ended.Time
	}
	return last
}

// gpuWorkload names a pod on the node that requests nvidia.com/gpu and has
// not ended (check pods aside), or is empty. Read past the cache with a
// field selector, as a drain does: no cluster-wide pod informer.
func (g *gateReconciler) gpuWorkload(ctx context.Context, node string) (string, error) {
	var pods corev1.PodList
	if err := g.reader.List(ctx, &pods, client.MatchingFields{podNodeField: node}); err != nil {
		return "", fmt.Errorf("listing the pods of node %s: %w", node, err)
	}
	gpu := corev1.ResourceName(v1alpha1.ResourceNvidiaGPU)
	for _, pod := range pods.Items {
		if pod.Labels[v1alpha1.LabelCheck] != "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
			if q, ok := c.Resources.Limits[gpu]; ok && !q.IsZero() {
				return pod.Namespace + "/" + pod.Name, nil
			}
			if q, ok := c.Resources.Requests[gpu]; ok && !q.IsZero() {
				return pod.Namespace + "/" + pod.Name, nil
			}
		}
	}
	return "", nil
}

// startIdle starts an idle run when fewer than the policy's bound run.
func (g *gateReconciler) startIdle(ctx context.Context, node *corev1.Node, p *policy, prev *gateRun) (ctrl.Result, error) {
	if ok, err := g.takeIdleSlot(ctx, node.Name, p); err != nil || !ok {
		return ctrl.Result{RequeueAfter: max(g.poll, time.Minute)}, err
	}
	res, err := g.startRun(ctx, node, p, prev, v1alpha1.CheckPurposeIdle)
	if err != nil {
		g.forget(node.Name) // the run may not have been written; the cache says once it is
	}
	return res, err
}

// takeIdleSlot reserves one of the policy's idle slots for node, when one
// is free: counting and reserving are one step, so two reconciles never
// take the last slot both.
func (g *gateReconciler) takeIdleSlot(ctx context.Context, node string, p *policy) (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	running, matched, err := g.idleRunning(ctx, p)
	if err != nil || len(running) >= max(1, matched*idleShare/100) {
		return false, err
	}
	g.idle[node] = p.Name
	return true, nil
}

// idleRunning is the set of the policy's nodes with an idle run under way
// (the cache's and this process's own), and how many nodes it selects.
func (g *gateReconciler) idleRunning(ctx context.Context, p *policy) (map[string]bool, int, error) {
	var nodes corev1.NodeList
	if err := g.client.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return nil, 0, fmt.Errorf("listing nodes: %w", err)
	}
	running := map[string]bool{}
	matched := 0
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if !p.matches(n) {
			continue
		}
		matched++
		if !strings.Contains(n.Annotations[v1alpha1.AnnotationGateRun], `"purpose":"idle"`) {
			continue // not an idle run: spares parsing every node's record
		}
		if run, err := nodeRun(n); err == nil && run.running() {
			running[n.Name] = true
		}
	}
	for n, pol := range g.idle {
		if pol == p.Name {
			running[n] = true
		}
	}
	return running, matched, nil
}

// startRun writes a new run of purpose on the node and takes its first step.
func (g *gateReconciler) startRun(ctx context.Context, node *corev1.Node, p *policy, prev *gateRun, purpose string) (ctrl.Result, error) {
	run := &gateRun{Purpose: purpose, Policy: p.Name, Attempt: 1, Started: metav1.NewTime(g.clock.Now())}
	if prev != nil {
		run.Attempt = prev.Attempt + 1
	}
	if err := g.saveRun(ctx, node, run, nil); err != nil {
		return ctrl.Result{}, err
	}
	g.recorder.Eventf(node, nil, corev1.EventTypeNormal, v1alpha1.ReasonValidating, purposeAction(purpose),
		"%s run %d: %s under policy %s", purpose, run.Attempt, checkNames(p.Spec.Validation.Checks), p.Name)
	return g.advance(ctx, node, p, run)
}

// advance runs the checks in order, each once per run.
func (g *gateReconciler) advance(ctx context.Context, node *corev1.Node, p *policy, run *gateRun) (ctrl.Result, error) {
	var passed []string
	for _, c := range p.Spec.Validation.Checks {
		res := run.result(c.Name)
		if res == nil {
			r := v1alpha1.CheckResult{Name: c.Name, Kind: c.Kind, Node: node.Name, Attempt: run.Attempt, Started: metav1.NewTime(g.clock.Now())}
			if c.Kind != v1alpha1.CheckAgent {
				r.Job = g.checks.Namespace + "/" + checkJobName(nodeOwner(node), run.Attempt, c.Name)
			}
			run.Checks = append(run.Checks, r)
			if err := g.saveRun(ctx, node, run, nil); err != nil {
				return ctrl.Result{}, err
			}
			res = &run.Checks[len(run.Checks)-1]
		}
		if res.Outcome == "" {
			wait, err := g.stepCheck(ctx, node, c, res, checkJobOwner{purpose: run.Purpose, stillOpen: g.runCheckOpen(node, run, res.Name)})
			if err != nil || wait > 0 {
				return ctrl.Result{RequeueAfter: wait}, err
			}
			res.Excerpt = truncate(res.Excerpt, maxRunExcerpt)
			// The verdict is saved before the Job goes: were the write
			// lost, the Job is still there to judge again.
			if err := g.saveRun(ctx, node, run, nil); err != nil {
				return ctrl.Result{}, err
			}
			g.gateCheckFinished(ctx, node, run, *res)
			g.dropCheckJob(ctx, res.Job)
		}
		if res.Outcome != v1alpha1.CheckPassed {
			return g.runFailed(ctx, node, p, run, res)
		}
		passed = append(passed, c.Name)
	}
	msg := fmt.Sprintf("passed %s checks %s", run.Purpose, strings.Join(passed, ", "))
	err := g.endRun(ctx, node, run, string(v1alpha1.CheckPassed), msg, func(n *corev1.Node) {
		removeValidatingTaint(n)
		n.Annotations[v1alpha1.AnnotationValidatedAt] = g.clock.Now().UTC().Format(time.RFC3339)
	})
	return ctrl.Result{}, err
}

// runCheckOpen re-reads the node past the cache: a conflict unless its
// run record still has check name open, so that a stale cached node never
// creates the Job of a judged check.
func (g *gateReconciler) runCheckOpen(node *corev1.Node, run *gateRun, name string) func(context.Context) error {
	return func(ctx context.Context) error {
		var fresh corev1.Node
		if err := g.reader.Get(ctx, client.ObjectKeyFromObject(node), &fresh); err != nil {
			return err
		}
		got, err := nodeRun(&fresh)
		if err == nil && got.running() && got.Purpose == run.Purpose && got.Attempt == run.Attempt {
			if res := got.result(name); res != nil && res.Outcome == "" {
				return nil
			}
		}
		return apierrors.NewConflict(corev1.Resource("nodes"), node.Name,
			fmt.Errorf("check %s of %s run %d is no longer open: the cached node is stale", name, run.Purpose, run.Attempt))
	}
}

// runFailed ends a run whose check res did not pass. An idle check that
// gave way to a workload is skipped: it says nothing of the node. A
// joining node keeps its taint and is tried again after the backoff. A
// node in service that fails its idle check is taken out of service
// (TaintValidating) and counts as not validated: with onJoin its policy
// checks it again like a joining node, after the backoff; without, it
// waits for an operator.
func (g *gateReconciler) runFailed(ctx context.Context, node *corev1.Node, p *policy, run *gateRun, res *v1alpha1.CheckResult) (ctrl.Result, error) {
	what := fmt.Sprintf("check %s %s (value %s, floor %s): %s", res.Name, res.Outcome, orNone(res.Value), orNone(res.Floor), res.Message)
	if run.Purpose == v1alpha1.CheckPurposeIdle && gaveWay(res) {
		return ctrl.Result{RequeueAfter: p.Spec.Validation.IdleInterval.Duration},
			g.endRun(ctx, node, run, runSkipped, "idle check "+res.Name+" gave way to a workload; it runs again after "+p.Spec.Validation.IdleInterval.Duration.String(), nil)
	}
	if run.Purpose == v1alpha1.CheckPurposeIdle && misconfigured(res) {
		// Configuration, not the node: tainting would take every idle
		// node out of service for it.
		return ctrl.Result{RequeueAfter: p.Spec.Validation.IdleInterval.Duration},
			g.endRun(ctx, node, run, string(res.Outcome), "idle "+what+"; the node stays in service until an operator fixes the configuration", nil)
	}
	if run.Purpose == v1alpha1.CheckPurposeJoin {
		return ctrl.Result{RequeueAfter: joinRetryBackoff},
			g.endRun(ctx, node, run, string(res.Outcome), fmt.Sprintf("join %s; the node keeps taint %s and is checked again in %s", what, v1alpha1.TaintValidating, joinRetryBackoff), nil)
	}
	after := "an operator lifts the taint (gpuheal uncordon --ours)"
	if p.Spec.Validation.OnJoin {
		after = fmt.Sprintf("it is checked again like a joining node in %s", joinRetryBackoff)
	}
	return ctrl.Result{}, g.endRun(ctx, node, run, string(res.Outcome), fmt.Sprintf("idle %s; the node is tainted %s and no longer validated: %s", what, v1alpha1.TaintValidating, after), func(n *corev1.Node) {
		if !hasValidatingTaint(n) {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: v1alpha1.TaintValidating, Effect: corev1.TaintEffectNoSchedule})
		}
		delete(n.Annotations, v1alpha1.AnnotationValidatedAt)
	})
}

// endRun ends the run with outcome, applies change to the node in the same
// write, and tells of it: an Event on the node and an audit record. Jobs
// of checks still under way are deleted.
func (g *gateReconciler) endRun(ctx context.Context, node *corev1.Node, run *gateRun, outcome, msg string, change func(*corev1.Node)) error {
	for _, res := range run.Checks {
		if res.Outcome == "" && res.Job != "" {
			if err := g.deleteCheckJobRef(ctx, res.Job); err != nil {
				return err
			}
		}
	}
	now := metav1.NewTime(g.clock.Now())
	run.Ended, run.Outcome, run.Message = &now, outcome, truncate(msg, 1024)
	if err := g.saveRun(ctx, node, run, change); err != nil {
		return err
	}
	g.forget(node.Name)
	reason, kind, sev := v1alpha1.EventReasonValidationFailed, corev1.EventTypeWarning, audit.SeverityWarning
	auditKind := audit.Failed
	switch outcome {
	case string(v1alpha1.CheckPassed):
		reason, kind, sev, auditKind = v1alpha1.EventReasonValidationPassed, corev1.EventTypeNormal, audit.SeverityInfo, audit.Succeeded
	case runSkipped:
		reason, kind, sev, auditKind = v1alpha1.EventReasonValidationSkipped, corev1.EventTypeNormal, audit.SeverityInfo, audit.Cancelled
	}
	g.recorder.Eventf(node, nil, kind, reason, purposeAction(run.Purpose), "%s run %d: %s", run.Purpose, run.Attempt, run.Message)
	rec := g.runRecord(node, run, auditKind, string(auditKind))
	rec.Reason, rec.Message, rec.Severity, rec.Duration = outcome, run.Message, sev, now.Sub(run.Started.Time)
	g.audit.write(ctx, rec)
	gateRuns.WithLabelValues(run.Purpose, outcome).Inc()
	return nil
}

// forget drops the node from this process's idle runs.
func (g *gateReconciler) forget(node string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.idle, node)
}

// saveRun writes the run to the node, with change applied in the same
// patch (the taint and validated-at move with the run's end).
func (g *gateReconciler) saveRun(ctx context.Context, node *corev1.Node, run *gateRun, change func(*corev1.Node)) error {
	value := run.encode()
	return patchNodeGuarded(ctx, g.client, g.reader, node, func(n *corev1.Node) bool {
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[v1alpha1.AnnotationGateRun] = value
		if change != nil {
			change(n)
		}
		return true
	})
}

// gateCheckFinished tells of a judged join or idle check as the repair
// gate does (checkFinished): an Event on the node, an audit record and
// the metrics. An idle check that gave way is counted as Skipped.
func (g *gateReconciler) gateCheckFinished(ctx context.Context, node *corev1.Node, run *gateRun, res v1alpha1.CheckResult) {
	reason, kind, note, took := checkNote(res)
	outcome := string(res.Outcome)
	if run.Purpose == v1alpha1.CheckPurposeIdle && gaveWay(&res) {
		reason, kind, outcome = v1alpha1.EventReasonValidationSkipped, corev1.EventTypeNormal, runSkipped
		note = fmt.Sprintf("check %s (%s) skipped after %s: %s", res.Name, res.Kind, took.Round(time.Second), res.Message)
	}
	g.recorder.Eventf(node, nil, kind, reason, purposeAction(run.Purpose), "%s check: %s", run.Purpose, note)
	rec := g.runRecord(node, run, audit.CheckFinished, "check/"+res.Name)
	rec.Reason, rec.Message, rec.Duration = outcome, truncate(run.Purpose+" check: "+note, 2048), took
	if outcome != string(v1alpha1.CheckPassed) {
		rec.Severity = audit.SeverityWarning
	}
	g.audit.write(ctx, rec)
	countCheck(res.Kind, outcome, took)
}

// runRecord is an audit record of the node's run: no incident; the key
// derives from the node's UID, the run's attempt and the step, so a step
// repeated after a crash is recorded once.
func (g *gateReconciler) runRecord(node *corev1.Node, run *gateRun, kind audit.Kind, step string) audit.Record {
	return audit.Record{
		Key:      audit.Key("node/"+node.Name+"/"+string(node.UID), run.Purpose+"/"+step, int(run.Attempt)),
		Time:     g.audit.now(),
		Node:     node.Name,
		Policy:   run.Policy,
		Kind:     kind,
		Severity: audit.SeverityInfo,
	}
}

// nodeOwner names the node in its check Jobs' names: its UID, which a
// later node of the same name does not share.
func nodeOwner(n *corev1.Node) string {
	if n.UID != "" {
		return string(n.UID)
	}
	return n.Name
}

// purposeAction is the Events' action of a run of purpose.
func purposeAction(purpose string) string {
	if purpose == v1alpha1.CheckPurposeJoin {
		return "JoinCheck"
	}
	return "IdleCheck"
}
