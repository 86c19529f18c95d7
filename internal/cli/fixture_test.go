package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	gpuhealv1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/auditapi/auditapitest"
	"github.com/gpuheal/gpuheal/internal/testenv"
)

// runner runs the CLI with args against some cluster: a fake client in
// unit tests, a real API server in integration tests.
type runner func(args ...string) (string, int)

// runCLI runs the gpuheal command tree in-process with kubectl's flags
// finding the cluster.
func runCLI(t *testing.T, stdin string, args ...string) (string, int) {
	t.Helper()
	return runTree(t, newCluster(), stdin, args...)
}

// fakeRunner runs the CLI against c, whatever the cluster flags say.
func fakeRunner(t *testing.T, c client.Client) runner {
	t.Helper()
	return func(args ...string) (string, int) {
		t.Helper()
		k := newCluster()
		k.connect = func() (client.Client, error) { return c, nil }
		return runTree(t, k, "", args...)
	}
}

// runTree runs the command tree and returns what it printed (an error
// after "ERR: ") and its exit status. Tests that call it do not run in
// parallel: the tree sets the process's loggers (logging.Setup).
func runTree(t *testing.T, k *cluster, stdin string, args ...string) (string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := execute(context.Background(), newRoot(strings.NewReader(stdin), &out, &errOut, k), args)
	code := 0
	if err != nil {
		code = ExitCode(err)
		if !Silent(err) {
			out.WriteString("ERR: " + err.Error())
		}
	}
	return out.String(), code
}

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, gpuhealv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return scheme
}

// fleetObjects is five GPU nodes, one of each state, a CPU node that the
// default selector leaves out, and two incidents (one open, one ended).
func fleetObjects(now time.Time) ([]*corev1.Node, []*gpuhealv1.NodeRemediation) {
	type spec struct {
		name, healthy, score, tier, warnings string
		gpuCond                              corev1.ConditionStatus
		reason                               string
		cordoned                             bool
	}
	var nodes []*corev1.Node
	for _, s := range []spec{
		{name: auditapitest.NodeA, healthy: "8", score: "97.0", tier: "gold", gpuCond: corev1.ConditionTrue, warnings: "0"},
		{name: "gpu-warned", healthy: "8", score: "88.0", tier: "silver", gpuCond: corev1.ConditionTrue, warnings: "1"},
		{name: auditapitest.NodeB, healthy: "7", score: "40.0", tier: "bronze", gpuCond: corev1.ConditionFalse, reason: "NvidiaXID79Error", cordoned: true},
		{name: "gpu-fixing", healthy: "8", score: "60.0", tier: "bronze", gpuCond: corev1.ConditionTrue, cordoned: true},
		{name: "gpu-cordoned", healthy: "8", score: "90.0", tier: "gold", gpuCond: corev1.ConditionTrue, cordoned: true},
	} {
		n := testenv.GPUNode(s.name)
		n.CreationTimestamp = metav1.NewTime(now.Add(-30 * time.Second))
		n.Labels[gpuhealv1.LabelGPUHealthyCount] = s.healthy
		n.Labels[gpuhealv1.LabelHealthTier] = s.tier
		n.Annotations[gpuhealv1.AnnotationHealthScore] = s.score
		if s.warnings != "" {
			n.Annotations[gpuhealv1.AnnotationActiveWarnings] = s.warnings
		}
		if s.cordoned {
			n.Annotations[gpuhealv1.AnnotationCordonedBy] = "gpuheal"
		}
		n.Spec.Unschedulable = s.cordoned
		n.Status.Conditions = []corev1.NodeCondition{
			{Type: gpuhealv1.ConditionGPUHealAcceleratorHealthy, Status: s.gpuCond, Reason: s.reason, Message: "GPU 3 fell off the bus", LastTransitionTime: metav1.NewTime(now)},
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastTransitionTime: metav1.NewTime(now)},
		}
		nodes = append(nodes, n)
	}
	nodes = append(nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cpu-only", CreationTimestamp: metav1.NewTime(now)}})

	var rems []*gpuhealv1.NodeRemediation
	for _, in := range []struct {
		node  string
		phase gpuhealv1.Phase
	}{{"gpu-fixing", gpuhealv1.PhaseDraining}, {auditapitest.NodeA, gpuhealv1.PhaseSucceeded}} {
		start := metav1.NewMicroTime(now.Add(-90 * time.Second))
		rems = append(rems, &gpuhealv1.NodeRemediation{
			ObjectMeta: metav1.ObjectMeta{Name: in.node + "-incident", CreationTimestamp: metav1.NewTime(start.Time)},
			Spec: gpuhealv1.NodeRemediationSpec{NodeName: in.node, PolicyName: "default",
				Trigger: gpuhealv1.Trigger{Type: gpuhealv1.ConditionGPUHealAcceleratorHealthy, Status: metav1.ConditionFalse, Reason: "NvidiaXID48Error", Since: metav1.NewTime(now)}},
			Status: gpuhealv1.NodeRemediationStatus{Phase: in.phase, Action: gpuhealv1.ActionReboot, Phases: []gpuhealv1.PhaseTransition{
				{Phase: gpuhealv1.PhasePending, Time: start},
				{Phase: in.phase, Time: metav1.NewMicroTime(start.Add(30 * time.Second)), Message: "evicting 2 pods"},
			}},
		})
	}
	return nodes, rems
}

// fakeCluster holds objs, with the spec.nodeName field of NodeRemediations
// selectable as on a real API server.
func fakeCluster(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	return fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(objs...).
		WithIndex(&gpuhealv1.NodeRemediation{}, "spec.nodeName", func(o client.Object) []string {
			return []string{o.(*gpuhealv1.NodeRemediation).Spec.NodeName}
		}).Build()
}

// fakeFleet is fleetObjects in a fake cluster.
func fakeFleet(t *testing.T) client.Client {
	t.Helper()
	nodes, rems := fleetObjects(time.Now())
	var objs []client.Object
	for _, n := range nodes {
		objs = append(objs, n)
	}
	for _, r := range rems {
		objs = append(objs, r)
	}
	return fakeCluster(t, objs...)
}
