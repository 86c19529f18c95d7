package provider_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/provider"
	"github.com/gpuheal/gpuheal/internal/provider/fake"
)

func node(providerID string, labels map[string]string, owners ...metav1.OwnerReference) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: labels, OwnerReferences: owners}, Spec: corev1.NodeSpec{ProviderID: providerID}}
}

var claimOwner = metav1.OwnerReference{APIVersion: "karpenter.sh/v1", Kind: "NodeClaim", Name: "c-1", UID: "u"}

func TestResolve(t *testing.T) {
	all := provider.Set{}
	for _, n := range []string{provider.AWS, provider.Karpenter, provider.ClusterAPI, provider.Kwok, provider.None} {
		all[n] = fake.New(n)
	}
	noKarpenter := provider.Set{provider.AWS: fake.New(provider.AWS), provider.None: fake.New(provider.None)}
	pool := map[string]string{v1alpha1.LabelKarpenterNodePool: "gpu"}
	for _, tc := range []struct {
		name   string
		set    provider.Set
		policy string
		node   *corev1.Node
		want   string
	}{
		{"ec2 node in a group", all, "", node("aws:///us-east-1a/i-0123456789abcdef0", nil), "aws"},
		{"karpenter on ec2 by label", all, "", node("aws:///us-east-1a/i-0123456789abcdef0", pool), "aws+karpenter"},
		{"karpenter on ec2 by owner", all, "", node("aws:///us-east-1a/i-0123456789abcdef0", nil, claimOwner), "aws+karpenter"},
		{"policy names aws on a karpenter node", all, "aws", node("aws:///us-east-1a/i-0123456789abcdef0", pool), "aws+karpenter"},
		{"policy names karpenter", all, "karpenter", node("aws:///us-east-1a/i-0123456789abcdef0", pool), "karpenter"},
		{"karpenter elsewhere", all, "", node("gce://p/z/vm", pool), "karpenter"},
		{"karpenter not configured", noKarpenter, "", node("aws:///us-east-1a/i-0123456789abcdef0", pool), "aws"},
		{"other owner", all, "", node("kwok://x", nil, metav1.OwnerReference{APIVersion: "v1", Kind: "NodeClaim", Name: "x"}), "kwok"},
		{"nothing known", all, "", node("", nil), "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.set.Resolve(tc.policy, tc.node); got != tc.want {
				t.Errorf("Resolve = %q, want %q", got, tc.want)
			}
			p, err := tc.set.For(tc.policy, tc.node)
			if err != nil || p.Name() != tc.want {
				t.Errorf("For = %v, %v; want provider %q", p, err, tc.want)
			}
		})
	}
}

func TestSplitRoutesActions(t *testing.T) {
	ctx := context.Background()
	ec2, kp := fake.New(provider.AWS), fake.New(provider.Karpenter)
	set := provider.Set{provider.AWS: ec2, provider.Karpenter: kp}
	n := node("aws:///us-east-1a/i-0123456789abcdef0", map[string]string{v1alpha1.LabelKarpenterNodePool: "gpu"})
	p, err := set.For("", n)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Reboot(ctx, n, "t1"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Replace(ctx, n, "t2"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Status(ctx, n); err != nil {
		t.Fatal(err)
	}
	if got := len(ec2.CallsTo(fake.MethodReboot)); got != 1 || len(ec2.CallsTo(fake.MethodReplace)) != 0 {
		t.Errorf("aws got %+v, want the reboot only", ec2.Calls())
	}
	if len(kp.CallsTo(fake.MethodReplace)) != 1 || len(kp.CallsTo(fake.MethodStatus)) != 1 || len(kp.CallsTo(fake.MethodReboot)) != 0 {
		t.Errorf("karpenter got %+v, want the replace and the status", kp.Calls())
	}

	msg, err := p.Preflight(ctx, []*corev1.Node{n})
	if err != nil || !strings.Contains(msg, "reboot (aws)") || !strings.Contains(msg, "replace (karpenter)") {
		t.Errorf("Preflight = %q, %v", msg, err)
	}
	kp.SetPreflight(&provider.PreflightError{Reason: v1alpha1.ReasonPermissionDenied, Err: errors.New("may not delete nodeclaims")})
	_, err = p.Preflight(ctx, []*corev1.Node{n})
	if provider.ReasonOf(err) != v1alpha1.ReasonPermissionDenied || !strings.Contains(err.Error(), "delete nodeclaims") {
		t.Errorf("Preflight with karpenter denied = %v, want PermissionDenied naming it", err)
	}
}
