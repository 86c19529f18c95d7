//go:build integration

package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/agent/kubecore"
	"github.com/gpuheal/gpuheal/internal/gpu/sim"
	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
	"github.com/gpuheal/gpuheal/internal/testproc"
)

// TestAgentPublishesItsChecksAndTheJoinTaint runs the agent (sim backend)
// with --join-gate as the shipped RBAC and node policy allow it, through a
// token bound to a pod on its node: the never-validated node gets the join
// taint, the report names the boot and passes every check, is rewritten
// at once when a fault fails a check, and again with a newer time once
// the interval has passed on the agent's clock.
func TestAgentPublishesItsChecksAndTheJoinTaint(t *testing.T) {
	env := testcluster.Start(t, testenv.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cs := kubernetes.NewForConfigOrDie(env.Config)
	nodes, err := testenv.CreateGPUNodes(ctx, env.Client, "gate", 2)
	if err != nil {
		t.Fatal(err)
	}
	node := nodes[0]
	kube := agentOnNode(ctx, t, env, cs, node, nodes[1])

	t0 := time.Now().Truncate(time.Second)
	clk := clocktesting.NewFakeClock(t0)
	src, err := sim.New(sim.Options{NodeName: node, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	o := validOptions()
	o.Standalone, o.NodeName, o.ExpectedGPUs = false, node, 8
	o.Interval, o.CallTimeout = time.Second, 500*time.Millisecond
	o.AgentChecksInterval, o.JoinGate = 30*time.Second, true
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- Run(runCtx, &o, Deps{Source: src, Kube: kube, Clock: clk, BootID: "boot-1", PublishMetrics: func(http.Handler) {}},
			io.Discard, slog.New(slog.DiscardHandler))
	}()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	report := func(ctx context.Context) (*corev1.Node, v1alpha1.AgentChecks, error) {
		var r v1alpha1.AgentChecks
		n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return nil, r, err
		}
		v, ok := n.Annotations[v1alpha1.AnnotationAgentChecks]
		if !ok {
			return n, r, errors.New("no checks report yet")
		}
		if err := json.Unmarshal([]byte(v), &r); err != nil {
			return n, r, fmt.Errorf("report %q: %w", v, err)
		}
		return n, r, nil
	}
	var first v1alpha1.AgentChecks
	testproc.Eventually(t, 30*time.Second, "the join taint and a passing report", func(ctx context.Context) (bool, error) {
		n, r, err := report(ctx)
		if err != nil {
			return false, err
		}
		if !slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool {
			return t.Key == v1alpha1.TaintValidating && t.Effect == corev1.TaintEffectNoSchedule
		}) {
			return false, fmt.Errorf("taints %v", n.Spec.Taints)
		}
		if r.BootID != "boot-1" || len(r.Checks) != len(v1alpha1.AgentCheckNames) {
			return false, fmt.Errorf("report %+v", r)
		}
		for i, c := range r.Checks {
			if c.Name != v1alpha1.AgentCheckNames[i] || !c.Passed {
				return false, fmt.Errorf("check %d: %+v", i, c)
			}
		}
		first = r
		return true, nil
	})

	if err := src.Inject(sim.Fault{Kind: sim.KindNVLinkDown, GPU: 2, Params: map[string]string{"link": "7"}}); err != nil {
		t.Fatal(err)
	}
	testproc.Eventually(t, 30*time.Second, "NVLinksUp failed at once", func(ctx context.Context) (bool, error) {
		_, r, err := report(ctx)
		if err != nil {
			return false, err
		}
		c := r.Checks[slices.Index(v1alpha1.AgentCheckNames, v1alpha1.AgentCheckNVLinksUp)]
		return !c.Passed && strings.Contains(c.Message, "GPU 2") && strings.Contains(c.Message, "link 7 down"), nil
	})

	// The agent's clock moves past the interval: the same results are
	// written again, with the newer time the controller takes as fresh.
	clk.Step(31 * time.Second)
	testproc.Eventually(t, 30*time.Second, "the report rewritten after the interval", func(ctx context.Context) (bool, error) {
		_, r, err := report(ctx)
		if err != nil {
			return false, err
		}
		return !r.Time.Time.Before(first.Time.Add(31 * time.Second)), nil
	})
}

// agentOnNode applies the shipped agent RBAC and node policy and returns
// a client of the agent's ServiceAccount whose token is bound to a pod on
// node, once the policy denies it writing other.
func agentOnNode(ctx context.Context, t *testing.T, env *testenv.Env, cs kubernetes.Interface, node, other string) rest.Interface {
	t.Helper()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gpuheal"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	root, err := testenv.RepoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"agent-rbac.yaml", "agent-node-policy.yaml"} {
		createAll(ctx, t, env, filepath.Join(root, "deploy", f))
	}
	pod, err := cs.CoreV1().Pods("gpuheal").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "gpuheal"},
		Spec: corev1.PodSpec{NodeName: node, ServiceAccountName: "gpuheal-agent",
			Containers: []corev1.Container{{Name: "agent", Image: "gpuheal-agent"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts("gpuheal").CreateToken(ctx, "gpuheal-agent", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{
			Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(env.Config)
	cfg.BearerToken = tr.Status.Token
	kube, err := kubecore.ClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	label := fmt.Appendf(nil, `{"metadata":{"labels":{%q:"8"}}}`, v1alpha1.LabelGPUHealthyCount)
	testproc.Eventually(t, 30*time.Second, "the node policy in force", func(ctx context.Context) (bool, error) {
		err := kube.Patch(types.MergePatchType).Resource("nodes").Name(other).Body(label).Do(ctx).Error()
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "may only write its own Node"), nil
	})
	return kube
}

// createAll creates every object of a multi-document manifest.
func createAll(ctx context.Context, t *testing.T, env *testenv.Env, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			return
		} else if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if err := env.Client.Create(ctx, &u); err != nil {
			t.Fatalf("%s: creating %s %s: %v", path, u.GetKind(), u.GetName(), err)
		}
	}
}
