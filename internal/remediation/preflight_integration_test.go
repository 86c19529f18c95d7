//go:build integration

package remediation

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/provider"
	"github.com/gpuheal/gpuheal/internal/provider/fake"
	"github.com/gpuheal/gpuheal/internal/provider/karpenter"
	"github.com/gpuheal/gpuheal/internal/testenv"
)

func (h *harness) providerReady(policy string) *metav1.Condition {
	h.t.Helper()
	var p v1alpha1.RemediationPolicy
	if err := h.c.Get(context.Background(), clientKey(policy), &p); err != nil {
		h.t.Fatal(err)
	}
	return meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionProviderReady)
}

// TestPreflightHoldsIncidentsUntilProviderReady: a provider that fails its
// preflight shows ProviderReady=False on the policy, naming what failed, an
// unhealthy node's incident waits in Pending without a cordon, and once the
// preflight passes the incident goes on.
func TestPreflightHoldsIncidentsUntilProviderReady(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "pre", 1)
	cloud := fake.New(provider.Kwok)
	cloud.SetPreflight(&provider.PreflightError{Reason: v1alpha1.ReasonPermissionDenied,
		Err: errors.New("arn:aws:iam::1:role/x may not ec2:RebootInstances")})
	h.create(fastPolicy("pre"))
	h.startController(controllerConfig{providers: provider.Set{provider.Kwok: cloud}, preflightEvery: time.Second})
	node := h.nodes[0]

	h.waitFor("ProviderReady=False on the policy", 30*time.Second, func() (bool, error) {
		c := h.providerReady("pre")
		return c != nil && c.Status == metav1.ConditionFalse, nil
	})
	if c := h.providerReady("pre"); c.Reason != v1alpha1.ReasonPermissionDenied || !strings.Contains(c.Message, "may not ec2:RebootInstances") {
		t.Errorf("ProviderReady = %s %q, want PermissionDenied naming the denied action", c.Reason, c.Message)
	}
	if got := testutil.ToFloat64(providerReady.WithLabelValues("pre")); got != 0 {
		t.Errorf("gpuheal_provider_ready{policy=pre} = %v, want 0", got)
	}
	if calls := cloud.CallsTo(fake.MethodPreflight); len(calls) == 0 || calls[0].Node != node {
		t.Errorf("preflight calls = %+v, want ones with the policy's node %s", calls, node)
	}

	h.breakGPU(node, "reboot")
	h.waitFor("the incident held for the provider", 30*time.Second, func() (bool, error) {
		for _, nr := range h.incidents(node) {
			if c := meta.FindStatusCondition(nr.Status.Conditions, v1alpha1.ConditionAdmitted); c != nil && c.Reason == v1alpha1.ReasonProviderNotReady {
				return true, nil
			}
		}
		return false, nil
	})
	if n, _ := h.node(node); n.Spec.Unschedulable {
		t.Error("the node was cordoned while its provider could not act")
	}
	if calls := cloud.CallsTo(fake.MethodReboot); len(calls) != 0 {
		t.Errorf("reboot called while held: %+v", calls)
	}

	cloud.SetPreflight(nil)
	h.waitFor("ProviderReady=True", 30*time.Second, func() (bool, error) {
		c := h.providerReady("pre")
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == v1alpha1.ReasonPreflightPassed, nil
	})
	h.waitFor("gpuheal_provider_ready 1", 10*time.Second, func() (bool, error) {
		return testutil.ToFloat64(providerReady.WithLabelValues("pre")) == 1, nil
	})
	// At least one: a status write lost to a conflict repeats the call with
	// the same token, which providers recognise.
	h.waitFor("the reboot, once the provider is ready", 30*time.Second, func() (bool, error) {
		return len(cloud.CallsTo(fake.MethodReboot)) >= 1, nil
	})
}

