//go:build integration

package cli

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
)

// The unit tests run these commands on a fake client; here they run on a
// real API server, found through --kubeconfig as kubectl finds it: field
// selectors, label selectors and status subresources as a cluster has them.

func TestStatusAndDescribeOnAPIServer(t *testing.T) {
	t.Parallel()
	env := testcluster.Start(t, testenv.Options{Scheme: testScheme(t)})
	ctx := t.Context()
	nodes, rems := fleetObjects(time.Now())
	for _, n := range nodes {
		status := n.Status
		n.CreationTimestamp = metav1.Time{} // the API server sets it
		if err := env.Client.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		n.Status = status
		if err := env.Client.Status().Update(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range rems {
		status := r.Status
		r.CreationTimestamp = metav1.Time{} // the API server sets it
		if err := env.Client.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
		r.Status = status
		if err := env.Client.Status().Update(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	checkStatus(t, kubeRunner(t, env.Kubeconfig))
	checkDescribe(t, kubeRunner(t, env.Kubeconfig), auditDB(t, time.Now().UTC()))
}

func TestScoreOnAPIServer(t *testing.T) {
	t.Parallel()
	env := testcluster.Start(t, testenv.Options{})
	for _, n := range scoreNodes() {
		if err := env.Client.Create(t.Context(), n); err != nil {
			t.Fatal(err)
		}
	}
	checkScore(t, kubeRunner(t, env.Kubeconfig))
}

// kubeRunner runs the CLI with --kubeconfig path.
func kubeRunner(t *testing.T, path string) runner {
	t.Helper()
	return func(args ...string) (string, int) {
		t.Helper()
		return runCLI(t, "", append(args, "--kubeconfig", path)...)
	}
}
