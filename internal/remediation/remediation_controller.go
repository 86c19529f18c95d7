package remediation

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/provider"
)

// remediationReconciler drives each NodeRemediation through its phases.
// Every step is idempotent and its outcome is written to the object's status
// (with optimistic concurrency) before the next step starts, so whichever
// controller reconciles next resumes exactly where the last one stopped.
type remediationReconciler struct {
	client    client.Client
	reader    client.Reader // uncached: admission counts and pod lists
	recorder  events.EventRecorder
	clock     clock.PassiveClock
	providers provider.Set
	// poll is how soon a waiting step (drain, verify, admission) looks again.
	poll time.Duration

	// admitMu serialises admission so that two incidents can never both
	// take the last parallel slot.
	admitMu sync.Mutex
	fleet   *fleetCounter
	slots   slotCounter
	// claimMu serialises picking unnamed replacements; claims maps a node
	// picked to the incident that took it (claimReplacement).
	claimMu sync.Mutex
	claims  map[string]string
	// causeOpened remembers the cause breakers this process opened
	// ("policy/id"), until the cache shows them on the policy.
	causeOpened map[string]v1alpha1.CauseBreaker
	audit       auditor
	// self is the controller's own pod; drains leave it (ControllerOptions.Self).
	self types.NamespacedName
	// retention: finished incidents are deleted after it (ControllerOptions.IncidentRetention).
	retention time.Duration
	// checks: how the health gate runs its Job checks (ControllerOptions.Checks).
	checks CheckOptions
	// devicePlugins select the device plugin's pods, restarted after a
	// reset (deviceplugin.go).
	devicePlugins []labels.Selector
	// lemons is the history the lemon rule counts (lemon.go).
	lemons *lemonHistory
	// checkpoints posts checkpoint requests to the pods that ask for it.
	checkpoints CheckpointPoster
}

// newRemediationReconciler is the state machine with o's clock, providers,
// poll and own pod (o with its defaults); reader goes past the cache.
// Tests build it on a fake clock and call Reconcile themselves.
func newRemediationReconciler(c client.Client, reader client.Reader, recorder events.EventRecorder, o ControllerOptions, aud auditor) *remediationReconciler {
	// Decisions are written by this reconciler only: its auditor feeds the
	// lemon rule's history, besides whoever observed before.
	lemons := &lemonHistory{store: o.AuditReader}
	if prev := aud.observe; prev != nil {
		aud.observe = func(r audit.Record) { lemons.observe(r); prev(r) }
	} else {
		aud.observe = lemons.observe
	}
	return &remediationReconciler{
		lemons: lemons,
		client: c, reader: reader, recorder: cleanEvents{recorder}, clock: o.Clock,
		providers: o.Providers, poll: o.Poll, audit: aud, self: o.Self, retention: o.IncidentRetention, checks: o.Checks,
		devicePlugins: o.DevicePlugins, checkpoints: o.CheckpointPoster,
		fleet:       &fleetCounter{client: c, clock: o.Clock, maxAge: time.Second},
		causeOpened: map[string]v1alpha1.CauseBreaker{},
	}
}

// incident is what one reconcile works on.
type incident struct {
	nr     *v1alpha1.NodeRemediation
	node   *corev1.Node // nil when the node no longer exists
	policy *policy
}

func (r *remediationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	res, err := r.reconcile(ctx, req)
	if apierrors.IsConflict(err) {
		// Someone (often our own previous write, not yet in the cache)
		// changed the object: start over from the fresh version.
		return ctrl.Result{RequeueAfter: 20 * time.Millisecond}, nil
	}
	return res, err
}

