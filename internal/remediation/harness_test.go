//go:build integration

package remediation

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/provider"
	"github.com/gpuheal/gpuheal/internal/provider/kwok"
	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
	"github.com/gpuheal/gpuheal/internal/testproc"
)

// harness is a real API server with kwok and a fleet of fake GPU nodes.
type harness struct {
	t      *testing.T
	env    *testenv.Env
	c      client.Client
	prefix string
	nodes  []string
}

// sub is the harness for a subtest, so failures end the subtest only.
func (h *harness) sub(t *testing.T) *harness {
	c := *h
	c.t = t
	return &c
}

func newHarness(t *testing.T, prefix string, nodes int) *harness {
	t.Helper()
	env := testcluster.Start(t, testenv.Options{Kwok: true, Scheme: testScheme(t)})
	h := &harness{t: t, env: env, c: env.Client, prefix: prefix}
	h.nodes = h.addNodes(prefix, nodes)
	return h
}

func (h *harness) addNodes(prefix string, n int) []string {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	names, err := testenv.CreateGPUNodes(ctx, h.c, prefix, n)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := testenv.WaitNodesReady(ctx, h.c, names); err != nil {
		h.t.Fatal(err)
	}
	return names
}

// controllerConfig tunes one controller process of a test.
type controllerConfig struct {
	leaderElection bool
	wrap           func(client.WithWatch) client.Client
	kwok           kwok.Options
	rest           *rest.Config // default: the admin config
	leaseNamespace string       // default: "default"
	audit          audit.Sink
	history        audit.Reader // loaded for health scores on start
	self           types.NamespacedName
	providers      provider.Set  // default: the simulated cloud (kwok) and none
	preflightEvery time.Duration // default: DefaultPreflightEvery
	checks         CheckOptions  // the health gate's Job checks
}

// startController runs a controller (manager + reconcilers + the simulated
// cloud) until the returned stop function is called.
func (h *harness) startController(cfg controllerConfig) (stop func()) {
	h.t.Helper()
	if cfg.kwok.BootDelay == 0 {
		cfg.kwok.BootDelay = 2 * time.Second
	}
	if cfg.kwok.RebootDelay == 0 {
		cfg.kwok.RebootDelay = time.Second
	}
	cfg.kwok.PollInterval = 200 * time.Millisecond
	if cfg.rest == nil {
		cfg.rest = h.env.Config
	}
	if cfg.leaseNamespace == "" {
		cfg.leaseNamespace = "default"
	}
	mgr, err := NewManager(ManagerOptions{
		RestConfig: cfg.rest, MetricsAddress: "0", HealthAddress: "0",
		LeaderElection: cfg.leaderElection, LeaderElectionNamespace: cfg.leaseNamespace,
		LeaderElectionID: "gpuheal-test-" + h.prefix, GracefulShutdown: 10 * time.Second,
		WrapClient: cfg.wrap,
	})
	if err != nil {
		h.t.Fatal(err)
	}
	set := cfg.providers
	if set == nil {
		if set, err = NewProviders(context.Background(), mgr, ProviderOptions{Enabled: []string{provider.Kwok, provider.None}, Kwok: cfg.kwok}); err != nil {
			h.t.Fatal(err)
		}
	}
	err = Setup(mgr, ControllerOptions{
		Providers:          set,
		Poll:               200 * time.Millisecond,
		Audit:              cfg.audit,
		AuditReader:        cfg.history,
		Scorer:             testScorer(h.t),
		ScoreEvery:         200 * time.Millisecond,
		Self:               cfg.self,
		PreflightEvery:     cfg.preflightEvery,
		Checks:             cfg.checks,
		SkipNameValidation: true,
	})
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				h.t.Errorf("controller stopped with error: %v", err)
			}
		})
	}
	h.t.Cleanup(stop)
	return stop
}

func (h *harness) create(obj client.Object) {
	h.t.Helper()
	if err := h.c.Create(context.Background(), obj); err != nil {
		h.t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// setCondition sets one node condition the way an agent does: a strategic
// merge patch of status that leaves the other conditions alone.
func (h *harness) setCondition(node, condType string, status corev1.ConditionStatus, reason, msg string) {
	h.t.Helper()
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.NodeCondition{{
		Type: corev1.NodeConditionType(condType), Status: status, Reason: reason, Message: msg,
		LastTransitionTime: metav1.Now(), LastHeartbeatTime: metav1.Now(),
	}}}})
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}
	if err := h.c.Status().Patch(context.Background(), n, client.RawPatch(types.StrategicMergePatchType, patch)); err != nil {
		h.t.Fatalf("setting %s=%s on %s: %v", condType, status, node, err)
	}
}

// breakGPU is the agent finding a fatal GPU problem: its advice in the
// recommended-actions annotation, then the condition.
func (h *harness) breakGPU(node, action string) {
	h.t.Helper()
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		v1alpha1.AnnotationRecommendedActions: adviceAnnotation(action)}}})
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}
	if err := h.c.Patch(context.Background(), n, client.RawPatch(types.MergePatchType, patch)); err != nil {
		h.t.Fatalf("annotating %s: %v", node, err)
	}
	h.setCondition(node, gpuCondition, corev1.ConditionFalse, "NvidiaXID79Error", xidMessage)
}

