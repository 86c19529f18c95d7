package remediation

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/score"
)

// The wire contract, controller side: every key the agent writes on its
// Node and the controller reads is read through the v1alpha1 constant and
// nothing else. The Node is the agent's own output: api/v1alpha1/testdata/
// agent-node.json, which internal/agent/nodestatus's wire test checks its
// real writers produce byte for byte. A key renamed on one side only fails
// one of the two tests.
const wireGolden = "../../api/v1alpha1/testdata/agent-node.json"

// agentWrittenNode is the Node the agent writes (conditions since t0-1h).
func agentWrittenNode() *corev1.Node {
	data, err := os.ReadFile(wireGolden)
	if err != nil {
		panic(err) // the fixture is part of the repository
	}
	var n corev1.Node
	if err := json.Unmarshal(data, &n); err != nil {
		panic(fmt.Sprintf("%s: %v", wireGolden, err))
	}
	return &n
}

// controllerReads is, for each agent-owned key, what the controller makes
// of it on a node.
var controllerReads = []struct {
	key  string
	read func(*corev1.Node) string
	want string
}{
	{v1alpha1.AnnotationRecommendedActions, func(n *corev1.Node) string {
		a, err := recommendedAction(n, v1alpha1.ConditionGPUHealAcceleratorHealthy)
		return a + errText(err)
	}, "replace"},
	{v1alpha1.AnnotationActiveWarnings, func(n *corev1.Node) string {
		in, _ := scoreInput(n)
		return strconv.Itoa(in.Warnings)
	}, "3"},
	{v1alpha1.AnnotationFailureRisk, func(n *corev1.Node) string {
		in, _ := scoreInput(n)
		return strconv.FormatFloat(in.Risk, 'f', 2, 64)
	}, "0.91"},
	// The controller does not read the count; a change to it still wakes
	// the reconcilers (only the controller's own score keys do not).
	{v1alpha1.LabelGPUHealthyCount, func(n *corev1.Node) string {
		old := n.DeepCopy()
		old.Labels[v1alpha1.LabelGPUHealthyCount] = "8"
		return strconv.FormatBool(nodeHealthChanged().Update(event.UpdateEvent{ObjectOld: old, ObjectNew: n}) &&
			n.Labels[v1alpha1.LabelGPUHealthyCount] != "")
	}, "true"},
	{v1alpha1.ConditionGPUHealAcceleratorHealthy, func(n *corev1.Node) string {
		p, _ := newPolicy(&v1alpha1.RemediationPolicy{}) // the defaults name it
		c, _ := p.unhealthyFor(n, t0)
		if c == nil {
			return ""
		}
		return triggerText(n, c)
	}, "GPUHealAcceleratorHealthy=False replace"},
	{v1alpha1.ConditionGPUHealKernelHealthy, func(n *corev1.Node) string { return conditionTrigger(n, v1alpha1.ConditionGPUHealKernelHealthy) }, "GPUHealKernelHealthy=False reboot"},
	{v1alpha1.ConditionGPUFailurePredicted, func(n *corev1.Node) string {
		return conditionTrigger(n, v1alpha1.ConditionGPUFailurePredicted)
	}, "GPUFailurePredicted=True none"},
}

func TestControllerReadsTheAgentsKeys(t *testing.T) {
	for _, r := range controllerReads {
		n := agentWrittenNode()
		if got := r.read(n); got != r.want {
			t.Errorf("%s: the controller reads %q, want %q", r.key, got, r.want)
		}
		// Without the key the controller reads something else: it reads
		// this key, not a copy of its name.
		if got := r.read(withoutKey(agentWrittenNode(), r.key)); got == r.want {
			t.Errorf("%s: the controller reads %q from a node without the key too", r.key, got)
		}
	}
}

// TestControllerReadsTheEKSNames: an agent with --condition-types=eks
// (api/v1alpha1/testdata/agent-node-eks.json) is not remediated by the
// default policy, which names gpuheal's own types (EKS or Karpenter repair
// acts instead), and a policy naming the EKS types reads the condition
// and the advice keyed by it.
func TestControllerReadsTheEKSNames(t *testing.T) {
	n := readNode(t, "../../api/v1alpha1/testdata/agent-node-eks.json")
	def, _ := newPolicy(&v1alpha1.RemediationPolicy{})
	if c, _ := def.unhealthyFor(n, t0); c != nil {
		t.Errorf("the default policy acts on %s of an agent publishing the EKS names", c.Type)
	}
	if got, want := conditionTrigger(n, v1alpha1.ConditionAcceleratedHardwareReady), "AcceleratedHardwareReady=False replace"; got != want {
		t.Errorf("a policy naming %s reads %q, want %q", v1alpha1.ConditionAcceleratedHardwareReady, got, want)
	}
	if got, want := conditionTrigger(n, v1alpha1.ConditionKernelReady), "KernelReady=False reboot"; got != want {
		t.Errorf("a policy naming %s reads %q, want %q", v1alpha1.ConditionKernelReady, got, want)
	}
}

func readNode(t *testing.T, path string) *corev1.Node {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var n corev1.Node
	if err := json.Unmarshal(data, &n); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &n
}

func scoreInput(n *corev1.Node) (score.Input, score.Input) {
	s := &scorePublisher{scorer: mustScorer(), events: map[string][]score.Event{}}
	return s.input(n, t0)
}

func mustScorer() *score.Scorer {
	s, err := score.New(score.DefaultConfig())
	if err != nil {
		panic(err)
	}
	return s
}

// conditionTrigger is the trigger a policy listing the condition opens.
func conditionTrigger(n *corev1.Node, typ string) string {
	c := findCondition(n, typ)
	if c == nil {
		return ""
	}
	return triggerText(n, c)
}

func triggerText(n *corev1.Node, c *corev1.NodeCondition) string {
	tr, err := triggerFrom(n, c)
	return fmt.Sprintf("%s=%s %s%s", tr.Type, tr.Status, tr.RecommendedAction, errText(err))
}

func errText(err error) string {
	if err != nil {
		return " error: " + err.Error()
	}
	return ""
}

// withoutKey removes key from n wherever the agent writes it.
func withoutKey(n *corev1.Node, key string) *corev1.Node {
	delete(n.Labels, key)
	delete(n.Annotations, key)
	n.Status.Conditions = slices.DeleteFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool { return string(c.Type) == key })
	return n
}
