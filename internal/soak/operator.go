package soak

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuhealv1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/provider/kwok"
)

// operator is the manual practice gpuheal is measured against: a person
// who notices a node's GPU alert, and after OperatorDelay cordons it,
// evicts its pods and has it replaced.
type operator struct {
	r        *run
	provider *kwok.Provider
	noticed  map[string]time.Time
	replaced map[string]bool
}

func newOperator(r *run) *operator {
	return &operator{r: r, provider: kwok.New(r.c, r.kwokOptions()),
		noticed: map[string]time.Time{}, replaced: map[string]bool{}}
}

func (r *run) kwokOptions() kwok.Options {
	return kwok.Options{BootDelay: r.pace.bootDelay, RebootDelay: r.pace.rebootDelay}
}

// run also runs the simulated cloud's Booter, which the controller runs in
// live mode.
func (o *operator) run(ctx context.Context) {
	go func() {
		if err := kwok.NewBooter(o.r.c, o.r.kwokOptions()).Start(ctx); err != nil && ctx.Err() == nil {
			o.r.log.Error("soak: kwok booter stopped", "err", err)
		}
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			o.pass(ctx, now)
		}
	}
}

func (o *operator) pass(ctx context.Context, now time.Time) {
	var nodes corev1.NodeList
	if err := o.r.c.List(ctx, &nodes, client.MatchingLabels{gpuhealv1.LabelNvidiaGPUPresent: "true"}); err != nil {
		return
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if !brokenNode(n) || o.replaced[n.Name] {
			continue
		}
		first, ok := o.noticed[n.Name]
		if !ok {
			o.noticed[n.Name] = now
			continue
		}
		if now.Sub(first) < o.r.pace.operatorDelay {
			continue
		}
		if err := o.replace(ctx, n); err != nil {
			o.r.log.Warn("soak: operator could not replace a node yet", "node", n.Name, "err", err)
			continue
		}
		o.replaced[n.Name] = true
		o.r.log.Info("soak: operator replaced a node", "node", n.Name, "after", now.Sub(first).Round(time.Second))
	}
}

// replace does what a person does with kubectl and the cloud console:
// cordon, drain (evictions, which PodDisruptionBudgets gate), replace.
func (o *operator) replace(ctx context.Context, n *corev1.Node) error {
	patch := client.MergeFrom(n.DeepCopy())
	n.Spec.Unschedulable = true
	if err := o.r.c.Patch(ctx, n, patch); err != nil {
		return err
	}
	var pods corev1.PodList
	if err := o.r.c.List(ctx, &pods, client.MatchingFields{"spec.nodeName": n.Name}); err != nil {
		return err
	}
	for i := range pods.Items {
		if err := o.r.c.SubResource("eviction").Create(ctx, &pods.Items[i], &policyv1.Eviction{}); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	_, err := o.provider.Replace(ctx, n, "operator-"+n.Name)
	return err
}
