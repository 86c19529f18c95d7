//go:build integration

package aws

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/provider"
	"github.com/gpuheal/gpuheal/internal/provider/karpenter"
	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
)

// TestKarpenterNodeOnEC2: a node Karpenter launched on EC2 is in no Auto
// Scaling group. Through the provider set it reboots with a real EC2 call
// (to the fake), is replaced by deleting its NodeClaim on the real API
// server, never through Auto Scaling, and its preflight does not ask for
// a group it cannot have.
func TestKarpenterNodeOnEC2(t *testing.T) {
	env := testcluster.Start(t, testenv.Options{CRDDir: "../karpenter/testdata/crds"})
	ctx := t.Context()
	f := newFakeAWS(t)
	f.add(instA, fakeInstance{State: "running", Zone: "us-east-1a"}) // no group: Karpenter's
	set := provider.Set{provider.AWS: newTestProvider(t, f), provider.Karpenter: karpenter.New(env.Client)}

	pid := "aws:///us-east-1a/" + instA
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "kp-1", Labels: map[string]string{v1alpha1.LabelKarpenterNodePool: "gpu"}},
		Spec: corev1.NodeSpec{ProviderID: pid}}
	if err := env.Client.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	claim := &unstructured.Unstructured{}
	claim.SetGroupVersionKind(karpenter.NodeClaimGVK)
	claim.SetName("gpu-x1")
	if err := env.Client.Create(ctx, claim); err != nil {
		t.Fatal(err)
	}
	claim.Object["status"] = map[string]any{"providerID": pid, "nodeName": node.Name}
	if err := env.Client.Status().Update(ctx, claim); err != nil {
		t.Fatal(err)
	}

	// A policy that names aws gets the split too: aws alone could not
	// replace this node.
	p, err := set.For(provider.AWS, node)
	if err != nil || p.Name() != "aws+karpenter" {
		t.Fatalf("For(aws, Karpenter node) = %v, %v; want aws+karpenter", p, err)
	}
	msg, err := p.Preflight(ctx, []*corev1.Node{node})
	if err != nil || !strings.Contains(msg, "ec2:RebootInstances allowed") || !strings.Contains(msg, "delete nodeclaims.karpenter.sh") {
		t.Errorf("Preflight = %q, %v; want the EC2 dry run and the NodeClaim rights", msg, err)
	}
	if _, err := p.Reboot(ctx, node, "inc-1"); err != nil {
		t.Fatalf("Reboot: %v", err)
	}
	if got := f.instance(instA).Reboots; got != 1 {
		t.Errorf("EC2 rebooted the instance %d times, want 1", got)
	}
	id, err := p.Replace(ctx, node, "inc-1")
	if err != nil || id != "gpu-x1" {
		t.Fatalf("Replace = %q, %v; want NodeClaim gpu-x1", id, err)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "gpu-x1"}, claim); !apierrors.IsNotFound(err) {
		t.Errorf("NodeClaim after Replace: %v, want deleted", err)
	}
	if c := f.callsOf("DescribeAutoScalingInstances"); len(c) != 0 || len(f.callsOf("TerminateInstanceInAutoScalingGroup")) != 0 {
		t.Errorf("Auto Scaling was asked about a Karpenter node: %+v", f.callsOf(""))
	}
	if f.instance(instA).Terminations != 0 {
		t.Error("the instance was terminated through Auto Scaling")
	}
}
