//go:build integration

package kwok

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/testenv"
)

// testScaleIn runs inside TestKwok, on its control plane.
func testScaleIn(t *testing.T, c client.Client, opts Options) {
	ctx := testCtx(t)
	p := New(c, opts)
	names, err := testenv.CreateGPUNodes(ctx, c, "si", 4)
	if err != nil {
		t.Fatal(err)
	}
	nodes := make([]corev1.Node, len(names))
	for i, name := range names {
		nodes[i] = *getNode(t, c, name)
	}
	// The first two by name are protected, so going by name alone would
	// take them.
	protected := names[:2]
	for _, name := range protected {
		for range 2 { // the second call changes nothing
			if err := p.SetScaleInProtection(ctx, getNode(t, c, name), true); err != nil {
				t.Fatalf("protecting %s: %v", name, err)
			}
		}
		if got := getNode(t, c, name).Annotations[v1alpha1.AnnotationKwokScaleInProtected]; got != "true" {
			t.Fatalf("%s annotation %s = %q, want true", name, v1alpha1.AnnotationKwokScaleInProtected, got)
		}
	}

	// The caller's copies are stale (read before the protection); ScaleIn
	// must go by the API server.
	deleted, err := p.ScaleIn(ctx, nodes, 2)
	if err != nil {
		t.Fatalf("ScaleIn(2): %v", err)
	}
	if want := names[2:]; !slices.Equal(deleted, want) {
		t.Fatalf("ScaleIn(2) deleted %v, want the unprotected %v", deleted, want)
	}
	for _, name := range names {
		err := c.Get(ctx, client.ObjectKey{Name: name}, &corev1.Node{})
		if gone := apierrors.IsNotFound(err); gone != slices.Contains(deleted, name) {
			t.Errorf("node %s: gone=%v (err %v), deleted=%v", name, gone, err, slices.Contains(deleted, name))
		}
	}

	// Only protected nodes are left: like Auto Scaling, nothing goes.
	if deleted, err := p.ScaleIn(ctx, nodes, 1); err != nil || len(deleted) != 0 {
		t.Fatalf("ScaleIn(1) with only protected nodes left = %v, %v; want none deleted", deleted, err)
	}

	// Unprotecting, twice, makes a node fair game again.
	for range 2 {
		if err := p.SetScaleInProtection(ctx, &nodes[1], false); err != nil {
			t.Fatalf("unprotecting %s: %v", names[1], err)
		}
	}
	if _, ok := getNode(t, c, names[1]).Annotations[v1alpha1.AnnotationKwokScaleInProtected]; ok {
		t.Fatalf("%s still annotated after unprotect", names[1])
	}
	if deleted, err := p.ScaleIn(ctx, nodes, 5); err != nil || !slices.Equal(deleted, names[1:2]) {
		t.Fatalf("ScaleIn(5) after unprotecting %s = %v, %v; want [%s]", names[1], deleted, err, names[1])
	}
	if n := getNode(t, c, names[0]); n.Annotations[v1alpha1.AnnotationKwokScaleInProtected] != "true" {
		t.Errorf("protected node %s lost its annotation: %v", names[0], n.Annotations)
	}
}
