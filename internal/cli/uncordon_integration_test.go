//go:build integration

package cli

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuhealv1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
)

// TestUncordonOursOnAPIServer: `gpuheal uncordon --ours` says what it
// would do and changes nothing; with --yes it removes gpuheal's cordons
// and taints only: a cordon without gpuheal's record, one someone set
// before gpuheal, other taints and a node whose incident is open stay.
func TestUncordonOursOnAPIServer(t *testing.T) {
	t.Parallel()
	env := testcluster.Start(t, testenv.Options{Scheme: testScheme(t)})
	ctx := t.Context()
	ours := corev1.Taint{Key: gpuhealv1.TaintUnhealthy, Effect: corev1.TaintEffectNoSchedule}
	theirs := corev1.Taint{Key: gpuhealv1.TaintKarpenterDisrupted, Effect: corev1.TaintEffectNoSchedule}
	gate := corev1.Taint{Key: gpuhealv1.TaintValidating, Effect: corev1.TaintEffectNoSchedule}
	node := func(name string, cordoned bool, ann map[string]string, taints ...corev1.Taint) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann},
			Spec: corev1.NodeSpec{Unschedulable: cordoned, Taints: taints}}
	}
	for _, n := range []*corev1.Node{
		node("ours", true, map[string]string{gpuhealv1.AnnotationCordonedBy: "ours-1"}, ours),
		node("before-us", true, map[string]string{gpuhealv1.AnnotationCordonedBy: "before-1", gpuhealv1.AnnotationWasUnschedulable: "true"}, ours),
		node("their-cordon", true, nil, theirs),
		node("our-taint-only", true, nil, ours, theirs),
		node("gate-taint-only", false, nil, gate),
		node("mid-check", true, map[string]string{gpuhealv1.AnnotationCordonedBy: "mid-1"}, ours, gate),
		node("open-incident", true, map[string]string{gpuhealv1.AnnotationCordonedBy: "open-1"}, ours),
		node("clean", false, nil),
	} {
		if err := env.Client.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	nr := &gpuhealv1.NodeRemediation{ObjectMeta: metav1.ObjectMeta{Name: "open-1"},
		Spec: gpuhealv1.NodeRemediationSpec{NodeName: "open-incident", PolicyName: "default",
			Trigger: gpuhealv1.Trigger{Type: gpuhealv1.ConditionGPUHealAcceleratorHealthy, Status: metav1.ConditionFalse, Reason: "NvidiaXID79Error", Since: metav1.Now()}}}
	if err := env.Client.Create(ctx, nr); err != nil {
		t.Fatal(err)
	}
	nr.Status.Phase = gpuhealv1.PhaseDraining
	if err := env.Client.Status().Update(ctx, nr); err != nil {
		t.Fatal(err)
	}
	type state struct {
		cordoned bool
		taints   string
		marked   bool
	}
	read := func() map[string]state {
		var list corev1.NodeList
		if err := env.Client.List(ctx, &list); err != nil {
			t.Fatal(err)
		}
		out := map[string]state{}
		for _, n := range list.Items {
			var keys []string
			for _, t := range n.Spec.Taints {
				if t.Key != corev1.TaintNodeNotReady { // the API server's admission adds it
					keys = append(keys, t.Key)
				}
			}
			_, marked := n.Annotations[gpuhealv1.AnnotationCordonedBy]
			_, was := n.Annotations[gpuhealv1.AnnotationWasUnschedulable]
			out[n.Name] = state{n.Spec.Unschedulable, strings.Join(keys, ","), marked || was}
		}
		return out
	}
	before := read()
	run := kubeRunner(t, env.Kubeconfig)

	if out, code := run("uncordon"); code != 2 || !strings.Contains(out, "pass --ours") {
		t.Errorf("without --ours: exit %d, %q", code, out)
	}
	out, code := run("uncordon", "--ours")
	if code != 0 {
		t.Fatalf("dry run: exit %d: %s", code, out)
	}
	for _, want := range []string{
		"ours: would remove gpuheal's cordon and taint gpuheal.io/unhealthy (incident ours-1)",
		"before-us: would remove gpuheal's taint gpuheal.io/unhealthy and record; the cordon someone set before gpuheal stays",
		"our-taint-only: would remove gpuheal's taint gpuheal.io/unhealthy; the cordon is not gpuheal's and stays",
		"gate-taint-only: would remove gpuheal's taint gpuheal.io/validating",
		"mid-check: would remove gpuheal's cordon and taints gpuheal.io/unhealthy and gpuheal.io/validating (incident mid-1)",
		"open-incident: skipped: incident open-1 is open",
		"5 nodes; nothing changed (rerun with --yes)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "their-cordon") || strings.Contains(out, "clean") {
		t.Errorf("dry run lists a node without gpuheal's marks:\n%s", out)
	}
	if got := read(); !mapsEqual(got, before) {
		t.Errorf("the dry run changed nodes: %v, was %v", got, before)
	}

	if out, code = run("uncordon", "--ours", "--yes"); code != 0 {
		t.Fatalf("--yes: exit %d: %s", code, out)
	}
	want := map[string]state{
		"ours":            {false, "", false},
		"before-us":       {true, "", false},
		"their-cordon":    before["their-cordon"],
		"our-taint-only":  {true, gpuhealv1.TaintKarpenterDisrupted, false},
		"gate-taint-only": {false, "", false},
		"mid-check":       {false, "", false},
		"open-incident":   before["open-incident"],
		"clean":           before["clean"],
	}
	if got := read(); !mapsEqual(got, want) {
		t.Errorf("after --yes: %v, want %v", got, want)
	}

	// A named node without gpuheal's marks is said to be left alone.
	if out, _ = run("uncordon", "--ours", "--yes", "their-cordon"); !strings.Contains(out, "their-cordon: no cordon or taint of gpuheal's; left alone") {
		t.Errorf("named node: %q", out)
	}
	var n corev1.Node
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "their-cordon"}, &n); err != nil || !n.Spec.Unschedulable {
		t.Errorf("their cordon was lifted (err %v)", err)
	}
}

func mapsEqual[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
