package kwok

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/provider"
)

var _ provider.ScaleInProtector = (*Provider)(nil)

// SetScaleInProtection sets or removes v1alpha1.AnnotationKwokScaleInProtected. A merge
// patch that sets what is already there, or removes what is not, changes
// nothing, so repeating it is harmless.
func (p *Provider) SetScaleInProtection(ctx context.Context, node *corev1.Node, protected bool) error {
	var v *string
	if protected {
		v = ptr("true")
	}
	// A copy, so that the caller's node is not overwritten by the reply.
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node.Name}}
	err := patchMeta(ctx, p.client, n, nil, map[string]*string{v1alpha1.AnnotationKwokScaleInProtected: v}, "")
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("setting scale-in protection of node %s: %w", node.Name, provider.ErrNotFound)
	}
	return err
}

// ScaleIn simulates a group of nodes shrinking by n: it deletes up to n of
// them and returns the names it deleted. Like Auto Scaling it never takes a
// protected node, even when that leaves fewer than n to take (AWS then waits
// until protection is lifted); among the unprotected ones it goes by name,
// since the group's own policy knows nothing of health tiers. Protection is
// read from the API server, not from the given copies; nodes already gone
// or being deleted are passed over.
func (p *Provider) ScaleIn(ctx context.Context, nodes []corev1.Node, n int) ([]string, error) {
	names := make([]string, 0, len(nodes))
	for i := range nodes {
		names = append(names, nodes[i].Name)
	}
	sort.Strings(names)
	var deleted []string
	for _, name := range names {
		if len(deleted) >= n {
			break
		}
		var cur corev1.Node
		if err := p.client.Get(ctx, client.ObjectKey{Name: name}, &cur); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return deleted, fmt.Errorf("scaling in: reading node %s: %w", name, err)
		}
		if cur.DeletionTimestamp != nil || cur.Annotations[v1alpha1.AnnotationKwokScaleInProtected] == "true" {
			continue
		}
		uid := cur.UID
		if err := p.client.Delete(ctx, &cur, client.Preconditions{UID: &uid}); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return deleted, fmt.Errorf("scaling in: deleting node %s: %w", name, err)
		}
		deleted = append(deleted, name)
	}
	return deleted, nil
}