// TestPreflightRunsForDryRunPolicy: a wrong role shows before the first
// drain, also while the policy only watches.
func TestPreflightRunsForDryRunPolicy(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "predry", 1)
	cloud := fake.New(provider.Kwok)
	cloud.SetPreflight(errors.New("the cloud did not answer"))
	p := fastPolicy("predry")
	p.Spec.DryRun = true
	h.create(p)
	h.startController(controllerConfig{providers: provider.Set{provider.Kwok: cloud}})
	h.waitFor("ProviderReady=False on the dry-run policy", 30*time.Second, func() (bool, error) {
		c := h.providerReady("predry")
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ReasonPreflightFailed &&
			strings.Contains(c.Message, "did not answer"), nil
	})
}

// TestKarpenterNodeOnAWSRebootsThroughEC2AndReplacesThroughNodeClaim: a
// node that Karpenter launched on EC2 (its node pool label, an aws
// providerID, a NodeClaim whose status names it) under a policy that names
// no provider reboots through the aws provider and is replaced by deleting
// its NodeClaim, never through an Auto Scaling group.
func TestKarpenterNodeOnAWSRebootsThroughEC2AndReplacesThroughNodeClaim(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "kpaws", 0)
	applyManifest(t, h, "internal/provider/karpenter/testdata/crds/nodeclaims.yaml")
	const pid = "aws:///us-east-1a/i-0123456789abcdef0"
	n := testenv.GPUNode("kpaws-0")
	n.Labels[v1alpha1.LabelKarpenterNodePool] = "gpu"
	n.Spec.ProviderID = pid
	h.create(n)
	ctx := context.Background()
	if err := testenv.WaitNodesReady(ctx, h.c, []string{n.Name}); err != nil {
		t.Fatal(err)
	}
	claim := &unstructured.Unstructured{}
	claim.SetGroupVersionKind(karpenter.NodeClaimGVK)
	claim.SetName("gpu-abcde")
	_ = unstructured.SetNestedMap(claim.Object, map[string]any{"nodeClassRef": map[string]any{"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
		"requirements": []any{}}, "spec")
	h.waitFor("the NodeClaim CRD to be served", 30*time.Second, func() (bool, error) { return h.c.Create(ctx, claim) == nil, nil })
	_ = unstructured.SetNestedMap(claim.Object, map[string]any{"providerID": pid, "nodeName": n.Name}, "status")
	if err := h.c.Status().Update(ctx, claim); err != nil {
		t.Fatal(err)
	}

	ec2 := fake.New(provider.AWS)
	p := fastPolicy("kpaws")
	p.Spec.Provider = ""
	h.create(p)
	h.startController(controllerConfig{providers: provider.Set{provider.AWS: ec2, provider.Karpenter: karpenter.New(h.c)}})
	h.waitFor("ProviderReady=True, proven by both", 30*time.Second, func() (bool, error) {
		c := h.providerReady("kpaws")
		return c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, "aws+karpenter (1 nodes)") &&
			strings.Contains(c.Message, "delete nodeclaims.karpenter.sh"), nil
	})

	h.breakGPU(n.Name, "reboot")
	h.waitFor("an EC2 reboot", 30*time.Second, func() (bool, error) { return len(ec2.CallsTo(fake.MethodReboot)) >= 1, nil })
	h.waitFor("the reboot recorded as aws+karpenter's", 30*time.Second, func() (bool, error) {
		for _, nr := range h.incidents(n.Name) {
			if reqs := nr.Status.ProviderRequests; len(reqs) > 0 {
				return reqs[0].Provider == "aws+karpenter" && reqs[0].Action == v1alpha1.ActionReboot, nil
			}
		}
		return false, nil
	})
	// The reboot does not heal within the policy's reboot timeout (20 s):
	// the escalation replaces through the NodeClaim.
	h.waitFor("the NodeClaim deleted", 60*time.Second, func() (bool, error) {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(karpenter.NodeClaimGVK)
		err := h.c.Get(ctx, clientKey("gpu-abcde"), got)
		return err != nil && strings.Contains(err.Error(), "not found"), nil
	})
	if calls := ec2.CallsTo(fake.MethodReplace); len(calls) != 0 {
		t.Errorf("aws was asked to replace a Karpenter node: %+v", calls)
	}
}
