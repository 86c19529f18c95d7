package remediation

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// DefaultIncidentRetention is how long a finished NodeRemediation is kept.
const DefaultIncidentRetention = 30 * 24 * time.Hour

// collect deletes a finished incident once it has been over for the
// retention; its audit records stay in the audit log. An incident is kept
// longer while its policy still counts it (the escalation and correlated
// fault windows) and while its node still shows the very condition
// transition that opened it: the incident's name derives from that
// transition, so deleting it would open the same incident again.
func (r *remediationReconciler) collect(ctx context.Context, nr *v1alpha1.NodeRemediation) (ctrl.Result, error) {
	keep := r.retention
	var pol v1alpha1.RemediationPolicy
	if err := r.client.Get(ctx, types.NamespacedName{Name: nr.Spec.PolicyName}, &pol); err == nil {
		if p, err := newPolicy(&pol); err == nil {
			keep = max(keep, p.Spec.Escalation.Window.Duration, p.Spec.CorrelatedFaults.Window.Duration)
		}
	} else if client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, err
	}
	if left := finishedAt(nr).Add(keep).Sub(r.clock.Now()); left > 0 {
		return ctrl.Result{RequeueAfter: left}, nil
	}
	var node corev1.Node
	if err := r.client.Get(ctx, types.NamespacedName{Name: nr.Spec.NodeName}, &node); err == nil {
		t := nr.Spec.Trigger
		if c := findCondition(&node, t.Type); c != nil && metav1.ConditionStatus(c.Status) == t.Status && c.LastTransitionTime.Equal(&t.Since) {
			return ctrl.Result{RequeueAfter: keep}, nil
		}
	} else if client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, err
	}
	uid := nr.UID
	if err := r.client.Delete(ctx, nr, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, fmt.Errorf("deleting finished remediation %s: %w", nr.Name, err)
	}
	log.FromContext(ctx).Info("finished incident deleted after its retention", "remediation", nr.Name, "node", nr.Spec.NodeName,
		"phase", nr.Status.Phase, "finished", finishedAt(nr), "retention", keep)
	return ctrl.Result{}, nil
}

// finishedAt is when the incident ended: its last phase entry.
func finishedAt(nr *v1alpha1.NodeRemediation) time.Time {
	if n := len(nr.Status.Phases); n > 0 {
		return nr.Status.Phases[n-1].Time.Time
	}
	return nr.CreationTimestamp.Time
}
