//go:build integration

package install

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/testproc"
)

// checkUninstall runs `helm uninstall` while the node is still cordoned by
// the open incident and expects nothing of gpuheal to stay: no pod, no
// cluster-wide object of the release, no cordon, taint or annotation of
// ours on the node, no incident left open, none held by a finalizer; and
// the workload's Pending replica then runs on the node again.
func (c *cluster) checkUninstall(t *testing.T) {
	ctx := context.Background()
	c.helm(t, "uninstall", release, "-n", namespace, "--wait", "--timeout", "4m")

	n, err := c.cs.CoreV1().Nodes().Get(ctx, c.node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n.Spec.Unschedulable || hasTaint(n, unhealthyTaint) {
		t.Errorf("after uninstall node %s: unschedulable %v, taints %v", c.node, n.Spec.Unschedulable, n.Spec.Taints)
	}
	for k := range n.Annotations {
		if k == v1alpha1.AnnotationCordonedBy || k == v1alpha1.AnnotationWasUnschedulable {
			t.Errorf("after uninstall node %s keeps annotation %s", c.node, k)
		}
	}
	var nrs v1alpha1.NodeRemediationList
	if err := c.crc.List(ctx, &nrs); err != nil {
		t.Fatal(err)
	}
	for _, nr := range nrs.Items {
		if !nr.Status.Phase.Terminal() || len(nr.Finalizers) > 0 {
			t.Errorf("after uninstall NodeRemediation %s: phase %s, finalizers %v", nr.Name, nr.Status.Phase, nr.Finalizers)
		}
	}
	testproc.Eventually(t, 2*time.Minute, "no pod left in namespace "+namespace, func(ctx context.Context) (bool, error) {
		pods, err := c.cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 0, err
	})

	sel := metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + release}
	roles, err := c.cs.RbacV1().ClusterRoles().List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	bindings, err := c.cs.RbacV1().ClusterRoleBindings().List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	policies, err := c.cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	if k := len(roles.Items) + len(bindings.Items) + len(policies.Items); k > 0 {
		t.Errorf("after uninstall %d ClusterRoles, %d ClusterRoleBindings and %d ValidatingAdmissionPolicies of the release remain",
			len(roles.Items), len(bindings.Items), len(policies.Items))
	}
	testproc.Eventually(t, 2*time.Minute, "both trainer replicas Running on the released node", func(ctx context.Context) (bool, error) {
		names, err := c.runningPods(ctx, "default", "app=trainer")
		return err == nil && len(names) == 2, err
	})

}