// waitFor waits until cond holds without an error.
func (h *harness) waitFor(what string, timeout time.Duration, cond func() (bool, error)) {
	h.t.Helper()
	testproc.Eventually(h.t, timeout, what, func(context.Context) (bool, error) {
		ok, err := cond()
		return ok && err == nil, err
	})
}

func (h *harness) incidents(node string) []v1alpha1.NodeRemediation {
	h.t.Helper()
	var list v1alpha1.NodeRemediationList
	if err := h.c.List(context.Background(), &list); err != nil {
		h.t.Fatal(err)
	}
	var out []v1alpha1.NodeRemediation
	for _, nr := range list.Items {
		if nr.Spec.NodeName == node {
			out = append(out, nr)
		}
	}
	return out
}

// waitPhase waits until the node's only incident reaches phase and returns it.
func (h *harness) waitPhase(node string, phase v1alpha1.Phase, timeout time.Duration) v1alpha1.NodeRemediation {
	h.t.Helper()
	var got v1alpha1.NodeRemediation
	h.waitFor(fmt.Sprintf("incident of %s in phase %s", node, phase), timeout, func() (bool, error) {
		items := h.incidents(node)
		if len(items) > 1 {
			return false, fmt.Errorf("%d incidents for %s", len(items), node)
		}
		if len(items) == 1 {
			got = items[0]
			if got.Status.Phase == phase {
				return true, nil
			}
			return false, fmt.Errorf("phase %s (%s)", got.Status.Phase, got.Status.Message)
		}
		return false, nil
	})
	return got
}

func (h *harness) node(name string) (*corev1.Node, bool) {
	h.t.Helper()
	var n corev1.Node
	if err := h.c.Get(context.Background(), types.NamespacedName{Name: name}, &n); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil, false
		}
		h.t.Fatal(err)
	}
	return &n, true
}

// replacementsOf lists nodes that say they replace old.
func (h *harness) replacementsOf(old string) []string {
	h.t.Helper()
	var list corev1.NodeList
	if err := h.c.List(context.Background(), &list); err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, n := range list.Items {
		if n.Annotations[v1alpha1.AnnotationReplaces] == old {
			out = append(out, n.Name)
		}
	}
	return out
}

// runPod creates a pod bound to node (envtest has no scheduler).
func (h *harness) runPod(ns, name, node string, labels map[string]string, mutate ...func(*corev1.Pod)) {
	h.t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.PodSpec{
			NodeName:    node,
			Containers:  []corev1.Container{{Name: "main", Image: "trainer:latest"}},
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			// Kwok ends a pod at a random moment before its grace period runs
			// out; with none the drain waits ~1 s instead of up to 30.
			TerminationGracePeriodSeconds: new(int64),
		},
	}
	for _, m := range mutate {
		m(p)
	}
	h.create(p)
}

// blockingPDB creates a PodDisruptionBudget that allows no disruption of
// the pods with labels. envtest runs no disruption controller, so the test
// writes the status that controller would: one healthy pod, none to spare.
func (h *harness) blockingPDB(ns, name string, labels map[string]string) {
	h.t.Helper()
	one := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: labels}},
	}
	h.create(pdb)
	pdb.Status = policyv1.PodDisruptionBudgetStatus{
		ObservedGeneration: pdb.Generation, DisruptionsAllowed: 0, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1,
	}
	if err := h.c.Status().Update(context.Background(), pdb); err != nil {
		h.t.Fatalf("writing PDB status: %v", err)
	}
}

// readyByTest keeps kwok's pod-create stage off a pod whose status the
// test writes itself (markPodReady). kwok patches the status it computed
// when the stage was due, and a patch that lands after markPodReady's
// update leaves the pod unready until kwok's pod-ready stage, seconds
// later: long enough for the Eviction API to let it go whatever its PDB
// (seen under load in TestLifecycle). Its delay and jitter are a year.
func readyByTest(p *corev1.Pod) {
	p.Annotations = map[string]string{
		"pod-create.stage.kwok.x-k8s.io/delay":        "8760h",
		"pod-create.stage.kwok.x-k8s.io/jitter-delay": "8760h",
	}
}

// markPodReady writes the status a kubelet would for a running, ready pod
// (created with readyByTest): the Eviction API lets an unready pod go even
// when its PDB is exhausted, so PDB tests need this.
func (h *harness) markPodReady(ns, name string) {
	h.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var p corev1.Pod
		if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &p); err != nil {
			return err
		}
		now := metav1.Now()
		p.Status.Phase = corev1.PodRunning
		p.Status.PodIP = "10.0.255.1"
		p.Status.PodIPs = []corev1.PodIP{{IP: "10.0.255.1"}}
		p.Status.Conditions = []corev1.PodCondition{
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Image: "trainer:latest", Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}}
		return h.c.Status().Update(context.Background(), &p)
	})
	if err != nil {
		h.t.Fatalf("marking pod %s/%s ready: %v", ns, name, err)
	}
}
