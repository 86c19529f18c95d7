package kwok

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/provider"
)

// Replace creates the replacement node and then deletes the old one. The
// replacement's name derives from the token, so a repeat finds it instead of
// creating a second one, and deleting an already deleted node is done.
func (p *Provider) Replace(ctx context.Context, node *corev1.Node, token string) (string, error) {
	if err := p.chaos("replace"); err != nil {
		return "", err
	}
	id := requestReplace + token
	name := ReplacementName(node.Name, token)
	var old corev1.Node
	if err := p.client.Get(ctx, client.ObjectKey{Name: node.Name}, &old); err != nil {
		if !apierrors.IsNotFound(err) {
			return "", fmt.Errorf("reading node %s: %w", node.Name, err)
		}
		// Gone: done if it was us, after the create.
		if err := p.checkReplacement(ctx, name, node.Name); err != nil {
			return "", fmt.Errorf("replacing node %s, which is gone: %w", node.Name, err)
		}
		return id, nil
	}
	repl := p.replacement(&old, name, token)
	if err := p.client.Create(ctx, repl); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("creating node %s to replace %s: %w", name, old.Name, err)
		}
		if err := p.checkReplacement(ctx, name, old.Name); err != nil {
			return "", err
		}
	}
	uid := old.UID
	if err := p.client.Delete(ctx, &old, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
		return "", fmt.Errorf("deleting node %s after creating its replacement %s: %w", old.Name, name, err)
	}
	return id, nil
}

// checkReplacement says whether node name exists and replaces old; a node
// of that name that is something else must not be taken for ours.
func (p *Provider) checkReplacement(ctx context.Context, name, old string) error {
	var n corev1.Node
	if err := p.client.Get(ctx, client.ObjectKey{Name: name}, &n); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("replacement %s does not exist: %w", name, provider.ErrNotFound)
		}
		return fmt.Errorf("reading node %s: %w", name, err)
	}
	if got := n.Annotations[v1alpha1.AnnotationReplaces]; got != old {
		return fmt.Errorf("node %s exists but replaces %q, not %s", name, got, old)
	}
	return nil
}

// suffix is what ReplacementName appends; it is stripped first so that a
// node replaced many times keeps a short name.
var suffix = regexp.MustCompile(`-r[0-9a-f]{6}$`)

// ReplacementName is the name of the node that replaces old for token:
// old without an earlier replacement suffix, then "-r" and six hex digits
// of the token's SHA-256.
func ReplacementName(old, token string) string {
	sum := sha256.Sum256([]byte(token))
	base := suffix.ReplaceAllString(old, "")
	if limit := maxNameLen - 8; len(base) > limit {
		base = strings.TrimRight(base[:limit], "-.")
	}
	return base + "-r" + hex.EncodeToString(sum[:3])
}

// replacement is a new machine of the same shape as old: its labels,
// capacity and taints, without what described the old machine's health or
// lifecycle. It is not managed by kwok yet, so it stays NotReady until the
// Booter finishes its boot.
func (p *Provider) replacement(old *corev1.Node, name, token string) *corev1.Node {
	now := p.opts.Clock.Now()
	labels := map[string]string{}
	for k, v := range old.Labels {
		if !ours(k) {
			labels[k] = v
		}
	}
	delete(labels, corev1.LabelHostname)
	if len(name) <= 63 { // label values are at most 63 characters
		labels[corev1.LabelHostname] = name
	}
	labels[v1alpha1.LabelKwokBooting] = "true"
	labels[v1alpha1.LabelKwokReplaces] = replacesValue(old.Name)

	var taints []corev1.Taint
	for _, t := range old.Spec.Taints {
		// node.kubernetes.io/* taints (unschedulable, not-ready, …) are
		// the old machine's lifecycle, ours its remediation.
		if !ours(t.Key) && !strings.HasPrefix(t.Key, "node.kubernetes.io/") {
			taints = append(taints, t)
		}
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:   name,
			Labels: labels,
			Annotations: map[string]string{
				v1alpha1.AnnotationReplaces:         old.Name,
				v1alpha1.AnnotationKwokReplaceToken: token,
				v1alpha1.AnnotationKwokReadyAt:      now.Add(p.opts.BootDelay).UTC().Format(time.RFC3339Nano),
			},
		},
		Spec: corev1.NodeSpec{ProviderID: providerID(old, name), Taints: taints},
		Status: corev1.NodeStatus{
			Capacity:    old.Status.Capacity.DeepCopy(),
			Allocatable: old.Status.Allocatable.DeepCopy(),
			Conditions: []corev1.NodeCondition{{
				Type:               corev1.NodeReady,
				Status:             corev1.ConditionFalse,
				Reason:             v1alpha1.ReasonKwokBooting,
				Message:            "simulated machine replacing " + old.Name + " is booting",
				LastHeartbeatTime:  metav1.NewTime(now),
				LastTransitionTime: metav1.NewTime(now),
			}},
		},
	}
}

// ours reports whether a label or taint key is gpuheal's (gpuheal.io/… or
// a subdomain of it).
func ours(key string) bool {
	prefix, _, ok := strings.Cut(key, "/")
	return ok && (prefix == "gpuheal.io" || strings.HasSuffix(prefix, ".gpuheal.io"))
}

// providerID gives the replacement an id of the old node's kind: an
// EC2-shaped one in the old node's zone when the old node looked like EC2
// (so the demo's fleet stays uniform), else kwok://name.
func providerID(old *corev1.Node, name string) string {
	if rest, ok := strings.CutPrefix(old.Spec.ProviderID, "aws:///"); ok {
		zone, _, _ := strings.Cut(rest, "/")
		sum := sha256.Sum256([]byte(name))
		return "aws:///" + zone + "/i-0" + hex.EncodeToString(sum[:8])
	}
	return "kwok://" + name
}

// replacesValue is old itself when it fits in a label value (node names are
// DNS subdomains, which are valid label values up to 63 characters), else a
// hash of it.
func replacesValue(old string) string {
	if len(old) <= 63 {
		return old
	}
	sum := sha256.Sum256([]byte(old))
	return "sha256-" + hex.EncodeToString(sum[:16])
}
