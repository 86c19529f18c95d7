package kwok

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/provider"
)

// Reboot takes the node away from kwok, which stops heartbeating it, and
// marks it NotReady; the Booter hands it back to kwok RebootDelay later. The
// token stays on the node, so a repeat for the same incident does nothing.
func (p *Provider) Reboot(ctx context.Context, node *corev1.Node, token string) (string, error) {
	if err := p.chaos("reboot"); err != nil {
		return "", err
	}
	id := requestReboot + token
	var cur corev1.Node
	if err := p.client.Get(ctx, client.ObjectKey{Name: node.Name}, &cur); err != nil {
		if apierrors.IsNotFound(err) {
			return "", fmt.Errorf("rebooting node %s: %w", node.Name, provider.ErrNotFound)
		}
		return "", fmt.Errorf("reading node %s: %w", node.Name, err)
	}
	now := p.opts.Clock.Now()
	if cur.Annotations[v1alpha1.AnnotationKwokRebootToken] == token {
		// Already asked for; only a call that stopped between the two
		// patches below left the node booting but still Ready.
		if cur.Labels[v1alpha1.LabelKwokBooting] != "true" || readyStatus(&cur) == corev1.ConditionFalse {
			return id, nil
		}
	} else {
		readyAt := now.Add(p.opts.RebootDelay).UTC().Format(time.RFC3339Nano)
		// Labels first: while kwok still manages the node it would turn
		// Ready back to True at once.
		err := patchMeta(ctx, p.client, &cur,
			map[string]*string{v1alpha1.LabelKwokBooting: ptr("true")},
			map[string]*string{v1alpha1.AnnotationKwokManaged: nil, v1alpha1.AnnotationKwokReadyAt: &readyAt, v1alpha1.AnnotationKwokRebootToken: &token}, "")
		if err != nil {
			return "", err
		}
	}
	if err := setConditions(ctx, p.client, now, &cur, notReady(v1alpha1.ReasonKwokRebooting, "simulated reboot for "+token)); err != nil {
		return "", err
	}
	return id, nil
}

func notReady(reason, msg string) corev1.NodeCondition {
	return corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: reason, Message: msg}
}

func readyStatus(n *corev1.Node) corev1.ConditionStatus {
	if c := condition(n, corev1.NodeReady); c != nil {
		return c.Status
	}
	return corev1.ConditionUnknown
}