func (r *remediationReconciler) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var nr v1alpha1.NodeRemediation
	if err := r.client.Get(ctx, req.NamespacedName, &nr); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if nr.Status.Phase.Terminal() {
		return r.collect(ctx, &nr)
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("node", nr.Spec.NodeName, "phase", nr.Status.Phase))
	in := &incident{nr: &nr}
	var node corev1.Node
	switch err := r.client.Get(ctx, types.NamespacedName{Name: nr.Spec.NodeName}, &node); {
	case err == nil:
		in.node = &node
	case !apierrors.IsNotFound(err):
		return ctrl.Result{}, err
	}
	var pol v1alpha1.RemediationPolicy
	switch err := r.client.Get(ctx, types.NamespacedName{Name: nr.Spec.PolicyName}, &pol); {
	case apierrors.IsNotFound(err):
		if nr.Status.Phase == "" || nr.Status.Phase == v1alpha1.PhasePending {
			return ctrl.Result{}, r.finish(ctx, in, v1alpha1.PhaseCancelled, v1alpha1.ReasonPolicyDeleted,
				fmt.Sprintf("policy %s no longer exists", nr.Spec.PolicyName))
		}
		// An incident already under way is finished under the defaults
		// rather than abandoned with the node cordoned.
		pol = v1alpha1.RemediationPolicy{ObjectMeta: metav1.ObjectMeta{Name: nr.Spec.PolicyName}}
	case err != nil:
		return ctrl.Result{}, err
	}
	p, err := newPolicy(&pol)
	if err != nil {
		return ctrl.Result{}, err
	}
	in.policy = p

	switch nr.Status.Phase {
	case "":
		if started, err := r.start(ctx, in); err != nil || !started {
			return ctrl.Result{}, err
		}
		return r.pending(ctx, in)
	case v1alpha1.PhasePending:
		return r.pending(ctx, in)
	case v1alpha1.PhaseCordoned:
		return r.cordoned(ctx, in)
	case v1alpha1.PhaseDraining:
		return r.draining(ctx, in)
	case v1alpha1.PhaseDrained:
		return r.drained(ctx, in)
	case v1alpha1.PhaseResetting:
		return r.resetting(ctx, in)
	case v1alpha1.PhaseRebooting, v1alpha1.PhaseReplacing:
		return r.requestAction(ctx, in)
	case v1alpha1.PhaseVerifying:
		return r.verifying(ctx, in)
	case v1alpha1.PhaseValidating:
		return r.validating(ctx, in)
	}
	return ctrl.Result{}, fmt.Errorf("remediation %s: unknown phase %q", nr.Name, nr.Status.Phase)
}

// setPhase records entering a phase. The write carries the object's
// resourceVersion: if another writer got there first it fails with a
// conflict and the reconcile starts over from the fresh object.
func (r *remediationReconciler) setPhase(ctx context.Context, in *incident, phase v1alpha1.Phase, reason, message string) error {
	prev, prevSince := r.enterPhase(in, phase, reason, message)
	if err := r.client.Status().Update(ctx, in.nr); err != nil {
		return fmt.Errorf("recording phase %s of %s: %w", phase, in.nr.Name, err)
	}
	if prev != "" && !prevSince.IsZero() {
		phaseDuration.WithLabelValues(string(prev)).Observe(r.clock.Since(prevSince).Seconds())
	}
	r.audit.phaseEntered(ctx, in, phase, prevSince)
	r.announce(ctx, in, phase, reason, message)
	return nil
}

// enterPhase changes the phase in memory only; the caller writes it.
func (r *remediationReconciler) enterPhase(in *incident, phase v1alpha1.Phase, reason, message string) (prev v1alpha1.Phase, prevSince time.Time) {
	st := &in.nr.Status
	prev = st.Phase
	if n := len(st.Phases); n > 0 {
		prevSince = st.Phases[n-1].Time.Time
	}
	st.Phase, st.Reason, st.Message = phase, reason, message
	st.Phases = append(st.Phases, v1alpha1.PhaseTransition{Phase: phase, Time: metav1.NewMicroTime(r.clock.Now()), Message: truncate(message, 512)})
	return prev, prevSince
}

