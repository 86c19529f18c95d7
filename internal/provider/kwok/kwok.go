// Package kwok is a simulated cloud for tests and the demo. Nodes are kwok
// fakes (annotated kwok.x-k8s.io/node=fake); a reboot takes a node away from
// kwok so that it goes NotReady, a replace creates a new fake node and
// deletes the old one, and the Booter brings booting nodes back when their
// boot time has passed. Scale-in protection is an annotation, which ScaleIn,
// a simulated shrinking group, respects.
//
// Every piece of state lives on the Node objects (labels and annotations),
// so a controller that restarts, or a standby that takes over, carries on
// where the last one stopped.
package kwok

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/provider"
)

// The agent's condition types by default, typed for Node conditions: a
// finished boot sets them the way the agent would on a healthy machine.
const (
	gpuCondition    = corev1.NodeConditionType(v1alpha1.ConditionGPUHealAcceleratorHealthy)
	kernelCondition = corev1.NodeConditionType(v1alpha1.ConditionGPUHealKernelHealthy)
)

// agentConditions are the GPU and kernel condition types node's agent
// publishes: the EKS names when the node shows the EKS GPU condition
// (an agent with --condition-types=eks), else gpuheal's own.
func agentConditions(node *corev1.Node) (gpu, kernel corev1.NodeConditionType) {
	if condition(node, corev1.NodeConditionType(v1alpha1.ConditionAcceleratedHardwareReady)) != nil {
		return v1alpha1.ConditionAcceleratedHardwareReady, v1alpha1.ConditionKernelReady
	}
	return gpuCondition, kernelCondition
}

const (
	defaultBootDelay    = 90 * time.Second
	defaultRebootDelay  = 30 * time.Second
	defaultPollInterval = time.Second
	// Request ids are these prefixes plus the token.
	requestReboot  = "kwok-reboot-"
	requestReplace = "kwok-replace-"
	// maxNameLen is the longest object name (a DNS subdomain).
	maxNameLen = 253
)

// Options tune the simulated cloud. Zero (or negative) values take the
// defaults.
type Options struct {
	// BootDelay is how long a replacement node boots (default 90s, about
	// what a p5 instance takes to join).
	BootDelay time.Duration
	// RebootDelay is how long a reboot keeps a node NotReady (default 30s).
	RebootDelay time.Duration
	// PollInterval is the Booter's safety poll for boots it was not told
	// about (default 1s); it also wakes exactly at the earliest known
	// ready time.
	PollInterval time.Duration
	// Clock is the time source (default the real clock).
	Clock clock.Clock
	// ChaosFile, when set, is read before every call: "fail" or
	// "throttle" make the call fail (soak and chaos tests).
	ChaosFile string
}

func (o Options) withDefaults() Options {
	if o.BootDelay <= 0 {
		o.BootDelay = defaultBootDelay
	}
	if o.RebootDelay <= 0 {
		o.RebootDelay = defaultRebootDelay
	}
	if o.PollInterval <= 0 {
		o.PollInterval = defaultPollInterval
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return o
}

// Provider reboots and replaces kwok nodes.
type Provider struct {
	client client.Client
	opts   Options
}

var _ provider.Provider = (*Provider)(nil)

// New returns the simulated cloud. Run a Booter (NewBooter) in the same
// cluster, or booting nodes never come back.
func New(c client.Client, opts Options) *Provider {
	return &Provider{client: c, opts: opts.withDefaults()}
}

// Name is provider.Kwok.
func (p *Provider) Name() string { return provider.Kwok }

// Status reports Gone (with the replacement's name) for a node that was
// replaced, Rebooting while a boot is under way, and Running otherwise.
func (p *Provider) Status(ctx context.Context, node *corev1.Node) (provider.InstanceStatus, error) {
	if err := p.chaos("status"); err != nil {
		return provider.InstanceStatus{}, err
	}
	var cur corev1.Node
	err := p.client.Get(ctx, client.ObjectKeyFromObject(node), &cur)
	switch {
	case apierrors.IsNotFound(err):
		repl, err := p.findReplacement(ctx, node.Name)
		if err != nil {
			return provider.InstanceStatus{}, err
		}
		st := provider.InstanceStatus{State: provider.StateGone, ID: node.Name, Replacement: repl}
		if repl == "" {
			st.Detail = "node is gone and no node replaces it"
		}
		return st, nil
	case err != nil:
		return provider.InstanceStatus{}, fmt.Errorf("reading node %s: %w", node.Name, err)
	case cur.DeletionTimestamp != nil:
		return provider.InstanceStatus{State: provider.StateTerminating, ID: cur.Name}, nil
	case cur.Labels[v1alpha1.LabelKwokBooting] == "true":
		return provider.InstanceStatus{State: provider.StateRebooting, ID: cur.Name,
			Detail: "simulated boot finishes at " + cur.Annotations[v1alpha1.AnnotationKwokReadyAt]}, nil
	}
	return provider.InstanceStatus{State: provider.StateRunning, ID: cur.Name}, nil
}

// findReplacement returns the name of the node that replaces old, or "".
func (p *Provider) findReplacement(ctx context.Context, old string) (string, error) {
	var list corev1.NodeList
	if err := p.client.List(ctx, &list, client.MatchingLabels{v1alpha1.LabelKwokReplaces: replacesValue(old)}); err != nil {
		return "", fmt.Errorf("listing replacements of node %s: %w", old, err)
	}
	for i := range list.Items {
		// The label may be a hash; the annotation is the full name.
		if list.Items[i].Annotations[v1alpha1.AnnotationReplaces] == old {
			return list.Items[i].Name, nil
		}
	}
	return "", nil
}
