package remediation

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	fakeclient "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/provider"
	"github.com/gpuheal/gpuheal/internal/provider/fake"
)

// clockEnv is the controller's two reconcilers on a fake clock, over
// controller-runtime's fake client, with a recording fake provider (named
// kwok, as the policies say). Nothing runs by itself: a test sets the
// scene, calls settle to reconcile until nothing more happens at this
// moment, and steps the clock to make a policy's durations pass, as
// Karpenter's node health tests do. A 30-minute timeout takes
// milliseconds. What the fake client does not do (PDBs, watches, the
// cache lagging, conflicts between replicas) is left to the integration
// tests on a real API server.
type clockEnv struct {
	t      *testing.T
	ctx    context.Context
	clock  *clocktesting.FakeClock
	c      client.Client
	prov   *fake.Provider
	events *recorder
	audit  *audit.Memory
	opts   ControllerOptions
	nodes  *nodeReconciler
	rems   *remediationReconciler
	gate   *gateReconciler
	// crashes is how many reconcile errors settle takes for a crash: the
	// controller process dies and a new one (restart) carries on.
	crashes int
}

// t0 is when every clockEnv starts.
var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// newClockEnv builds the env; funcs, when given, intercept the client's
// calls (a PDB refusing evictions, an API error).
func newClockEnv(t *testing.T, funcs ...interceptor.Funcs) *clockEnv {
	t.Helper()
	e := &clockEnv{t: t, ctx: t.Context(), clock: clocktesting.NewFakeClock(t0),
		prov: fake.New(provider.Kwok), events: &recorder{}, audit: audit.NewMemory()}
	b := fakeclient.NewClientBuilder().WithScheme(testScheme(t)).
		WithStatusSubresource(&v1alpha1.NodeRemediation{}, &v1alpha1.RemediationPolicy{}).
		WithIndex(&v1alpha1.NodeRemediation{}, nodeNameField, func(o client.Object) []string {
			return []string{o.(*v1alpha1.NodeRemediation).Spec.NodeName}
		}).
		WithIndex(&corev1.Pod{}, podNodeField, func(o client.Object) []string {
			return []string{o.(*corev1.Pod).Spec.NodeName}
		}).
		WithIndex(&resourcev1.ResourceSlice{}, resourceSliceNodeField, func(o client.Object) []string {
			if n := o.(*resourcev1.ResourceSlice).Spec.NodeName; n != nil {
				return []string{*n}
			}
			return nil
		})
	var f interceptor.Funcs
	if len(funcs) > 0 {
		f = funcs[0]
	}
	if f.Create == nil {
		// The API server stamps creation on its clock; incidents are
		// ordered by it.
		f.Create = func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			obj.SetCreationTimestamp(metav1.NewTime(e.clock.Now()))
			return c.Create(ctx, obj, opts...)
		}
	}
	b = b.WithInterceptorFuncs(f)
	e.c = b.Build()
	e.opts = ControllerOptions{Providers: provider.Set{provider.Kwok: e.prov}, Clock: e.clock}.withDefaults()
	e.restart()
	return e
}

// restart builds new reconcilers, as a new controller process would: all
// they know comes from the objects.
func (e *clockEnv) restart() {
	aud := auditor{sink: e.audit, clock: e.clock}
	e.nodes = newNodeReconciler(e.c, e.events, e.clock, aud)
	e.rems = newRemediationReconciler(e.c, e.c, e.events, e.opts, aud)
	e.gate = newGateReconciler(e.rems)
}

// policy creates a policy for every GPU node with the CRD's defaults
// (2m, 10m drain timeout, 15m reboot timeout, 30m replace timeout), no
// breaker, the fake provider, and whatever edit changes.
func (e *clockEnv) policy(name string, edit ...func(*v1alpha1.RemediationPolicySpec)) {
	e.t.Helper()
	all := intstr.FromString("100%")
	p := &v1alpha1.RemediationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.RemediationPolicySpec{
		NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{v1alpha1.LabelNvidiaGPUPresent: "true"}},
		MaxUnhealthy: &all, Provider: provider.Kwok,
		// The one default the CRD schema gives and newPolicy does not.
		Escalation: v1alpha1.Escalation{RebootsBeforeReplace: 2},
	}}
	for _, f := range edit {
		f(&p.Spec)
	}
	e.create(p)
}

