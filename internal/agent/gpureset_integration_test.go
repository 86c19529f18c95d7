//go:build integration

package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/agent/kubecore"
	"github.com/gpuheal/gpuheal/internal/gpu/sim"
	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
	"github.com/gpuheal/gpuheal/internal/testproc"
)

func resetScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// resetAgent is a running agent on a sim node with a kernel log and a
// state directory.
type resetAgent struct {
	node, stateDir string
	sim            *sim.Node
	stop           func()
}

func startResetAgent(ctx context.Context, t *testing.T, env *testenv.Env, node, stateDir string, simNode *sim.Node, kmsgPath string) *resetAgent {
	t.Helper()
	kube, err := kubecore.NewClient(env.Kubeconfig, 0)
	if err != nil {
		t.Fatal(err)
	}
	o := validOptions()
	o.Standalone, o.NodeName = false, node
	o.Interval, o.CallTimeout = time.Second, 500*time.Millisecond
	o.StateDir, o.KmsgPath, o.KmsgPoll = stateDir, kmsgPath, 100*time.Millisecond
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- Run(runCtx, &o, Deps{Source: simNode, Kube: kube, PublishMetrics: func(http.Handler) {}}, io.Discard, slog.New(slog.DiscardHandler))
	}()
	a := &resetAgent{node: node, stateDir: stateDir, sim: simNode}
	a.stop = func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("agent: %v", err)
		}
	}
	return a
}

// request creates an incident for node (labelled for lbl) and writes a
// reset request for GPU 3 into its status, as the controller does.
func request(ctx context.Context, t *testing.T, c client.Client, name, lbl, node string, g v1alpha1.GPURef, requested bool) {
	t.Helper()
	nr := &v1alpha1.NodeRemediation{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1alpha1.LabelNode: lbl}},
		Spec: v1alpha1.NodeRemediationSpec{NodeName: node, PolicyName: "gpu",
			Trigger: v1alpha1.Trigger{Type: v1alpha1.ConditionGPUHealAcceleratorHealthy, Status: metav1.ConditionFalse, Since: metav1.Now()}},
	}
	if err := c.Create(ctx, nr); err != nil {
		t.Fatal(err)
	}
	nr.Status.Phase, nr.Status.Action = v1alpha1.PhaseResetting, v1alpha1.ActionResetGPU
	nr.Status.GPUReset = &v1alpha1.GPUResetStatus{RequestID: name + "-reset-1", GPUs: []v1alpha1.GPURef{g}, PartialDrain: true}
	if requested {
		now := metav1.Now()
		nr.Status.GPUReset.RequestedAt = &now
	}
	if err := c.Status().Update(ctx, nr); err != nil {
		t.Fatal(err)
	}
}

// resetReport is the agent's answer on the Node (nil when none).
func resetReport(ctx context.Context, c client.Client, node string) (*v1alpha1.GPUResetReport, error) {
	var n corev1.Node
	if err := c.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
		return nil, err
	}
	raw, ok := n.Annotations[v1alpha1.AnnotationGPUReset]
	if !ok {
		return nil, nil
	}
	var r v1alpha1.GPUResetReport
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		return nil, fmt.Errorf("%s: %w", v1alpha1.AnnotationGPUReset, err)
	}
	return &r, nil
}

func waitAnswer(t *testing.T, c client.Client, node, id string) *v1alpha1.GPUResetReport {
	t.Helper()
	var got *v1alpha1.GPUResetReport
	testproc.Eventually(t, 60*time.Second, "the agent's answer to "+id, func(ctx context.Context) (bool, error) {
		r, err := resetReport(ctx, c, node)
		if err != nil || r == nil || r.RequestID != id || r.Outcome == v1alpha1.GPUResetRunning {
			return false, err
		}
		got = r
		return true, nil
	})
	return got
}

func gpuConditionIs(t *testing.T, c client.Client, node string, status corev1.ConditionStatus, what string) {
	t.Helper()
	testproc.Eventually(t, 30*time.Second, what, func(ctx context.Context) (bool, error) {
		var n corev1.Node
		if err := c.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
			return false, err
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == v1alpha1.ConditionGPUHealAcceleratorHealthy {
				return cond.Status == status, nil
			}
		}
		return false, nil
	})
}

func journaled(t *testing.T, dir, id string) bool {
	t.Helper()
	j, err := openResetJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, ok := j.lookup(id)
	return ok
}

