//go:build integration

package kwok

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/provider"
	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
	"github.com/gpuheal/gpuheal/internal/testproc"
)

// One control plane with kwok for the package; subtests run in order, each
// with its own nodes and its own Booter.
func TestKwok(t *testing.T) { //nolint:tparallel // the subtests share one control plane and run in order
	t.Parallel()
	env := testcluster.Start(t, testenv.Options{Kwok: true})
	c := env.Client
	fast := Options{BootDelay: 1500 * time.Millisecond, RebootDelay: 1500 * time.Millisecond, PollInterval: 200 * time.Millisecond}

	t.Run("reboot makes the node NotReady, then Ready and healthy", func(t *testing.T) {
		testReboot(t, c, fast)
	})
	t.Run("replace creates one replacement that boots, and deletes the old node", func(t *testing.T) {
		testReplace(t, c, fast)
	})
	t.Run("a fault that persists keeps the GPU condition False after the boot", func(t *testing.T) {
		testFaultPersists(t, c, fast)
	})
	t.Run("a Booter started later finishes a boot begun before it", func(t *testing.T) {
		testBooterRestart(t, c)
	})
	t.Run("the Booter waits for the ready time and holds the node NotReady", func(t *testing.T) {
		testBooterWaits(t, c)
	})
	t.Run("scale-in takes unprotected nodes only", func(t *testing.T) {
		testScaleIn(t, c, fast)
	})
	t.Run("missing nodes are ErrNotFound", func(t *testing.T) {
		testMissing(t, c, fast)
	})
}

func testReboot(t *testing.T, c client.Client, opts Options) {
	ctx := testCtx(t)
	p := New(c, opts)
	startBooter(t, c, opts)
	node := readyGPUNode(t, c, "rb")
	setAgentCondition(t, c, node, gpuCondition, corev1.ConditionFalse, "NvidiaXID79Error")

	start := time.Now()
	id, err := p.Reboot(ctx, node, "inc-rb")
	if err != nil || id != "kwok-reboot-inc-rb" {
		t.Fatalf("Reboot = %q, %v", id, err)
	}
	during := getNode(t, c, node.Name)
	if r := cond(during, corev1.NodeReady); r.Status != corev1.ConditionFalse || r.Reason != v1alpha1.ReasonKwokRebooting {
		t.Errorf("Ready during reboot = %s/%s, want False/Rebooting", r.Status, r.Reason)
	}
	if _, managed := during.Annotations[v1alpha1.AnnotationKwokManaged]; managed || !booting(during) {
		t.Errorf("during reboot: kwok annotation present=%v, booting=%v; want false, true", managed, booting(during))
	}
	// Only Ready was patched: kwok's other conditions and the agent's stay.
	if got := cond(during, gpuCondition); got.Status != corev1.ConditionFalse || got.Reason != "NvidiaXID79Error" {
		t.Errorf("AcceleratedHardwareReady during reboot = %+v", got)
	}
	if got := cond(during, corev1.NodeMemoryPressure); got.Status != corev1.ConditionFalse {
		t.Errorf("MemoryPressure lost during reboot: %+v", during.Status.Conditions)
	}
	if st, err := p.Status(ctx, node); err != nil || st.State != provider.StateRebooting || st.ID != node.Name {
		t.Errorf("Status during reboot = %+v, %v; want Rebooting", st, err)
	}
	// A repeat for the same incident must not push the ready time back.
	readyAt := during.Annotations[v1alpha1.AnnotationKwokReadyAt]
	if _, err := p.Reboot(ctx, during, "inc-rb"); err != nil {
		t.Fatal(err)
	}
	if got := getNode(t, c, node.Name).Annotations[v1alpha1.AnnotationKwokReadyAt]; got != readyAt {
		t.Errorf("repeated Reboot moved ready-at from %s to %s", readyAt, got)
	}

	after := waitNode(t, c, node.Name, "Ready again", testenv.NodeReady)
	if took := time.Since(start); took < opts.RebootDelay {
		t.Errorf("node Ready after %v, before the reboot delay %v", took, opts.RebootDelay)
	}
	for _, typ := range []corev1.NodeConditionType{gpuCondition, kernelCondition} {
		if got := cond(after, typ); got.Status != corev1.ConditionTrue || got.Reason != v1alpha1.ReasonKwokSimulatedBoot {
			t.Errorf("%s after boot = %s/%s, want True/%s", typ, got.Status, got.Reason, v1alpha1.ReasonKwokSimulatedBoot)
		}
	}
	if booting(after) || after.Annotations[v1alpha1.AnnotationKwokReadyAt] != "" || after.Annotations[v1alpha1.AnnotationKwokManaged] != v1alpha1.KwokManagedValue {
		t.Errorf("after boot: labels %v annotations %v; want boot marks gone and kwok back", after.Labels, after.Annotations)
	}
	if st, err := p.Status(ctx, after); err != nil || st.State != provider.StateRunning {
		t.Errorf("Status after boot = %+v, %v; want Running", st, err)
	}
	// The same token after the boot is still a no-op.
	if _, err := p.Reboot(ctx, after, "inc-rb"); err != nil {
		t.Fatal(err)
	}
	if again := getNode(t, c, node.Name); booting(again) || !testenv.NodeReady(again) {
		t.Errorf("repeated Reboot after the boot rebooted again: %v", again.Labels)
	}
}

