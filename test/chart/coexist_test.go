//go:build integration

package chart

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// TestConditionTypes: by default the agent publishes gpuheal's own
// condition types, its admission policy lets it write those and not the
// EKS names, and the chart's policy acts on them; agent.conditionTypes=eks
// switches the agent and its admission policy to the EKS names.
func TestConditionTypes(t *testing.T) {
	for _, tc := range []struct {
		name        string
		args        []string
		flag        string
		may, mayNot []string
	}{
		{"default", nil, "--condition-types=gpuheal",
			[]string{v1alpha1.ConditionGPUHealAcceleratorHealthy, v1alpha1.ConditionGPUHealKernelHealthy, v1alpha1.ConditionGPUHealNetworkingHealthy},
			[]string{v1alpha1.ConditionAcceleratedHardwareReady, v1alpha1.ConditionKernelReady, v1alpha1.ConditionNetworkingReady}},
		{"eks", []string{"--set", "agent.conditionTypes=eks", "--set", "remediationPolicy.create=false"}, "--condition-types=eks",
			[]string{v1alpha1.ConditionAcceleratedHardwareReady, v1alpha1.ConditionKernelReady, v1alpha1.ConditionNetworkingReady},
			[]string{v1alpha1.ConditionGPUHealAcceleratorHealthy, v1alpha1.ConditionGPUHealKernelHealthy, v1alpha1.ConditionGPUHealNetworkingHealthy}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := decode(t, render(t, tc.args...))
			ds := find(t, objs, "DaemonSet", "gpuheal-agent")
			args, _, _ := unstructured.NestedStringSlice(findContainer(ds.Object, "agent"), "args")
			if !contains(args, tc.flag) {
				t.Errorf("agent args %v lack %s", args, tc.flag)
			}
			allowed := agentConditions(t, objs)
			for _, c := range tc.may {
				if !strings.Contains(allowed, "'"+c+"'") {
					t.Errorf("the admission policy does not let the agent write %s: %s", c, allowed)
				}
			}
			for _, c := range tc.mayNot {
				if strings.Contains(allowed, "'"+c+"'") {
					t.Errorf("the admission policy lets the agent write %s: %s", c, allowed)
				}
			}
		})
	}
	pol := find(t, decode(t, render(t)), "RemediationPolicy", "default")
	conds, _, _ := unstructured.NestedSlice(pol.Object, "spec", "unhealthyConditions")
	if first, _ := conds[0].(map[string]any); first["type"] != v1alpha1.ConditionGPUHealAcceleratorHealthy {
		t.Errorf("the chart's policy acts on %v first, want %s", first["type"], v1alpha1.ConditionGPUHealAcceleratorHealthy)
	}
}

// TestControllerAlone: agent.enabled=false renders the controller and the
// policy on another agent's conditions, and nothing of the agent.
func TestControllerAlone(t *testing.T) {
	objs := decode(t, render(t, "-f", "testdata/other-agent-detects.yaml", "--set", "networkPolicy.enabled=true"))
	find(t, objs, "Deployment", "gpuheal-controller")
	for _, o := range objs {
		if strings.HasPrefix(o.GetName(), "gpuheal-agent") {
			t.Errorf("agent.enabled=false renders %s %s", o.GetKind(), o.GetName())
		}
	}
	pol := find(t, objs, "RemediationPolicy", "default")
	conds, _, _ := unstructured.NestedSlice(pol.Object, "spec", "unhealthyConditions")
	if first, _ := conds[0].(map[string]any); first["type"] != v1alpha1.ConditionAcceleratedHardwareReady {
		t.Errorf("the policy acts on %v, want the other agent's %s", first["type"], v1alpha1.ConditionAcceleratedHardwareReady)
	}
	if out, err := runHelm(t, "lint", chartDir(t), "--strict", "-f", "testdata/other-agent-detects.yaml"); err != nil {
		t.Errorf("helm lint: %v\n%s", err, out)
	}
	if _, err := runHelm(t, "template", "gpuheal", chartDir(t), "--set", "agent.enabled=false"); err == nil || !strings.Contains(err.Error(), "controllerNodeSelector") {
		t.Errorf("agent.enabled=false with the agent's label as the controller's node selector: err %v, want a failure naming controllerNodeSelector", err)
	}
	// EKS names for EKS's or Karpenter's repair, and gpuheal's policy
	// beside them: two repairers of one node. The chart refuses it.
	if _, err := runHelm(t, "template", "gpuheal", chartDir(t), "--set", "agent.conditionTypes=eks"); err == nil ||
		!strings.Contains(err.Error(), "remediationPolicy.create=false") {
		t.Errorf("agent.conditionTypes=eks with the chart's policy: err %v, want a failure naming remediationPolicy.create=false", err)
	}
	if _, err := runHelm(t, "template", "gpuheal", chartDir(t), "--set", "agent.conditionTypes=EKS"); err == nil {
		t.Error("agent.conditionTypes=EKS rendered; want the schema to refuse it")
	}
}

// agentConditions is the admission policy's list of the conditions the
// agent may write (its agentConditions variable).
func agentConditions(t *testing.T, objs []*unstructured.Unstructured) string {
	t.Helper()
	vap := find(t, objs, "ValidatingAdmissionPolicy", "gpuheal-agent-own-node")
	vars, _, _ := unstructured.NestedSlice(vap.Object, "spec", "variables")
	for _, v := range vars {
		if m, _ := v.(map[string]any); m["name"] == "agentConditions" {
			return m["expression"].(string)
		}
	}
	t.Fatal("the admission policy has no agentConditions variable")
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
