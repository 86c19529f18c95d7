//go:build integration

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
	"github.com/gpuheal/gpuheal/internal/testproc"
)

// TestAgentSetsConditionOnItsNode runs the agent in cluster mode against
// the real API server, on the sim backend with a fault schedule: the node's
// GPUHealAcceleratorHealthy goes True, then False with the Xid 79 reason
// once the simulated GPU falls off the bus, and kwok's Ready stays.
func TestAgentSetsConditionOnItsNode(t *testing.T) {
	t.Parallel()
	env := testcluster.Start(t, testenv.Options{Kwok: true})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	names, err := testenv.CreateGPUNodes(ctx, env.Client, "agent-e2e", 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := testenv.WaitNodesReady(ctx, env.Client, names); err != nil {
		t.Fatal(err)
	}
	node := names[0]

	dir := t.TempDir()
	schedule := filepath.Join(dir, "faults.yaml")
	if err := os.WriteFile(schedule, []byte("- at: 2s\n  gpu: 1\n  fault: row-remap-pending\n- at: 3s\n  node: \"*\"\n  gpu: 2\n  fault: fell-off-bus\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	kernelLog := filepath.Join(dir, "kmsg")
	_, metricsURL := startClusterAgent(t, node, env.Kubeconfig, kernelLog, filepath.Join(dir, "state"),
		"--sim-schedule="+schedule, "--sim-kernel-log="+kernelLog)

	healthy := waitCondition(ctx, t, env.Client, node, corev1.ConditionTrue)
	sick := waitCondition(ctx, t, env.Client, node, corev1.ConditionFalse)
	if sick.Reason != "NvidiaXID79Error" && sick.Reason != "NvidiaGPUMissing" {
		t.Errorf("reason %q, want NvidiaXID79Error or NvidiaGPUMissing (message %q)", sick.Reason, sick.Message)
	}
	if !strings.Contains(sick.Message, "0000:3a:00.0") || !strings.Contains(sick.Message, "recommended action: reboot") {
		t.Errorf("message %q does not name GPU 2's PCI id and the recommended action", sick.Message)
	}
	if !sick.LastTransitionTime.After(healthy.LastTransitionTime.Time) && !sick.LastTransitionTime.Equal(&healthy.LastTransitionTime) {
		t.Errorf("transition time went back: %v then %v", healthy.LastTransitionTime, sick.LastTransitionTime)
	}
	var n corev1.Node
	if err := env.Client.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
		t.Fatal(err)
	}
	if !testenv.NodeReady(&n) {
		t.Error("the agent's patch removed kwok's Ready condition")
	}
	// The controller reads the advice from this annotation, never from the message.
	if got, want := n.Annotations[v1alpha1.AnnotationRecommendedActions], `{"GPUHealAcceleratorHealthy":"reboot"}`; got != want {
		t.Errorf("annotation %s = %q, want %q", v1alpha1.AnnotationRecommendedActions, got, want)
	}

	// Seven of eight GPUs are left for schedulers.
	waitLabel(ctx, t, env.Client, node, v1alpha1.LabelGPUHealthyCount, "7")
	// The pending row remap is an active warning, counted for the controller's health score.
	// Its active warnings are counted on the node for the controller's
	// health score, as many as the agent's own metric says are active.
	testproc.UntilTrue(ctx, t, "annotation gpuheal.io/active-warnings matching gpuheal_problem_active{severity=warning}", func() bool {
		var n corev1.Node
		active := 0
		for _, line := range strings.Split(scrape(t, metricsURL), "\n") {
			if strings.HasPrefix(line, "gpuheal_problem_active{") && strings.Contains(line, `severity="warning"`) && strings.HasSuffix(line, " 1") {
				active++
			}
		}
		return active >= 1 && env.Client.Get(ctx, client.ObjectKey{Name: node}, &n) == nil &&
			n.Annotations[v1alpha1.AnnotationActiveWarnings] == strconv.Itoa(active)
	})

	// The warning (a pending row remap) is an Event on the node, once.
	ev := waitEvent(ctx, t, env.Client, node, "NvidiaRowRemapPending")
	if ev.Type != corev1.EventTypeWarning || ev.Count != 1 || ev.InvolvedObject.UID != n.UID {
		t.Errorf("event = type %s count %d uid %s (node uid %s)", ev.Type, ev.Count, ev.InvolvedObject.UID, n.UID)
	}
}

// waitEvent polls the node's events until one has the reason.
func waitEvent(ctx context.Context, t *testing.T, c client.Client, node, reason string) corev1.Event {
	t.Helper()
	var found corev1.Event
	testproc.UntilTrue(ctx, t, fmt.Sprintf("a %s event on node %s", reason, node), func() bool {
		var list corev1.EventList
		if err := c.List(ctx, &list, client.InNamespace("default")); err != nil {
			return false
		}
		for _, e := range list.Items {
			if e.InvolvedObject.Kind == "Node" && e.InvolvedObject.Name == node && e.Reason == reason {
				found = e
				return true
			}
		}
		return false
	})
	return found
}

// waitCondition polls the node until GPUHealAcceleratorHealthy has status.
func waitCondition(ctx context.Context, t *testing.T, c client.Client, node string, status corev1.ConditionStatus) corev1.NodeCondition {
	t.Helper()
	var found corev1.NodeCondition
	testproc.UntilTrue(ctx, t, fmt.Sprintf("node %s GPUHealAcceleratorHealthy=%s", node, status), func() bool {
		var n corev1.Node
		if err := c.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
			return false
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == v1alpha1.ConditionGPUHealAcceleratorHealthy && cond.Status == status {
				found = cond
				return true
			}
		}
		return false
	})
	return found
}

// TestLatchedProblemSurvivesAgentRestart: a GPU fell off the bus (Xid 79,
// latched until a reboot). The agent restarts on the same boot; the
// kernel-log position makes it skip the old line, and the journal of fatal
// findings must keep the node unhealthy rather than let it turn True.
// Then the agent restarts once more with its state lost and the problem
// seen anew (as a simulated node re-injects its fault): the condition's
// lastTransitionTime must still be the first one.
func TestLatchedProblemSurvivesAgentRestart(t *testing.T) {
	t.Parallel()
	env := testcluster.Start(t, testenv.Options{Kwok: true})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	names, err := testenv.CreateGPUNodes(ctx, env.Client, "latched", 1)
	if err != nil {
		t.Fatal(err)
	}
	node := names[0]
	dir := t.TempDir()
	kernelLog, state := filepath.Join(dir, "kmsg"), filepath.Join(dir, "state")
	appendLines(t, kernelLog, "4,7,1000000,-;NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.")
	start := func() (stop func(), metricsURL string) {
		return startClusterAgent(t, node, env.Kubeconfig, kernelLog, state)
	}

	stop, _ := start()
	before := waitCondition(ctx, t, env.Client, node, corev1.ConditionFalse)
	if before.Reason != "NvidiaXID79Error" {
		t.Fatalf("reason %q", before.Reason)
	}
	stop()

	stop, url := start()
	waitHTTP(t, url, 30*time.Second)
	// The restarted agent's own verdict, once it has evaluated: 0 = False.
	series := `gpuheal_condition_status{type="GPUHealAcceleratorHealthy"}`
	testproc.UntilTrue(ctx, t, "the restarted agent's first evaluation", func() bool { return strings.Contains(scrape(t, url), series) })
	if v := metricValue(t, url, series); v != 0 {
		t.Fatalf("restarted agent says GPUHealAcceleratorHealthy=%v (1 = True): the latched Xid 79 was forgotten", v)
	}
	stop()

	// Mark the condition's heartbeat so the next agent's first write can
	// be told from the old one, and start it without its state, on a log
	// that shows the same fault at a later time.
	old := metav1.NewTime(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC))
	mark := fmt.Sprintf(`{"status":{"conditions":[{"type":"GPUHealAcceleratorHealthy","lastHeartbeatTime":%q}]}}`, old.UTC().Format(time.RFC3339))
	if err := env.Client.Status().Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}},
		client.RawPatch(types.StrategicMergePatchType, []byte(mark))); err != nil {
		t.Fatal(err)
	}
	// Times on a Node have whole seconds: let the clock pass the first
	// transition's second, or a wrongly new one could not be told apart.
	testproc.UntilTrue(ctx, t, "the clock to pass the first transition's second", func() bool {
		return time.Now().After(before.LastTransitionTime.Add(time.Second))
	})
	reinjected := filepath.Join(dir, "kmsg-again")
	appendLines(t, reinjected, "4,9,90000000,-;NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.")
	startClusterAgent(t, node, env.Kubeconfig, reinjected, filepath.Join(dir, "state-lost"))
	var after corev1.NodeCondition
	testproc.UntilTrue(ctx, t, "the restarted agent's first write of the condition", func() bool {
		var n corev1.Node
		if env.Client.Get(ctx, client.ObjectKey{Name: node}, &n) != nil {
			return false
		}
		for _, c := range n.Status.Conditions {
			if c.Type == v1alpha1.ConditionGPUHealAcceleratorHealthy && !c.LastHeartbeatTime.Equal(&old) {
				after = c
				return true
			}
		}
		return false
	})
	if after.Status != corev1.ConditionFalse {
		t.Fatalf("node condition %s after restart", after.Status)
	}
	t.Logf("lastTransitionTime before %s, after %s (heartbeat %s)", before.LastTransitionTime, after.LastTransitionTime, after.LastHeartbeatTime)
	// The problem is the same one: a new transition time would look like a
	// second incident to a repair controller.
	if !after.LastTransitionTime.Equal(&before.LastTransitionTime) {
		t.Fatalf("restart moved lastTransitionTime from %s to %s", before.LastTransitionTime, after.LastTransitionTime)
	}
}

func scrape(t testing.TB, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// waitLabel polls the node until the label has the value.
func waitLabel(ctx context.Context, t *testing.T, c client.Client, node, key, want string) {
	t.Helper()
	testproc.UntilTrue(ctx, t, fmt.Sprintf("node %s label %s=%s", node, key, want), func() bool {
		var n corev1.Node
		return c.Get(ctx, client.ObjectKey{Name: node}, &n) == nil && n.Labels[key] == want
	})
}

func clientKey(name string) client.ObjectKey { return client.ObjectKey{Name: name} }
