//go:build integration

package karpenter

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/provider"
	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
)

// One control plane for the package; each subtest uses its own names.
func TestKarpenter(t *testing.T) {
	env := testcluster.Start(t, testenv.Options{CRDDir: "testdata/crds"})
	c := env.Client
	p := New(c)

	t.Run("replace by providerID deletes only the owner and repeats as a no-op", func(t *testing.T) {
		ctx := testCtx(t)
		n1 := createNode(t, c, "pid-a", "aws:///us-east-1a/i-0aaa", nil)
		createNode(t, c, "pid-b", "aws:///us-east-1a/i-0bbb", nil)
		createClaim(t, c, "claim-pid-a", map[string]any{"providerID": "aws:///us-east-1a/i-0aaa", "nodeName": "pid-a"}, nil)
		createClaim(t, c, "claim-pid-b", map[string]any{"providerID": "aws:///us-east-1a/i-0bbb", "nodeName": "pid-b"}, nil)

		if st, err := p.Status(ctx, n1); err != nil || st.State != provider.StateRunning || st.ID != "claim-pid-a" {
			t.Fatalf("Status before = %+v, %v; want Running claim-pid-a", st, err)
		}
		id, err := p.Replace(ctx, n1, "inc-1")
		if err != nil || id != "claim-pid-a" {
			t.Fatalf("Replace = %q, %v; want claim-pid-a", id, err)
		}
		if claimExists(t, c, "claim-pid-a") {
			t.Error("claim-pid-a still exists after Replace")
		}
		if !claimExists(t, c, "claim-pid-b") {
			t.Error("claim-pid-b, which owns another node, was deleted")
		}
		// The caller's copy predates the annotations; Replace must still
		// recognise its own earlier work.
		id, err = p.Replace(ctx, n1, "inc-1")
		if err != nil || id != "claim-pid-a" {
			t.Fatalf("repeated Replace = %q, %v; want claim-pid-a, nil", id, err)
		}
		if got := claimNames(t, c, "claim-pid-"); len(got) != 1 || got[0] != "claim-pid-b" {
			t.Errorf("NodeClaims after repeat = %v, want [claim-pid-b]", got)
		}
		var back corev1.Node
		if err := c.Get(ctx, client.ObjectKey{Name: "pid-a"}, &back); err != nil {
			t.Fatal(err)
		}
		if back.Annotations[v1alpha1.AnnotationReplaceNodeClaim] != "claim-pid-a" || back.Annotations[v1alpha1.AnnotationReplaceToken] != "inc-1" {
			t.Errorf("node annotations = %v, want the NodeClaim and token recorded", back.Annotations)
		}
		if st, err := p.Status(ctx, n1); err != nil || st.State != provider.StateGone || st.ID != "claim-pid-a" {
			t.Errorf("Status after = %+v, %v; want Gone claim-pid-a", st, err)
		}
	})

	t.Run("replace falls back to status.nodeName", func(t *testing.T) {
		ctx := testCtx(t)
		n := createNode(t, c, "byname", "", nil)
		createClaim(t, c, "claim-byname", map[string]any{"nodeName": "byname"}, nil)
		createClaim(t, c, "claim-other", map[string]any{"nodeName": "other"}, nil)
		id, err := p.Replace(ctx, n, "inc-2")
		if err != nil || id != "claim-byname" {
			t.Fatalf("Replace = %q, %v; want claim-byname", id, err)
		}
		if claimExists(t, c, "claim-byname") || !claimExists(t, c, "claim-other") {
			t.Error("wrong NodeClaim deleted")
		}
	})

	t.Run("an owner reference to a gone NodeClaim counts as replaced", func(t *testing.T) {
		n := createNode(t, c, "owned", "aws:///us-east-1b/i-0ccc", []metav1.OwnerReference{{
			APIVersion: "karpenter.sh/v1", Kind: "NodeClaim", Name: "claim-owner", UID: "gone-uid",
		}})
		if st, err := p.Status(testCtx(t), n); err != nil || st.State != provider.StateGone || st.ID != "claim-owner" {
			t.Errorf("Status = %+v, %v; want Gone claim-owner", st, err)
		}
	})

	// A node's kubelet or agent can write its annotations and owner
	// references; neither may steer a delete to another node's NodeClaim.
	t.Run("a node pointing at another node's NodeClaim is refused", func(t *testing.T) {
		ctx := testCtx(t)
		victim := createClaim(t, c, "claim-victim", map[string]any{"providerID": "aws:///us-east-1a/i-0vvv", "nodeName": "victim"}, nil)
		// The attacker's own NodeClaim exists too: a hint must win over
		// no match, but never over the victim's status.
		createClaim(t, c, "claim-liar", map[string]any{"providerID": "aws:///us-east-1a/i-0lll", "nodeName": "liar"}, nil)
		byAnnotation := createNode(t, c, "liar", "aws:///us-east-1a/i-0lll", nil)
		byAnnotation.Annotations = map[string]string{v1alpha1.AnnotationReplaceNodeClaim: "claim-victim"}
		if err := c.Update(ctx, byAnnotation); err != nil {
			t.Fatal(err)
		}
		byOwner := createNode(t, c, "liar-2", "", []metav1.OwnerReference{{
			APIVersion: "karpenter.sh/v1", Kind: "NodeClaim", Name: victim.GetName(), UID: victim.GetUID(),
		}})
		for _, n := range []*corev1.Node{byAnnotation, byOwner} {
			_, err := p.Replace(ctx, n, "inc-evil")
			if !errors.Is(err, provider.ErrNotOwned) || !strings.Contains(err.Error(), "claim-victim") || !strings.Contains(err.Error(), n.Name) {
				t.Errorf("Replace of %s err = %v, want ErrNotOwned naming %s and claim-victim", n.Name, err, n.Name)
			}
			if _, err := p.Status(ctx, n); !errors.Is(err, provider.ErrNotOwned) {
				t.Errorf("Status of %s err = %v, want ErrNotOwned", n.Name, err)
			}
		}
		if !claimExists(t, c, "claim-victim") || !claimExists(t, c, "claim-liar") {
			t.Error("a NodeClaim was deleted on the node's word")
		}
	})

	t.Run("a stale NodeClaim with the node's name but another instance is not the node's", func(t *testing.T) {
		ctx := testCtx(t)
		n := createNode(t, c, "reused", "aws:///us-west-2a/i-new", nil)
		// Listed first; its instance is gone and its node name reused.
		createClaim(t, c, "a-stale", map[string]any{"nodeName": "reused", "providerID": "aws:///us-west-2a/i-old"}, []string{"karpenter.sh/termination"})
		createClaim(t, c, "b-current", map[string]any{"nodeName": "reused", "providerID": "aws:///us-west-2a/i-new"}, nil)
		if _, err := p.Replace(ctx, n, "inc-reused"); err != nil {
			t.Fatalf("Replace: %v", err)
		}
		if claimExists(t, c, "b-current") {
			t.Error("the node's own NodeClaim (same providerID) was not deleted")
		}
		stale := newNodeClaim()
		if err := c.Get(ctx, client.ObjectKey{Name: "a-stale"}, stale); err != nil {
			t.Fatal(err)
		}
		if stale.GetDeletionTimestamp() != nil {
			t.Error("the stale NodeClaim of another instance was deleted")
		}
	})

	t.Run("a NodeClaim held by a finalizer is Terminating and not deleted twice", func(t *testing.T) {
		ctx := testCtx(t)
		n := createNode(t, c, "held", "aws:///us-east-1c/i-0ddd", nil)
		createClaim(t, c, "claim-held", map[string]any{"providerID": "aws:///us-east-1c/i-0ddd"}, []string{"karpenter.sh/termination"})
		for i := range 2 {
			if id, err := p.Replace(ctx, n, "inc-4"); err != nil || id != "claim-held" {
				t.Fatalf("Replace #%d = %q, %v", i+1, id, err)
			}
		}
		if st, err := p.Status(ctx, n); err != nil || st.State != provider.StateTerminating || st.ID != "claim-held" {
			t.Errorf("Status = %+v, %v; want Terminating claim-held", st, err)
		}
		// Karpenter would remove its finalizer after terminating the
		// instance; then the NodeClaim is Gone.
		_, claim, err := p.get(ctx, "claim-held")
		if err != nil || claim == nil {
			t.Fatalf("reading claim-held: %v, %v", claim, err)
		}
		claim.SetFinalizers(nil)
		if err := c.Update(ctx, claim); err != nil {
			t.Fatal(err)
		}
		if st, err := p.Status(ctx, n); err != nil || st.State != provider.StateGone {
			t.Errorf("Status after finalizer removed = %+v, %v; want Gone", st, err)
		}
	})

	t.Run("no owner is ErrNotFound naming the node", func(t *testing.T) {
		ctx := testCtx(t)
		n := createNode(t, c, "orphan", "aws:///us-east-1a/i-0eee", nil)
		before := claimNames(t, c, "")
		_, err := p.Replace(ctx, n, "inc-5")
		if !errors.Is(err, provider.ErrNotFound) || !strings.Contains(err.Error(), "orphan") {
			t.Fatalf("Replace err = %v, want ErrNotFound naming orphan", err)
		}
		if after := claimNames(t, c, ""); len(after) != len(before) {
			t.Errorf("NodeClaims changed from %v to %v", before, after)
		}
		if st, err := p.Status(ctx, n); err != nil || st.State != provider.StateGone || st.ID != "" {
			t.Errorf("Status = %+v, %v; want Gone without an id", st, err)
		}
	})

	t.Run("reboot is unsupported", func(t *testing.T) {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "any"}}
		if _, err := p.Reboot(testCtx(t), n, "inc-6"); !errors.Is(err, provider.ErrUnsupported) {
			t.Errorf("Reboot err = %v, want ErrUnsupported", err)
		}
		if p.Name() != provider.Karpenter {
			t.Errorf("Name = %q", p.Name())
		}
	})
}