func (e *clockEnv) create(obj client.Object) {
	e.t.Helper()
	if err := e.c.Create(e.ctx, obj); err != nil {
		e.t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// addNodes creates n Ready GPU nodes named prefix-0000….
func (e *clockEnv) addNodes(prefix string, n int) []string {
	e.t.Helper()
	var names []string
	for i := range n {
		name := fmt.Sprintf("%s-%04d", prefix, i)
		e.create(&corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1alpha1.LabelNvidiaGPUPresent: "true"}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
				Reason: "KubeletReady", LastTransitionTime: metav1.NewTime(e.clock.Now().Add(-time.Hour))}}},
		})
		names = append(names, name)
	}
	return names
}

func (e *clockEnv) node(name string) (*corev1.Node, bool) {
	e.t.Helper()
	var n corev1.Node
	if err := e.c.Get(e.ctx, clientKey(name), &n); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil, false
		}
		e.t.Fatal(err)
	}
	return &n, true
}

// editNode changes a node as an agent or an operator would.
func (e *clockEnv) editNode(name string, edit func(*corev1.Node)) {
	e.t.Helper()
	n, ok := e.node(name)
	if !ok {
		e.t.Fatalf("node %s not found", name)
	}
	edit(n)
	if err := e.c.Update(e.ctx, n); err != nil {
		e.t.Fatalf("updating node %s: %v", name, err)
	}
}

// setCondition sets a node condition now, keeping its transition time
// when its status stays, as the agent and the kubelet do.
func (e *clockEnv) setCondition(name, typ string, s corev1.ConditionStatus, reason, msg string) {
	e.t.Helper()
	n, ok := e.node(name)
	if !ok {
		e.t.Fatalf("node %s not found", name)
	}
	func() {
		c := corev1.NodeCondition{Type: corev1.NodeConditionType(typ), Status: s, Reason: reason, Message: msg,
			LastTransitionTime: metav1.NewTime(e.clock.Now()), LastHeartbeatTime: metav1.NewTime(e.clock.Now())}
		if old := findCondition(n, typ); old != nil {
			if old.Status == s {
				c.LastTransitionTime = old.LastTransitionTime
			}
			*old = c
			return
		}
		n.Status.Conditions = append(n.Status.Conditions, c)
	}()
	if err := e.c.Status().Update(e.ctx, n); err != nil {
		e.t.Fatalf("setting %s=%s on node %s: %v", typ, s, name, err)
	}
}

// breakGPU is the agent finding a fatal GPU problem and advising action.
func (e *clockEnv) breakGPU(name, action string) {
	e.t.Helper()
	e.editNode(name, func(n *corev1.Node) {
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[v1alpha1.AnnotationRecommendedActions] = adviceAnnotation(action)
	})
	e.setCondition(name, gpuCondition, corev1.ConditionFalse, "NvidiaXID79Error", xidMessage)
}

// healGPU is the agent seeing the GPU healthy again.
func (e *clockEnv) healGPU(name string) {
	e.t.Helper()
	e.setCondition(name, gpuCondition, corev1.ConditionTrue, "GPUsHealthy", "all 8 GPUs healthy")
}

// runPod creates a pod bound to node.
func (e *clockEnv) runPod(ns, name, node string, labels map[string]string) {
	e.t.Helper()
	e.create(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Image: "trainer:latest"}}},
	})
}

// step moves the clock on and reconciles what that wakes.
func (e *clockEnv) step(d time.Duration) {
	e.t.Helper()
	e.clock.Step(d)
	e.settle()
}

// settle reconciles every node and every open incident, again and again,
// until a pass changes nothing: what the controller does at this moment
// without the clock moving. Reconcile errors fail the test.
func (e *clockEnv) settle() {
	e.t.Helper()
	for range 50 {
		before := e.fingerprint()
		var nodes corev1.NodeList
		if err := e.c.List(e.ctx, &nodes); err != nil {
			e.t.Fatal(err)
		}
		for _, n := range nodes.Items {
			if _, err := e.nodes.Reconcile(e.ctx, ctrl.Request{NamespacedName: clientKey(n.Name)}); err != nil {
				e.t.Fatalf("reconciling node %s: %v", n.Name, err)
			}
			if _, err := e.gate.Reconcile(e.ctx, ctrl.Request{NamespacedName: clientKey(n.Name)}); err != nil {
				e.t.Fatalf("join and idle checks of node %s: %v", n.Name, err)
			}
		}
		for _, nr := range e.list() {
			if nr.Status.Phase.Terminal() {
				continue
			}
			if _, err := e.rems.Reconcile(e.ctx, ctrl.Request{NamespacedName: clientKey(nr.Name)}); err != nil {
				if e.crashes == 0 {
					e.t.Fatalf("reconciling %s: %v", nr.Name, err)
				}
				e.crashes--
				e.restart()
			}
		}
		if e.fingerprint() == before {
			return
		}
	}
	e.t.Fatal("the controller never settled: it changes something on every pass")
}

