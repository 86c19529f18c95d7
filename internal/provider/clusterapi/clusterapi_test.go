//go:build integration

package clusterapi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/provider"
	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
)

// One control plane for the package; each subtest uses its own names.
func TestClusterAPI(t *testing.T) {
	env := testcluster.Start(t, testenv.Options{CRDDir: "testdata/crds"})
	c := env.Client
	p := New(c)
	for _, ns := range []string{"team-a", "team-b"} {
		if err := c.Create(testCtx(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("replace by annotation deletes only the owner and repeats as a no-op", func(t *testing.T) {
		ctx := testCtx(t)
		n := createNode(t, c, "capi-1", map[string]string{MachineAnnotation: "m-1", ClusterNamespaceAnnotation: "team-a"})
		createMachine(t, c, "team-a", "m-1", "capi-1", true, nil)
		// Same name in another namespace: the namespace annotation must
		// keep it safe.
		createMachine(t, c, "team-b", "m-1", "other", true, nil)

		if st, err := p.Status(ctx, n); err != nil || st.State != provider.StateRunning || st.ID != "team-a/m-1" {
			t.Fatalf("Status before = %+v, %v; want Running team-a/m-1", st, err)
		}
		for i := range 2 {
			id, err := p.Replace(ctx, n, "inc-1")
			if err != nil || id != "team-a/m-1" {
				t.Fatalf("Replace #%d = %q, %v; want team-a/m-1", i+1, id, err)
			}
		}
		if machineExists(t, c, "team-a", "m-1") {
			t.Error("team-a/m-1 still exists")
		}
		if !machineExists(t, c, "team-b", "m-1") {
			t.Error("team-b/m-1, which owns another node, was deleted")
		}
		var back corev1.Node
		if err := c.Get(ctx, client.ObjectKey{Name: "capi-1"}, &back); err != nil {
			t.Fatal(err)
		}
		if back.Annotations[v1alpha1.AnnotationReplaceMachine] != "team-a/m-1" || back.Annotations[v1alpha1.AnnotationReplaceToken] != "inc-1" {
			t.Errorf("node annotations = %v, want the Machine and token recorded", back.Annotations)
		}
		if st, err := p.Status(ctx, n); err != nil || st.State != provider.StateGone || st.ID != "team-a/m-1" {
			t.Errorf("Status after = %+v, %v; want Gone team-a/m-1", st, err)
		}
	})

	t.Run("replace falls back to status.nodeRef", func(t *testing.T) {
		ctx := testCtx(t)
		n := createNode(t, c, "capi-2", nil)
		createMachine(t, c, "team-b", "m-2", "capi-2", true, nil)
		createMachine(t, c, "team-b", "m-3", "capi-3", true, nil)
		id, err := p.Replace(ctx, n, "inc-2")
		if err != nil || id != "team-b/m-2" {
			t.Fatalf("Replace = %q, %v; want team-b/m-2", id, err)
		}
		if machineExists(t, c, "team-b", "m-2") || !machineExists(t, c, "team-b", "m-3") {
			t.Error("wrong Machine deleted")
		}
	})

	t.Run("a Machine without a controller is not deleted", func(t *testing.T) {
		ctx := testCtx(t)
		n := createNode(t, c, "capi-4", map[string]string{MachineAnnotation: "m-4", ClusterNamespaceAnnotation: "team-a"})
		createMachine(t, c, "team-a", "m-4", "capi-4", false, nil)
		_, err := p.Replace(ctx, n, "inc-4")
		if !errors.Is(err, provider.ErrUnsupported) || !strings.Contains(err.Error(), "team-a/m-4") {
			t.Fatalf("Replace err = %v, want ErrUnsupported naming team-a/m-4", err)
		}
		if !machineExists(t, c, "team-a", "m-4") {
			t.Error("standalone Machine was deleted")
		}
	})

	t.Run("a Machine held by a finalizer is Terminating", func(t *testing.T) {
		ctx := testCtx(t)
		n := createNode(t, c, "capi-5", nil)
		createMachine(t, c, "team-a", "m-5", "capi-5", true, []string{"machine.cluster.x-k8s.io"})
		for i := range 2 {
			if id, err := p.Replace(ctx, n, "inc-5"); err != nil || id != "team-a/m-5" {
				t.Fatalf("Replace #%d = %q, %v", i+1, id, err)
			}
		}
		if st, err := p.Status(ctx, n); err != nil || st.State != provider.StateTerminating || st.ID != "team-a/m-5" {
			t.Errorf("Status = %+v, %v; want Terminating team-a/m-5", st, err)
		}
	})

	t.Run("an annotated Machine that is already gone counts as replaced", func(t *testing.T) {
		n := createNode(t, c, "capi-6", map[string]string{MachineAnnotation: "m-6", ClusterNamespaceAnnotation: "team-a"})
		if id, err := p.Replace(testCtx(t), n, "inc-6"); err != nil || id != "team-a/m-6" {
			t.Errorf("Replace = %q, %v; want team-a/m-6, nil", id, err)
		}
	})

	t.Run("no owner is ErrNotFound naming the node", func(t *testing.T) {
		ctx := testCtx(t)
		n := createNode(t, c, "capi-orphan", nil)
		_, err := p.Replace(ctx, n, "inc-7")
		if !errors.Is(err, provider.ErrNotFound) || !strings.Contains(err.Error(), "capi-orphan") {
			t.Fatalf("Replace err = %v, want ErrNotFound naming capi-orphan", err)
		}
		if !machineExists(t, c, "team-b", "m-3") {
			t.Error("an unrelated Machine was deleted")
		}
		if st, err := p.Status(ctx, n); err != nil || st.State != provider.StateGone || st.ID != "" {
			t.Errorf("Status = %+v, %v; want Gone without an id", st, err)
		}
	})

	// A node's kubelet or agent can write its annotations; they may not
	// steer a delete to another node's Machine or to the control plane.
	t.Run("a node pointing at another node's Machine is refused", func(t *testing.T) {
		ctx := testCtx(t)
		createMachine(t, c, "team-a", "m-victim", "victim", true, nil)
		createMachine(t, c, "team-a", "m-liar", "liar", true, nil)
		for i, ann := range []map[string]string{
			{v1alpha1.AnnotationReplaceMachine: "team-a/m-victim"},
			{MachineAnnotation: "m-victim", ClusterNamespaceAnnotation: "team-a"},
		} {
			n := createNode(t, c, fmt.Sprintf("liar-%d", i), ann)
			_, err := p.Replace(ctx, n, "inc-evil")
			if !errors.Is(err, provider.ErrNotOwned) || !strings.Contains(err.Error(), "team-a/m-victim") || !strings.Contains(err.Error(), n.Name) {
				t.Errorf("Replace of %s err = %v, want ErrNotOwned naming %s and team-a/m-victim", n.Name, err, n.Name)
			}
			if _, err := p.Status(ctx, n); !errors.Is(err, provider.ErrNotOwned) {
				t.Errorf("Status of %s err = %v, want ErrNotOwned", n.Name, err)
			}
		}
		if !machineExists(t, c, "team-a", "m-victim") || !machineExists(t, c, "team-a", "m-liar") {
			t.Error("a Machine was deleted on the node's word")
		}
	})

	t.Run("a Machine of another cluster with the same node name is not this node's", func(t *testing.T) {
		ctx := testCtx(t)
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "dup"}, Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-ours"}}
		if err := c.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		// Listed first: team-a sorts before team-b.
		createMachine(t, c, "team-a", "m-theirs", "dup", true, nil)
		setMachineField(t, c, "team-a", "m-theirs", "aws:///us-east-1a/i-theirs", "spec", "providerID")
		createMachine(t, c, "team-b", "m-ours", "dup", true, nil)
		setMachineField(t, c, "team-b", "m-ours", "aws:///us-east-1a/i-ours", "spec", "providerID")
		if _, err := p.Replace(ctx, n, "inc-dup"); err != nil {
			t.Fatalf("Replace: %v", err)
		}
		if !machineExists(t, c, "team-a", "m-theirs") {
			t.Error("another cluster's Machine with the same nodeRef name was deleted")
		}
		if machineExists(t, c, "team-b", "m-ours") {
			t.Error("the node's own Machine (same providerID) was not deleted")
		}
		// A node of the same name (another cluster's namesake) pointing at it.
		n2 := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "dup-2", Annotations: map[string]string{v1alpha1.AnnotationReplaceMachine: "team-a/m-theirs"}},
			Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-ours-2"}}
		if err := c.Create(ctx, n2); err != nil {
			t.Fatal(err)
		}
		setMachineField(t, c, "team-a", "m-theirs", "dup-2", "status", "nodeRef", "name")
		if _, err := p.Replace(ctx, n2, "inc-dup-2"); !errors.Is(err, provider.ErrNotOwned) || !strings.Contains(err.Error(), "providerID") {
			t.Errorf("Replace pointed at the other cluster's Machine: err = %v, want ErrNotOwned naming the providerID", err)
		}
	})

	t.Run("a control-plane Machine is refused", func(t *testing.T) {
		ctx := testCtx(t)
		n := createNode(t, c, "capi-cp", nil)
		createMachine(t, c, "team-a", "m-cp", "capi-cp", true, nil, v1alpha1.LabelClusterAPIControlPlane)
		_, err := p.Replace(ctx, n, "inc-cp")
		if !errors.Is(err, provider.ErrNotOwned) || !strings.Contains(err.Error(), "control-plane") {
			t.Fatalf("Replace err = %v, want ErrNotOwned saying control-plane", err)
		}
		if !machineExists(t, c, "team-a", "m-cp") {
			t.Error("control-plane Machine was deleted")
		}
	})

	t.Run("reboot is unsupported", func(t *testing.T) {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "any"}}
		if _, err := p.Reboot(testCtx(t), n, "inc-8"); !errors.Is(err, provider.ErrUnsupported) {
			t.Errorf("Reboot err = %v, want ErrUnsupported", err)
		}
		if p.Name() != provider.ClusterAPI {
			t.Errorf("Name = %q", p.Name())
		}
	})
}