// A contained double-bit error on GPU 3 (Xid 48 in the kernel log, Xid 94,
// volatile uncorrected ECC) turns the GPU condition False; the controller's
// request in the incident's status makes the agent reset GPU 3 and answer
// Succeeded with its steps, and the condition goes True again at once,
// though the kernel log's Xids are still recent. Requests for another
// node, or without requestedAt, are not run.
func TestAgentResetsTheRequestedGPU(t *testing.T) {
	env := testcluster.Start(t, testenv.Options{Scheme: resetScheme(t)})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	node := gpuNodeWith(ctx, t, env.Client, nil, 8)
	klog := filepath.Join(t.TempDir(), "kern.log")
	f, err := os.Create(klog)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	sn, err := sim.New(sim.Options{NodeName: node, GPUs: 8, KernelLog: f})
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	a := startResetAgent(ctx, t, env, node, state, sn, klog)
	defer a.stop()
	gpuConditionIs(t, env.Client, node, corev1.ConditionTrue, "a healthy GPU condition")

	g3 := snapshotGPU(t, sn, 3) // before the faults: a snapshot takes the Xid events it delivers
	for _, fault := range []sim.Fault{{Kind: sim.KindDBE, GPU: 3}, {Kind: sim.KindXid, GPU: 3, Params: map[string]string{"code": "94"}}} {
		if err := sn.Inject(fault); err != nil {
			t.Fatal(err)
		}
	}
	gpuConditionIs(t, env.Client, node, corev1.ConditionFalse, "the GPU condition False for the DBE")

	request(ctx, t, env.Client, "other-node", node, "someone-else", g3, true) // spec says another node
	request(ctx, t, env.Client, "not-yet", node, node, g3, false)             // not requested yet
	request(ctx, t, env.Client, "dbe", node, node, g3, true)
	r := waitAnswer(t, env.Client, node, "dbe-reset-1")
	if r.Outcome != v1alpha1.GPUResetSucceeded || r.FinishedAt == nil || len(r.Steps) < 4 {
		t.Fatalf("answer %+v, want Succeeded with its steps", r)
	}
	if n := sn.GPUResets(3); n != 1 {
		t.Errorf("GPU 3 reset %d times, want once", n)
	}
	gpuConditionIs(t, env.Client, node, corev1.ConditionTrue, "the GPU condition True after the reset")
	if journaled(t, state, "other-node-reset-1") || journaled(t, state, "not-yet-reset-1") {
		t.Error("a request for another node, or not yet requested, was taken")
	}
	if !journaled(t, state, "dbe-reset-1") {
		t.Error("the request the agent ran is not in its journal")
	}
}

// An agent that restarts after journaling a request answers it
// Failed/ResetInterrupted and does not reset the GPU again.
func TestAgentRestartAnswersInterrupted(t *testing.T) {
	env := testcluster.Start(t, testenv.Options{Scheme: resetScheme(t)})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	node := gpuNodeWith(ctx, t, env.Client, nil, 8)
	sn, err := sim.New(sim.Options{NodeName: node, GPUs: 8})
	if err != nil {
		t.Fatal(err)
	}
	g3 := snapshotGPU(t, sn, 3)
	state := t.TempDir()
	// The previous run took the request and died before answering.
	j, err := openResetJournal(state)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.start("crash-reset-1", []v1alpha1.GPURef{g3}, metav1.Now()); err != nil {
		t.Fatal(err)
	}
	request(ctx, t, env.Client, "crash", node, node, g3, true)

	a := startResetAgent(ctx, t, env, node, state, sn, "")
	defer a.stop()
	r := waitAnswer(t, env.Client, node, "crash-reset-1")
	if r.Outcome != v1alpha1.GPUResetFailed || r.Reason != v1alpha1.ResetReasonInterrupted {
		t.Fatalf("answer %+v, want Failed/%s", r, v1alpha1.ResetReasonInterrupted)
	}
	// A later request runs, and the interrupted one still has not.
	request(ctx, t, env.Client, "next", node, node, g3, true)
	if r := waitAnswer(t, env.Client, node, "next-reset-1"); r.Outcome != v1alpha1.GPUResetSucceeded {
		t.Fatalf("answer to the next request %+v, want Succeeded", r)
	}
	if n := sn.GPUResets(3); n != 1 {
		t.Errorf("GPU 3 reset %d times, want once (the next request only)", n)
	}
}

func snapshotGPU(t *testing.T, n *sim.Node, i int) v1alpha1.GPURef {
	t.Helper()
	s, err := n.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	g := s.GPUs[i]
	return v1alpha1.GPURef{Index: int32(g.Index), UUID: g.UUID, BusID: "0000" + g.PCIBusID}
}
