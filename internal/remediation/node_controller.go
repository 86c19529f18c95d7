package remediation

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// nodeReconciler opens incidents: when a GPU node matched by exactly one
// policy has held an unhealthy condition for the policy's duration, it
// creates the NodeRemediation for that condition transition.
type nodeReconciler struct {
	client   client.Client
	recorder events.EventRecorder
	clock    clock.PassiveClock

	mu        sync.Mutex
	conflicts map[string]string // node → policies last reported as conflicting
	// opened remembers the incident created for a node until the cache
	// shows it. Reconciles of one node never run at once, so with this no
	// second incident can be opened for a node in the moment the cache
	// lags our own create.
	opened map[string]string
	// upgrading: nodes whose driver upgrade has been announced by an Event.
	upgrading map[string]bool
	audit     auditor
}

// newNodeReconciler is the incident opener on the clock given (a fake one
// in tests, which step it instead of waiting out a policy's durations).
func newNodeReconciler(c client.Client, recorder events.EventRecorder, clk clock.PassiveClock, aud auditor) *nodeReconciler {
	return &nodeReconciler{client: c, recorder: cleanEvents{recorder}, clock: clk, conflicts: map[string]string{}, opened: map[string]string{}, upgrading: map[string]bool{}, audit: aud}
}

func (r *nodeReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var node corev1.Node
	if err := r.client.Get(ctx, req.NamespacedName, &node); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	pols, err := policiesFor(ctx, r.client, &node)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(pols) != 1 {
		r.reportConflict(&node, pols)
		return ctrl.Result{}, nil
	}
	r.reportConflict(&node, nil)
	p := pols[0]
	if optedOut(&node) || r.reportDriverUpgrade(&node) {
		return ctrl.Result{}, nil
	}
	cond, wait := p.unhealthyFor(&node, r.clock.Now())
	if cond == nil {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	items, err := incidentsOf(ctx, r.client, node.Name)
	if err != nil {
		return ctrl.Result{}, err
	}
	if openIncident(items) != nil || r.stillOpening(node.Name, items) {
		return ctrl.Result{}, nil // the remediation reconciler owns it
	}
	t, adviceErr := triggerFrom(&node, cond)
	name := incidentName(node.Name, t)
	if slices.ContainsFunc(items, func(nr v1alpha1.NodeRemediation) bool { return nr.Name == name }) {
		return ctrl.Result{}, nil // this transition was handled and is over
	}
	nr := &v1alpha1.NodeRemediation{
		// LabelNode lets the node's agent watch its own incidents alone
		// (the GPU reset's requests).
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			v1alpha1.LabelPolicy: p.Name, v1alpha1.LabelNode: v1alpha1.NodeLabelValue(node.Name)}},
		Spec: v1alpha1.NodeRemediationSpec{NodeName: node.Name, PolicyName: p.Name, Trigger: t, Cause: causeOf(&node, t)},
	}
	// Detected goes into the audit log before the incident exists: the
	// remediation reconciler may take the incident up (and record its
	// decision) before this call returns. The key makes a retry after a
	// failed create write it once.
	r.audit.write(ctx, detectedRecord(nr.Spec, name, p.Spec.DryRun, r.clock.Now()))
	if err := r.client.Create(ctx, nr); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("opening incident %s for node %s: %w", name, node.Name, err)
	}
	r.mu.Lock()
	r.opened[node.Name] = name
	r.mu.Unlock()
	log.FromContext(ctx).Info("incident opened", "remediation", name, "condition", t.Type, "status", t.Status, "reason", t.Reason)
	if adviceErr != nil {
		// Said once, with the incident it concerns; the incident goes on
		// under the policy's rules and the built-in mapping.
		log.FromContext(ctx).Error(adviceErr, "ignoring the agent's recommended action", "remediation", name)
		r.recorder.Eventf(&node, nr, corev1.EventTypeWarning, v1alpha1.EventReasonBadRecommendation, "OpenIncident",
			"%v; deciding without the agent's advice", adviceErr)
	}
	r.recorder.Eventf(&node, nr, corev1.EventTypeWarning, v1alpha1.EventReasonIncidentOpened, "OpenIncident",
		"%s=%s (%s) since %s; remediation %s under policy %s", t.Type, t.Status, t.Reason,
		t.Since.UTC().Format("15:04:05"), name, p.Name)
	return ctrl.Result{}, nil
}

// stillOpening reports whether an incident this process created for the
// node is not in the cache yet; once it is, the cache answers.
func (r *nodeReconciler) stillOpening(node string, cached []v1alpha1.NodeRemediation) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	name, ok := r.opened[node]
	if !ok {
		return false
	}
	if slices.ContainsFunc(cached, func(nr v1alpha1.NodeRemediation) bool { return nr.Name == name }) {
		delete(r.opened, node)
		return false
	}
	return true
}

// reportConflict emits one Event when the set of policies matching a node
// becomes more than one, not one per reconcile.
func (r *nodeReconciler) reportConflict(node *corev1.Node, pols []*policy) {
	var names []string
	if len(pols) > 1 {
		for _, p := range pols {
			names = append(names, p.Name)
		}
	}
	key := strings.Join(names, ",")
	r.mu.Lock()
	prev := r.conflicts[node.Name]
	if key == "" {
		delete(r.conflicts, node.Name)
	} else {
		r.conflicts[node.Name] = key
	}
	r.mu.Unlock()
	if key != "" && key != prev {
		r.recorder.Eventf(node, nil, corev1.EventTypeWarning, v1alpha1.EventReasonPolicyConflict, "Skip",
			"node matched by %d RemediationPolicies (%s); it is left alone until exactly one matches", len(names), key)
	}
}

// policiesFor returns the policies whose selector matches the node, sorted
// by name. A policy with a bad selector matches nothing (the API server's
// validation makes that rare).
func policiesFor(ctx context.Context, c client.Reader, node *corev1.Node) ([]*policy, error) {
	var list v1alpha1.RemediationPolicyList
	if err := c.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing RemediationPolicies: %w", err)
	}
	var out []*policy
	for i := range list.Items {
		p, err := newPolicy(&list.Items[i])
		if err != nil {
			log.FromContext(ctx).Error(err, "ignoring policy")
			continue
		}
		if p.matches(node) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *policy) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
