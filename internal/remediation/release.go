package remediation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/nodemark"
	"github.com/gpuheal/gpuheal/internal/score/tieraffinity"
)

// ReleaseOptions say what Release stops before it hands nodes back.
type ReleaseOptions struct {
	// Controller is the controller Deployment, scaled to zero and waited
	// for first so that no replica cordons a node again; empty when no
	// controller runs.
	Controller types.NamespacedName
	// Timeout bounds the wait for the controller's pods to be gone.
	Timeout time.Duration
	// Poll is how often that wait looks.
	Poll time.Duration
}

// Release undoes what gpuheal holds on the cluster, for `helm uninstall`
// (the chart's pre-delete hook): it stops the controller, ends every open
// incident as Cancelled and uncordons every node gpuheal cordoned (a cordon
// someone else set before ours stays). The health tier's bronze taint goes
// too: with the controller gone nothing would keep it current. The NodeRemediations stay as the
// record of what happened; none carries a finalizer.
func Release(ctx context.Context, c client.Client, opts ReleaseOptions) error {
	log := slog.Default()
	if opts.Controller.Name != "" {
		if err := stopController(ctx, c, opts); err != nil {
			return err
		}
		log.Info("controller stopped", "deployment", opts.Controller.String())
	}
	var nrs v1alpha1.NodeRemediationList
	if err := c.List(ctx, &nrs); err != nil {
		return fmt.Errorf("listing NodeRemediations: %w", err)
	}
	var errs []error
	for i := range nrs.Items {
		nr := &nrs.Items[i]
		if nr.Status.Phase.Terminal() {
			continue
		}
		patch := client.MergeFrom(nr.DeepCopy())
		nr.Status.Phase = v1alpha1.PhaseCancelled
		nr.Status.Reason = v1alpha1.ReasonReleased
		nr.Status.Message = "gpuheal was uninstalled: the incident ended and the node was handed back"
		nr.Status.Phases = append(nr.Status.Phases, v1alpha1.PhaseTransition{Phase: v1alpha1.PhaseCancelled, Time: metav1.NowMicro(), Message: nr.Status.Message})
		if err := c.Status().Patch(ctx, nr, patch); err != nil {
			errs = append(errs, fmt.Errorf("cancelling NodeRemediation %s: %w", nr.Name, err))
			continue
		}
		log.Info("incident cancelled", "noderemediation", nr.Name, "node", nr.Spec.NodeName)
	}
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return errors.Join(append(errs, fmt.Errorf("listing nodes: %w", err))...)
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if !nodemark.Ours(n) && !slices.ContainsFunc(n.Spec.Taints, tieraffinity.IsBronzeTaint) {
			continue
		}
		err := patchNodeGuarded(ctx, c, c, n, func(n *corev1.Node) bool {
			released := nodemark.Release(n)
			taints, untainted := withBronzeTaint(n.Spec.Taints, false)
			n.Spec.Taints = taints
			return released || untainted
		})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		log.Info("node released", "node", n.Name, "unschedulable", n.Spec.Unschedulable)
	}
	return errors.Join(errs...)
}

// stopController scales the Deployment to zero and waits until none of its
// pods is left, terminating ones included: a replica in its graceful
// shutdown may still act.
func stopController(ctx context.Context, c client.Client, opts ReleaseOptions) error {
	var d appsv1.Deployment
	if err := c.Get(ctx, opts.Controller, &d); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("reading controller deployment %s: %w", opts.Controller, err))
	}
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return fmt.Errorf("controller deployment %s: %w", opts.Controller, err)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 0 {
		patch := client.MergeFrom(d.DeepCopy())
		d.Spec.Replicas = new(int32)
		if err := c.Patch(ctx, &d, patch); err != nil {
			return fmt.Errorf("scaling controller deployment %s to 0: %w", opts.Controller, err)
		}
	}
	timeout, poll := opts.Timeout, opts.Poll
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	if poll <= 0 {
		poll = time.Second
	}
	err = wait.PollUntilContextTimeout(ctx, poll, timeout, true, func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(opts.Controller.Namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
			return false, err
		}
		return len(pods.Items) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the pods of controller deployment %s to end: %w", opts.Controller, err)
	}
	return nil
}

// RunRelease connects with the kubeconfig (in-cluster when empty) and runs
// Release once: gpuheal-controller --release.
func RunRelease(ctx context.Context, kubeconfig string, opts ReleaseOptions) error {
	cfg, err := loadConfig(kubeconfig)
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("connecting to the API server: %w", err)
	}
	return Release(ctx, c, opts)
}