// TestPreflightRBAC checks the preflight against the API server's own RBAC:
// a service account that may not delete NodeClaims is named as such, one
// with the shipped rights passes.
func TestPreflightRBAC(t *testing.T) {
	env := testcluster.Start(t, testenv.Options{CRDDir: "testdata/crds"})
	ctx := testCtx(t)
	read := rbacv1.PolicyRule{APIGroups: []string{"karpenter.sh"}, Resources: []string{"nodeclaims"}, Verbs: []string{"get", "list"}}
	nodes := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "patch"}}
	denied, err := env.ClientAs(ctx, "karpenter-readonly", []rbacv1.PolicyRule{read, nodes})
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(denied).Preflight(ctx, nil)
	if provider.ReasonOf(err) != v1alpha1.ReasonPermissionDenied || !strings.Contains(err.Error(), "delete nodeclaims.karpenter.sh") ||
		strings.Contains(err.Error(), "list nodeclaims") {
		t.Errorf("Preflight without delete = %v; want PermissionDenied naming delete nodeclaims.karpenter.sh only", err)
	}
	full := read
	full.Verbs = []string{"get", "list", "delete"}
	allowed, err := env.ClientAs(ctx, "karpenter-full", []rbacv1.PolicyRule{full, nodes})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := New(allowed).Preflight(ctx, nil)
	if err != nil || !strings.Contains(msg, "delete nodeclaims.karpenter.sh") {
		t.Errorf("Preflight with the rights = %q, %v; want a pass listing them", msg, err)
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func createNode(t *testing.T, c client.Client, name, providerID string, owners []metav1.OwnerReference) *corev1.Node {
	t.Helper()
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: owners},
		Spec:       corev1.NodeSpec{ProviderID: providerID},
	}
	if err := c.Create(testCtx(t), n); err != nil {
		t.Fatalf("creating node %s: %v", name, err)
	}
	return n
}

