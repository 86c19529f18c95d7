//go:build integration

package install

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuheal/gpuheal/internal/testproc"
)

const nodeNameClaim = "authentication.kubernetes.io/node-name"

// checkOwnNodeOnly takes the agent pod's projected service-account token
// from the kubelet's volume on the host — the credential an attacker who
// owns the node would hold — and checks that it names the node, that it
// may write what it owns on its own Node, and that the admission policy
// refuses any other key there and any write to another Node.
func (c *cluster) checkOwnNodeOnly(t *testing.T) {
	ctx := context.Background()
	token := c.agentToken(t)
	cfg := rest.AnonymousClientConfig(c.cfg)
	cfg.BearerToken = token
	agent, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	review, err := agent.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SelfSubjectReview with the agent's token: %v", err)
	}
	u := review.Status.UserInfo
	if want := "system:serviceaccount:" + namespace + ":" + agentName; u.Username != want {
		t.Errorf("token user %q, want %q", u.Username, want)
	}
	if got := u.Extra[nodeNameClaim]; !slices.Equal(got, []string{c.node}) {
		t.Fatalf("token claim %s = %v, want [%s]", nodeNameClaim, got, c.node)
	}

	// The label the agent owns, with the value it already wrote: allowed.
	label := []byte(`{"metadata":{"labels":{"` + healthyGPUs + `":"8"}}}`)
	if _, err := agent.CoreV1().Nodes().Patch(ctx, c.node, types.MergePatchType, label, metav1.PatchOptions{}); err != nil {
		t.Errorf("the agent's token may not write its own label on its node %s: %v", c.node, err)
	}
	foreign := []byte(`{"metadata":{"labels":{"gpuheal.io/install-test":"own-node"}}}`)
	_, err = agent.CoreV1().Nodes().Patch(ctx, c.node, types.MergePatchType, foreign, metav1.PatchOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "may change only") {
		t.Errorf("the agent's token adding a label it does not own to its node %s: got %v, want Forbidden by the own-node policy", c.node, err)
	}
	other := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-node-other"}}
	if _, err := c.cs.CoreV1().Nodes().Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.cs.CoreV1().Nodes().Delete(ctx, other.Name, metav1.DeleteOptions{}) }()
	_, err = agent.CoreV1().Nodes().Patch(ctx, other.Name, types.MergePatchType, label, metav1.PatchOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "may only write its own Node") {
		t.Errorf("the agent's token writing node %s: got %v, want Forbidden by the own-node policy", other.Name, err)
	}
	status := []byte(`{"status":{"conditions":[{"type":"` + gpuCondition + `","status":"False","reason":"Forged"}]}}`)
	_, err = agent.CoreV1().Nodes().Patch(ctx, other.Name, types.StrategicMergePatchType, status, metav1.PatchOptions{}, "status")
	if !apierrors.IsForbidden(err) {
		t.Errorf("the agent's token writing the status of node %s: got %v, want Forbidden", other.Name, err)
	}
}

// agentToken reads the token the kubelet projected into the agent's pod.
func (c *cluster) agentToken(t *testing.T) string {
	t.Helper()
	var path string
	testproc.Eventually(t, time.Minute, "the agent pod's projected token on the host", func(ctx context.Context) (bool, error) {
		pods, err := c.cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + agentName})
		if err != nil || len(pods.Items) == 0 {
			return false, err
		}
		matches, err := filepath.Glob(filepath.Join(c.dir, "kubelet", "pods", string(pods.Items[0].UID),
			"volumes", "kubernetes.io~projected", "*", "token"))
		if err != nil || len(matches) == 0 {
			return false, err
		}
		path = matches[0]
		return true, nil
	})

	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