// TestPreflightRBAC checks the preflight against the API server's own RBAC:
// a role that may not delete Machines is named as such, whatever namespace
// a node's own annotations name; one with the shipped rights passes.
func TestPreflightRBAC(t *testing.T) {
	env := testcluster.Start(t, testenv.Options{CRDDir: "testdata/crds"})
	ctx := testCtx(t)
	nodes := []*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "w-1", Annotations: map[string]string{ClusterNamespaceAnnotation: "team-a"}}}}
	read := rbacv1.PolicyRule{APIGroups: []string{"cluster.x-k8s.io"}, Resources: []string{"machines"}, Verbs: []string{"get", "list"}}
	patch := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "patch"}}
	denied, err := env.ClientAs(ctx, "capi-readonly", []rbacv1.PolicyRule{read, patch})
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(denied).Preflight(ctx, nodes)
	if provider.ReasonOf(err) != v1alpha1.ReasonPermissionDenied || !strings.Contains(err.Error(), "may not delete machines.cluster.x-k8s.io") {
		t.Errorf("Preflight without delete = %v; want PermissionDenied naming delete machines", err)
	}
	full := read
	full.Verbs = []string{"get", "list", "delete"}
	allowed, err := env.ClientAs(ctx, "capi-full", []rbacv1.PolicyRule{full, patch})
	if err != nil {
		t.Fatal(err)
	}
	if msg, err := New(allowed).Preflight(ctx, nodes); err != nil || !strings.Contains(msg, "delete machines.cluster.x-k8s.io") {
		t.Errorf("Preflight with the rights = %q, %v; want a pass listing them", msg, err)
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func createNode(t *testing.T, c client.Client, name string, annotations map[string]string) *corev1.Node {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations}}
	if err := c.Create(testCtx(t), n); err != nil {
		t.Fatalf("creating node %s: %v", name, err)
	}
	return n
}

