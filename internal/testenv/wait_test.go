package testenv_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/internal/poll"
	"github.com/gpuheal/gpuheal/internal/testenv"
)

// listClient answers the reads the waits make from fixed objects. The
// fake client would do, but building its type converter costs seconds
// under -race, more than these tests.
type listClient struct {
	client.Client
	mu    sync.Mutex
	nodes []corev1.Node
	pods  []corev1.Pod
	pdb   policyv1.PodDisruptionBudget
}

func (c *listClient) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch l := list.(type) {
	case *corev1.NodeList:
		l.Items = append([]corev1.Node(nil), c.nodes...)
	case *corev1.PodList:
		l.Items = append([]corev1.Pod(nil), c.pods...)
	}
	return nil
}

func (c *listClient) Get(_ context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	*obj.(*policyv1.PodDisruptionBudget) = c.pdb
	return nil
}

func node(name string, ready bool) corev1.Node {
	n := testenv.GPUNode(name)
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}
	return *n
}

func TestWaitNodesReady(t *testing.T) {
	c := &listClient{nodes: []corev1.Node{node("a", true), node("b", false), node("other", false)}}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := testenv.WaitNodesReady(ctx, c, []string{"a", "b"})
	if !poll.IsTimeout(err) || !strings.Contains(err.Error(), "1 of 2 nodes not Ready") {
		t.Fatalf("with b not Ready: %v", err)
	}
	c.nodes[1] = node("b", true)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	if err := testenv.WaitNodesReady(ctx2, c, []string{"a", "b"}); err != nil {
		t.Fatalf("after b turned Ready: %v", err)
	}
}

func TestWaitWorkloadRunning(t *testing.T) {
	running := corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	c := &listClient{pods: []corev1.Pod{running, {Status: corev1.PodStatus{Phase: corev1.PodPending}}}}
	short, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := testenv.WaitWorkloadRunning(short, c, "default", "trainer", 2)
	if !poll.IsTimeout(err) || !strings.Contains(err.Error(), "1 of 2 pods running, PDB allows 0 disruptions") {
		t.Fatalf("one pod pending: %v", err)
	}
	c.pods[1] = running
	c.pdb.Status.DisruptionsAllowed = 1
	ctx, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	if err := testenv.WaitWorkloadRunning(ctx, c, "default", "trainer", 2); err != nil {
		t.Fatalf("both running: %v", err)
	}
}