// createClaim creates a NodeClaim and then sets its status, which the
// status subresource ignores on create.
func createClaim(t *testing.T, c client.Client, name string, status map[string]any, finalizers []string) *unstructured.Unstructured {
	t.Helper()
	ctx := testCtx(t)
	u := newNodeClaim()
	u.SetName(name)
	u.SetFinalizers(finalizers)
	if err := c.Create(ctx, u); err != nil {
		t.Fatalf("creating NodeClaim %s: %v", name, err)
	}
	if status != nil {
		u.Object["status"] = status
		if err := c.Status().Update(ctx, u); err != nil {
			t.Fatalf("setting status of NodeClaim %s: %v", name, err)
		}
	}
	return u
}

func claimExists(t *testing.T, c client.Client, name string) bool {
	t.Helper()
	_, claim, err := New(c).get(testCtx(t), name)
	if err != nil {
		t.Fatal(err)
	}
	return claim != nil
}

func claimNames(t *testing.T, c client.Client, prefix string) []string {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(NodeClaimGVK.GroupVersion().WithKind("NodeClaimList"))
	if err := c.List(testCtx(t), list); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, it := range list.Items {
		if strings.HasPrefix(it.GetName(), prefix) {
			out = append(out, it.GetName())
		}
	}
	return out
}