// createMachine creates a Machine whose status.nodeRef names nodeName,
// controlled by a MachineSet when controlled is set, carrying labels (with
// empty values).
func createMachine(t *testing.T, c client.Client, ns, name, nodeName string, controlled bool, finalizers []string, labels ...string) {
	t.Helper()
	ctx := testCtx(t)
	m := &unstructured.Unstructured{}
	m.SetGroupVersionKind(MachineGVK)
	m.SetNamespace(ns)
	m.SetName(name)
	m.SetFinalizers(finalizers)
	l := map[string]string{}
	for _, k := range labels {
		l[k] = ""
	}
	m.SetLabels(l)
	if controlled {
		yes := true
		m.SetOwnerReferences([]metav1.OwnerReference{{
			APIVersion: "cluster.x-k8s.io/v1beta1", Kind: "MachineSet", Name: "gpu-workers",
			UID: types.UID("ms-uid-" + ns), Controller: &yes,
		}})
	}
	if err := c.Create(ctx, m); err != nil {
		t.Fatalf("creating Machine %s/%s: %v", ns, name, err)
	}
	m.Object["status"] = map[string]any{"phase": "Running", "nodeRef": map[string]any{"kind": "Node", "name": nodeName}}
	if err := c.Status().Update(ctx, m); err != nil {
		t.Fatalf("setting status of Machine %s/%s: %v", ns, name, err)
	}
}

// setMachineField sets one field of a Machine (status fields through the
// status subresource, as Cluster API's controllers write them).
func setMachineField(t *testing.T, c client.Client, ns, name, value string, fields ...string) {
	t.Helper()
	m := &unstructured.Unstructured{}
	m.SetGroupVersionKind(MachineGVK)
	if err := c.Get(testCtx(t), types.NamespacedName{Namespace: ns, Name: name}, m); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(m.Object, value, fields...); err != nil {
		t.Fatal(err)
	}
	var err error
	if fields[0] == "status" {
		err = c.Status().Update(testCtx(t), m)
	} else {
		err = c.Update(testCtx(t), m)
	}
	if err != nil {
		t.Fatalf("setting %s of Machine %s/%s: %v", strings.Join(fields, "."), ns, name, err)
	}
}

func machineExists(t *testing.T, c client.Client, ns, name string) bool {
	t.Helper()
	_, m, err := New(c).get(testCtx(t), types.NamespacedName{Namespace: ns, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return m != nil
}