// announce logs a phase change and records Events on the incident and,
// for the steps an operator looks for, on the Node.
func (r *remediationReconciler) announce(ctx context.Context, in *incident, phase v1alpha1.Phase, reason, message string) {
	log.FromContext(ctx).Info("phase", "remediation", in.nr.Name, "to", phase, "reason", reason, "message", message)
	eventType := corev1.EventTypeNormal
	if phase == v1alpha1.PhaseFailed {
		eventType = corev1.EventTypeWarning
	}
	if in.node == nil {
		r.recorder.Eventf(in.nr, nil, eventType, reason, string(phase), "%s", message)
		return
	}
	r.recorder.Eventf(in.nr, in.node, eventType, reason, string(phase), "%s", message)
	// The Node's own events: the steps an operator looks for. (Pending is
	// announced on the Node by IncidentOpened already.)
	if phase != v1alpha1.PhasePending && phase != v1alpha1.PhaseDraining && phase != v1alpha1.PhaseDrained {
		r.recorder.Eventf(in.node, in.nr, eventType, v1alpha1.EventReasonRemediationPrefix+string(phase), string(phase), "%s: %s", in.nr.Name, message)
	}
}

// finish ends the incident and counts it.
func (r *remediationReconciler) finish(ctx context.Context, in *incident, phase v1alpha1.Phase, reason, message string) error {
	// A GPU reset's DRA device taint ends with its incident, before the
	// incident is recorded as over (a failed delete is retried): for every
	// incident opened with advice reset-gpu, whatever it became, since a
	// decision lost with a refused write may have tainted a device before
	// it was decided again. Other incidents never taint one.
	if in.nr.Spec.Trigger.RecommendedAction == string(finding.ActionResetGPU) || in.nr.Status.GPUReset != nil {
		if err := untaintGPUDevices(ctx, r.client, in.nr.Name); err != nil {
			return err
		}
	}
	if in.nr.Status.GPUReset != nil {
		// A request still unanswered is closed with the incident, so an
		// agent that has not taken it yet never will.
		if g := in.nr.Status.GPUReset; g.RequestedAt != nil && g.Outcome == "" {
			now := metav1.NewTime(r.clock.Now())
			g.Outcome, g.Reason, g.FinishedAt = v1alpha1.GPUResetFailed, v1alpha1.ResetReasonRefused, &now
			g.Message = "the incident ended (" + reason + ") before the agent answered"
		}
	}
	if err := r.setPhase(ctx, in, phase, reason, message); err != nil {
		return err
	}
	action := string(in.nr.Status.Action)
	if action == "" {
		action = "None"
	}
	remediationsTotal.WithLabelValues(action, string(phase)).Inc()
	if phase == v1alpha1.PhaseSucceeded && in.nr.Status.Attempts > 0 {
		timeToRecover.WithLabelValues(action).Observe(r.clock.Since(in.nr.Spec.Trigger.Since.Time).Seconds())
	}
	return nil
}

// setCondition updates a status condition in memory; it reports whether
// anything changed so callers write only when needed.
func (r *remediationReconciler) setCondition(in *incident, t string, s metav1.ConditionStatus, reason, msg string) bool {
	return meta.SetStatusCondition(&in.nr.Status.Conditions, metav1.Condition{
		Type: t, Status: s, Reason: reason, Message: truncate(msg, 1024),
		ObservedGeneration: in.nr.Generation, LastTransitionTime: metav1.NewTime(r.clock.Now()),
	})
}

// enteredAt is when the incident last entered phase (zero if never).
func enteredAt(nr *v1alpha1.NodeRemediation, phase v1alpha1.Phase) time.Time {
	for i := len(nr.Status.Phases) - 1; i >= 0; i-- {
		if nr.Status.Phases[i].Phase == phase {
			return nr.Status.Phases[i].Time.Time
		}
	}
	return time.Time{}
}