// fingerprint sums up what the controller writes, to see a pass change it.
func (e *clockEnv) fingerprint() string {
	e.t.Helper()
	var nodes corev1.NodeList
	var pods corev1.PodList
	if err := e.c.List(e.ctx, &nodes); err != nil {
		e.t.Fatal(err)
	}
	if err := e.c.List(e.ctx, &pods); err != nil {
		e.t.Fatal(err)
	}
	acts := 0 // Status is a read: asking it while waiting changes nothing
	for _, c := range e.prov.Calls() {
		if c.Method != fake.MethodStatus {
			acts++
		}
	}
	s := fmt.Sprintf("pods=%d calls=%d", len(pods.Items), acts)
	for _, n := range nodes.Items {
		s += " " + n.Name + "@" + n.ResourceVersion
	}
	for _, nr := range e.list() {
		s += " " + nr.Name + "@" + nr.ResourceVersion
	}
	return s
}

// list returns every incident.
func (e *clockEnv) list() []v1alpha1.NodeRemediation {
	e.t.Helper()
	var list v1alpha1.NodeRemediationList
	if err := e.c.List(e.ctx, &list); err != nil {
		e.t.Fatal(err)
	}
	return list.Items
}

// incidents returns the node's incidents.
func (e *clockEnv) incidents(node string) []v1alpha1.NodeRemediation {
	e.t.Helper()
	items, err := incidentsOf(e.ctx, e.c, node)
	if err != nil {
		e.t.Fatal(err)
	}
	return items
}

// only returns the node's one incident, failing unless there is exactly one.
func (e *clockEnv) only(node string) v1alpha1.NodeRemediation {
	e.t.Helper()
	items := e.incidents(node)
	if len(items) != 1 {
		e.t.Fatalf("%d incidents for node %s, want 1", len(items), node)
	}
	return items[0]
}

// replaceMachine does what a cloud does after a Replace: the old node
// goes, a new Ready one named repl comes with its agent reporting healthy
// GPUs (for longer than a recovery hold), and the provider names it.
func (e *clockEnv) replaceMachine(old, repl string) {
	e.t.Helper()
	if err := e.c.Delete(e.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: old}}); err != nil {
		e.t.Fatal(err)
	}
	name := e.addNodes(repl, 1)[0]
	n, _ := e.node(name)
	n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: gpuCondition, Status: corev1.ConditionTrue,
		Reason: "GPUsHealthy", LastTransitionTime: metav1.NewTime(e.clock.Now().Add(-time.Hour))})
	if err := e.c.Status().Update(e.ctx, n); err != nil {
		e.t.Fatal(err)
	}
	e.prov.SetStatus(old, provider.InstanceStatus{State: provider.StateGone, Replacement: repl + "-0000"})
}

// recorder keeps the Events the controller records.
type recorder struct {
	mu     sync.Mutex
	events []recorded
}

type recorded struct{ object, kind, reason, note string }

var _ events.EventRecorder = (*recorder)(nil)

func (r *recorder) Eventf(regarding, _ runtime.Object, kind, reason, _, note string, args ...any) {
	name := ""
	if o, ok := regarding.(client.Object); ok {
		name = o.GetName()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, recorded{object: name, kind: kind, reason: reason, note: fmt.Sprintf(note, args...)})
}

// find returns the Events with reason about the named object.
func (r *recorder) find(object, reason string) []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []recorded
	for _, ev := range r.events {
		if ev.object == object && ev.reason == reason {
			out = append(out, ev)
		}
	}
	return out
}

type ctrlRequest = ctrl.Request

// editPod changes a pod as its owner would.
func (e *clockEnv) editPod(ns, name string, edit func(*corev1.Pod)) {
	e.t.Helper()
	var p corev1.Pod
	if err := e.c.Get(e.ctx, client.ObjectKey{Namespace: ns, Name: name}, &p); err != nil {
		e.t.Fatal(err)
	}
	edit(&p)
	if err := e.c.Update(e.ctx, &p); err != nil {
		e.t.Fatal(err)
	}
}
