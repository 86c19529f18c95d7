package kwok

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// Booter is the simulated cloud's clock: it finishes the boots that Reboot
// and Replace started once their ready time has passed. It reads only the
// nodes labelled as booting, wakes at the earliest ready time, and polls
// now and then for boots started by another process. All its state is on
// the nodes, so a Booter started after a restart finishes what an earlier
// one left.
type Booter struct {
	client client.Client
	opts   Options
}

var (
	_ manager.Runnable               = (*Booter)(nil)
	_ manager.LeaderElectionRunnable = (*Booter)(nil)
)

// NewBooter returns a Booter; add it to the controller's manager.
func NewBooter(c client.Client, opts Options) *Booter {
	return &Booter{client: c, opts: opts.withDefaults()}
}

// NeedLeaderElection is true: two controllers must not both boot a node.
func (b *Booter) NeedLeaderElection() bool { return true }

// Start runs until ctx ends. Errors are logged and retried on the next
// pass: a transient API error must not stop the clock.
func (b *Booter) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("kwok-booter")
	ctx = log.IntoContext(ctx, logger)
	for {
		next, err := b.pass(ctx)
		if err != nil && ctx.Err() == nil {
			logger.Error(err, "finishing simulated boots")
		}
		wait := b.opts.PollInterval
		if !next.IsZero() {
			wait = min(wait, max(next.Sub(b.opts.Clock.Now()), 0))
		}
		t := b.opts.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
		}
	}
}

// pass finishes every boot that is due and returns the earliest ready time
// still ahead (zero when none).
func (b *Booter) pass(ctx context.Context) (time.Time, error) {
	var list corev1.NodeList
	if err := b.client.List(ctx, &list, client.MatchingLabels{v1alpha1.LabelKwokBooting: "true"}); err != nil {
		return time.Time{}, fmt.Errorf("listing booting nodes: %w", err)
	}
	now := b.opts.Clock.Now()
	var next time.Time
	var errs []error
	for i := range list.Items {
		node := &list.Items[i]
		readyAt, err := time.Parse(time.RFC3339Nano, node.Annotations[v1alpha1.AnnotationKwokReadyAt])
		// An unreadable ready time ends the boot now rather than leaving
		// the node booting for ever.
		if err == nil && now.Before(readyAt) {
			if next.IsZero() || readyAt.Before(next) {
				next = readyAt
			}
			errs = append(errs, b.holdNotReady(ctx, node))
			continue
		}
		// Gone, or changed since listed: the next pass sees the truth.
		if err := b.finish(ctx, node); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, err)
		}
	}
	return next, errors.Join(errs...)
}

// holdNotReady keeps a rebooting node NotReady: a heartbeat kwok had
// scheduled before the reboot took the node away can still mark it Ready.
func (b *Booter) holdNotReady(ctx context.Context, node *corev1.Node) error {
	if readyStatus(node) != corev1.ConditionTrue {
		return nil
	}
	return client.IgnoreNotFound(setConditions(ctx, b.client, b.opts.Clock.Now(), node,
		notReady(v1alpha1.ReasonKwokRebooting, "simulated reboot in progress")))
}

// finish ends one boot: the conditions a healthy agent would report, then
// the node back to kwok (which marks it Ready) and the boot marks removed.
// The second patch is conditional on the node being unchanged, so a reboot
// started meanwhile is not cut short; the next pass looks again.
func (b *Booter) finish(ctx context.Context, node *corev1.Node) error {
	now := b.opts.Clock.Now()
	gpuCondition, kernelCondition := agentConditions(node)
	conds := []corev1.NodeCondition{{Type: kernelCondition, Status: corev1.ConditionTrue, Reason: v1alpha1.ReasonKwokSimulatedBoot, Message: "simulated boot finished"}}
	if node.Annotations[v1alpha1.AnnotationKwokFaultPersists] == "true" {
		// Keep whatever the agent said if the GPU was already failing.
		if c := condition(node, gpuCondition); c == nil || c.Status != corev1.ConditionFalse {
			conds = append(conds, corev1.NodeCondition{Type: gpuCondition, Status: corev1.ConditionFalse,
				Reason: v1alpha1.ReasonKwokFaultPersists, Message: "simulated fault survived the boot"})
		}
	} else {
		conds = append(conds, corev1.NodeCondition{Type: gpuCondition, Status: corev1.ConditionTrue,
			Reason: v1alpha1.ReasonKwokSimulatedBoot, Message: "simulated boot finished with healthy GPUs"})
	}
	if err := setConditions(ctx, b.client, now, node, conds...); err != nil {
		return err
	}
	err := patchMeta(ctx, b.client, node,
		map[string]*string{v1alpha1.LabelKwokBooting: nil},
		map[string]*string{v1alpha1.AnnotationKwokManaged: ptr(v1alpha1.KwokManagedValue), v1alpha1.AnnotationKwokReadyAt: nil},
		node.ResourceVersion)
	if err != nil {
		return err
	}
	log.FromContext(ctx).Info("simulated boot finished", "node", node.Name,
		"faultPersists", node.Annotations[v1alpha1.AnnotationKwokFaultPersists] == "true")
	return nil
}