func testReplace(t *testing.T, c client.Client, opts Options) {
	ctx := testCtx(t)
	p := New(c, opts)
	old := readyGPUNode(t, c, "rp")
	// The old node as gpuheal leaves it: cordoned, tainted, labelled.
	old.Labels["gpuheal.io/health-score"] = "12"
	old.Spec.Unschedulable = true
	old.Spec.Taints = []corev1.Taint{
		{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoSchedule},
		{Key: "gpuheal.io/remediating", Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule},
	}
	if err := c.Update(ctx, old); err != nil {
		t.Fatal(err)
	}
	want := ReplacementName(old.Name, "inc-rp")

	id, err := p.Replace(ctx, old, "inc-rp")
	if err != nil || id != "kwok-replace-inc-rp" {
		t.Fatalf("Replace = %q, %v", id, err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(old), &corev1.Node{}); !apierrors.IsNotFound(err) {
		t.Errorf("old node %s still there after Replace (err %v)", old.Name, err)
	}
	// A repeat, with the caller's stale copy of the old node, creates
	// nothing new.
	if id, err := p.Replace(ctx, old, "inc-rp"); err != nil || id != "kwok-replace-inc-rp" {
		t.Fatalf("repeated Replace = %q, %v", id, err)
	}
	if got := replacementsOf(t, c, old.Name); len(got) != 1 || got[0] != want {
		t.Fatalf("replacements of %s = %v, want [%s]", old.Name, got, want)
	}
	st, err := p.Status(ctx, old)
	if err != nil || st.State != provider.StateGone || st.Replacement != want {
		t.Errorf("Status(old) = %+v, %v; want Gone with replacement %s", st, err, want)
	}

	repl := getNode(t, c, want)
	if testenv.NodeReady(repl) || !booting(repl) {
		t.Errorf("replacement Ready=%v booting=%v at once; want a boot first", testenv.NodeReady(repl), booting(repl))
	}
	for k, v := range map[string]string{
		v1alpha1.LabelNvidiaGPUProduct: "NVIDIA-H100-80GB-HBM3", v1alpha1.LabelNvidiaGPUCount: "8",
		"topology.kubernetes.io/zone": old.Labels["topology.kubernetes.io/zone"], corev1.LabelHostname: want,
	} {
		if repl.Labels[k] != v {
			t.Errorf("replacement label %s = %q, want %q", k, repl.Labels[k], v)
		}
	}
	if _, ok := repl.Labels["gpuheal.io/health-score"]; ok {
		t.Error("replacement inherited the old node's health label")
	}
	// The API server's TaintNodesByCondition admission adds
	// node.kubernetes.io/not-ready to every new node; the old node's
	// gpuheal and cordon taints must not come along.
	taints := map[string]bool{}
	for _, tn := range repl.Spec.Taints {
		taints[tn.Key] = true
	}
	if repl.Spec.Unschedulable || !taints["nvidia.com/gpu"] || taints["gpuheal.io/remediating"] || taints[corev1.TaintNodeUnschedulable] {
		t.Errorf("replacement unschedulable=%v taints=%v; want schedulable, keeping nvidia.com/gpu only of the old ones", repl.Spec.Unschedulable, repl.Spec.Taints)
	}
	zone := old.Labels["topology.kubernetes.io/zone"]
	if !strings.HasPrefix(repl.Spec.ProviderID, "aws:///"+zone+"/i-0") || repl.Spec.ProviderID == old.Spec.ProviderID {
		t.Errorf("replacement providerID = %q, old %q", repl.Spec.ProviderID, old.Spec.ProviderID)
	}
	if gpus := repl.Status.Capacity[testenv.GPUResource]; gpus.Value() != 8 {
		t.Errorf("replacement capacity nvidia.com/gpu = %s", gpus.String())
	}

	// The Booter starts only now: the boot clock is on the node, not in
	// the process that created it.
	startBooter(t, c, opts)
	ready := waitNode(t, c, want, "replacement Ready", testenv.NodeReady)
	if got := cond(ready, gpuCondition); got.Status != corev1.ConditionTrue {
		t.Errorf("replacement AcceleratedHardwareReady = %+v", got)
	}
	if st, err := p.Status(ctx, ready); err != nil || st.State != provider.StateRunning {
		t.Errorf("Status(replacement) = %+v, %v; want Running", st, err)
	}
	if got := replacementsOf(t, c, old.Name); len(got) != 1 {
		t.Errorf("replacements after boot = %v", got)
	}
}

func testFaultPersists(t *testing.T, c client.Client, opts Options) {
	ctx := testCtx(t)
	p := New(c, opts)
	startBooter(t, c, opts)
	node := readyGPUNode(t, c, "fp")
	node.Annotations[v1alpha1.AnnotationKwokFaultPersists] = "true"
	if err := c.Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	setAgentCondition(t, c, node, gpuCondition, corev1.ConditionFalse, "NvidiaXID79Error")
	if _, err := p.Reboot(ctx, node, "inc-fp"); err != nil {
		t.Fatal(err)
	}
	waitNode(t, c, node.Name, "NotReady", func(n *corev1.Node) bool { return !testenv.NodeReady(n) })
	after := waitNode(t, c, node.Name, "Ready after boot", func(n *corev1.Node) bool { return testenv.NodeReady(n) && !booting(n) })
	if got := cond(after, gpuCondition); got.Status != corev1.ConditionFalse || got.Reason != "NvidiaXID79Error" {
		t.Errorf("AcceleratedHardwareReady after boot = %s/%s, want the agent's False/NvidiaXID79Error", got.Status, got.Reason)
	}
	if got := cond(after, kernelCondition); got.Status != corev1.ConditionTrue {
		t.Errorf("KernelReady after boot = %+v, want True", got)
	}
}

func testBooterRestart(t *testing.T, c client.Client) {
	ctx := testCtx(t)
	t0 := time.Now()
	fc := clocktesting.NewFakeClock(t0)
	opts := Options{RebootDelay: 30 * time.Second, Clock: fc}
	node := readyGPUNode(t, c, "rs")
	stop := startBooter(t, c, opts)
	if _, err := New(c, opts).Reboot(ctx, node, "inc-rs"); err != nil {
		t.Fatal(err)
	}
	// The controller goes away mid-boot...
	stop()
	if n := getNode(t, c, node.Name); !booting(n) || testenv.NodeReady(n) {
		t.Fatalf("node not rebooting before the restart: %v", n.Labels)
	}
	// ...and a new one starts after the ready time.
	later := opts
	later.Clock = clocktesting.NewFakeClock(t0.Add(time.Minute))
	startBooter(t, c, later)
	after := waitNode(t, c, node.Name, "Ready after the restarted Booter", func(n *corev1.Node) bool { return testenv.NodeReady(n) && !booting(n) })
	if got := cond(after, gpuCondition); got.Status != corev1.ConditionTrue {
		t.Errorf("AcceleratedHardwareReady = %+v, want True", got)
	}
}

func testBooterWaits(t *testing.T, c client.Client) {
	ctx := testCtx(t)
	fc := clocktesting.NewFakeClock(time.Now())
	opts := Options{RebootDelay: 30 * time.Second, PollInterval: time.Second, Clock: fc}
	node := readyGPUNode(t, c, "bw")
	startBooter(t, c, opts)
	if _, err := New(c, opts).Reboot(ctx, node, "inc-bw"); err != nil {
		t.Fatal(err)
	}
	// A heartbeat kwok had queued before the reboot marks it Ready.
	n := getNode(t, c, node.Name)
	setAgentCondition(t, c, n, corev1.NodeReady, corev1.ConditionTrue, "KubeletReady")

	waitBooterIdle(t, fc)
	fc.Step(29 * time.Second)
	waitBooterIdle(t, fc)
	n = getNode(t, c, node.Name)
	if !booting(n) {
		t.Fatal("boot finished a second before its ready time")
	}
	if r := cond(n, corev1.NodeReady); r.Status != corev1.ConditionFalse {
		t.Errorf("Ready of a booting node = %s/%s; want held False", r.Status, r.Reason)
	}
	fc.Step(2 * time.Second)
	waitNode(t, c, node.Name, "boot finished after its ready time", func(n *corev1.Node) bool { return !booting(n) && testenv.NodeReady(n) })
}

// waitBooterIdle waits until the Booter has finished a pass and sleeps on
// the fake clock again.
func waitBooterIdle(t *testing.T, fc *clocktesting.FakeClock) {
	t.Helper()
	testproc.EventuallyTrue(t, 10*time.Second, "the Booter waiting on the clock", fc.HasWaiters)
}

func testMissing(t *testing.T, c client.Client, opts Options) {
	ctx := testCtx(t)
	p := New(c, opts)
	ghost := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ghost-0000"}}
	if _, err := p.Reboot(ctx, ghost, "inc-g"); !errors.Is(err, provider.ErrNotFound) || !strings.Contains(err.Error(), "ghost-0000") {
		t.Errorf("Reboot(ghost) err = %v, want ErrNotFound naming the node", err)
	}
	if _, err := p.Replace(ctx, ghost, "inc-g"); !errors.Is(err, provider.ErrNotFound) || !strings.Contains(err.Error(), "ghost-0000") {
		t.Errorf("Replace(ghost) err = %v, want ErrNotFound naming the node", err)
	}
	if err := p.SetScaleInProtection(ctx, ghost, true); !errors.Is(err, provider.ErrNotFound) || !strings.Contains(err.Error(), "ghost-0000") {
		t.Errorf("SetScaleInProtection(ghost) err = %v, want ErrNotFound naming the node", err)
	}
	if got := replacementsOf(t, c, "ghost-0000"); len(got) != 0 {
		t.Errorf("Replace of a missing node created %v", got)
	}
	st, err := p.Status(ctx, ghost)
	if err != nil || st.State != provider.StateGone || st.Replacement != "" {
		t.Errorf("Status(ghost) = %+v, %v; want Gone without a replacement", st, err)
	}
}

func replacementsOf(t *testing.T, c client.Client, old string) []string {
	t.Helper()
	var list corev1.NodeList
	if err := c.List(testCtx(t), &list, client.MatchingLabels{v1alpha1.LabelKwokReplaces: replacesValue(old)}); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range list.Items {
		out = append(out, n.Name)
	}
	return out
}
