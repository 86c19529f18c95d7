//go:build integration

package remediation

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/testenv"
)

// TestControllerRunsWithShippedRBAC runs the controller as its
// ServiceAccount with exactly the rights of deploy/controller-rbac.yaml
// (plus the kwok role, as in the demo) and takes an incident from detection
// to a replacement: a right missing from the manifest fails this test.
func TestControllerRunsWithShippedRBAC(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "rbac", 2)
	h.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gpuheal"}})
	applyManifest(t, h, "deploy/controller-rbac.yaml")
	applyManifest(t, h, "deploy/controller-service.yaml") // the audit API's Service and reader Role
	h.create(&rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "gpuheal-controller-kwok"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "gpuheal-controller-kwok"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "gpuheal-controller", Namespace: "gpuheal"}},
	})
	h.create(fastPolicy("rbac"))
	sa := rest.CopyConfig(h.env.Config)
	sa.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:gpuheal:gpuheal-controller",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:gpuheal", "system:authenticated"},
	}
	h.startController(controllerConfig{rest: sa, leaderElection: true, leaseNamespace: "gpuheal"})
	node := h.nodes[0]
	h.runPod("default", "trainer-0", node, nil)
	h.breakGPU(node, "replace")
	nr := h.waitPhase(node, v1alpha1.PhaseSucceeded, time.Minute)
	if len(nr.Status.EvictedPods) != 1 || len(h.replacementsOf(node)) != 1 {
		t.Errorf("evicted %v, replacements %v", nr.Status.EvictedPods, h.replacementsOf(node))
	}
	h.waitFor("policy status written by the controller", 30*time.Second, func() (bool, error) {
		var p v1alpha1.RemediationPolicy
		err := h.c.Get(context.Background(), clientKey("rbac"), &p)
		return err == nil && p.Status.MatchedNodes == 2, err
	})
}

// applyManifest creates every object of a multi-document YAML file of the
// repository.
func applyManifest(t *testing.T, h *harness, rel string) {
	t.Helper()
	root, err := testenv.RepoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	for i, doc := range bytes.Split(data, []byte("\n---")) {
		var obj unstructured.Unstructured
		if err := yaml.Unmarshal(doc, &obj.Object); err != nil {
			t.Fatalf("%s document %d: %v", rel, i, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		if err := h.c.Create(context.Background(), &obj); err != nil {
			t.Fatalf("%s document %d (%s %s): %v", rel, i, obj.GetKind(), obj.GetName(), err)
		}
	}
}
