package aws

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/provider"
)

func TestPreflightAllowed(t *testing.T) {
	f := newFakeAWS(t)
	f.add(instA, fakeInstance{State: "running", Zone: "us-east-1a", Group: "gpu-p5", Lifecycle: "InService"})
	f.add(instB, fakeInstance{State: "running", Zone: "us-east-1b", Group: "gpu-p5", Lifecycle: "InService"})
	p := newTestProvider(t, f)
	nodes := []*corev1.Node{gpuNode("gpu-1", "aws:///us-east-1a/"+instA), gpuNode("gpu-2", "aws:///us-east-1b/"+instB)}

	msg, err := p.Preflight(t.Context(), nodes)
	if err != nil {
		t.Fatalf("Preflight: %v", err)
	}
	for _, want := range []string{fakeRole, "ec2:RebootInstances allowed", instA, "2 of 2 nodes checked are in an Auto Scaling group"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if got := f.instance(instA).Reboots; got != 0 {
		t.Errorf("the dry run rebooted the instance %d times", got)
	}
	reboot := f.callsOf("RebootInstances")
	if len(reboot) != 1 || reboot[0].Form.Get("DryRun") != "true" {
		t.Fatalf("RebootInstances calls = %+v, want one with DryRun=true", reboot)
	}
	sts := f.callsOf("GetCallerIdentity")
	if len(sts) != 1 || sts[0].Service != "sts" || sts[0].Region != "us-east-1" {
		t.Errorf("GetCallerIdentity calls = %+v, want one signed for us-east-1/sts", sts)
	}
}

func TestPreflightDenied(t *testing.T) {
	for _, tc := range []struct {
		name, deny string
		reason     string
		want       []string
	}{
		{"reboot", "RebootInstances", v1alpha1.ReasonPermissionDenied, []string{fakeRole, "may not ec2:RebootInstances", instA, "UnauthorizedOperation"}},
		{"describe groups", "DescribeAutoScalingInstances", v1alpha1.ReasonPermissionDenied, []string{fakeRole, "autoscaling:DescribeAutoScalingInstances", "AccessDenied"}},
		{"no identity", "GetCallerIdentity", v1alpha1.ReasonCredentialsUnavailable, []string{"sts:GetCallerIdentity", "AccessDenied"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeAWS(t)
			f.add(instA, fakeInstance{State: "running", Zone: "us-east-1a", Group: "gpu-p5", Lifecycle: "InService"})
			f.deny(tc.deny)
			p := newTestProvider(t, f)
			_, err := p.Preflight(t.Context(), []*corev1.Node{gpuNode("gpu-1", "aws:///us-east-1a/"+instA)})
			if err == nil {
				t.Fatal("Preflight passed with " + tc.deny + " denied")
			}
			if got := provider.ReasonOf(err); got != tc.reason {
				t.Errorf("reason = %q, want %q (%v)", got, tc.reason, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestPreflightNotInAutoScalingGroup(t *testing.T) {
	f := newFakeAWS(t)
	f.add(instA, fakeInstance{State: "running", Zone: "us-east-1a", Group: "gpu-p5", Lifecycle: "InService"})
	f.add(instB, fakeInstance{State: "running", Zone: "us-east-1a"}) // launched outside any group
	p := newTestProvider(t, f)
	nodes := []*corev1.Node{gpuNode("gpu-1", "aws:///us-east-1a/"+instA), gpuNode("gpu-2", "aws:///us-east-1a/"+instB)}

	_, err := p.Preflight(t.Context(), nodes)
	var pe *provider.PreflightError
	if !errors.As(err, &pe) || pe.Reason != v1alpha1.ReasonNotInAutoScalingGroup {
		t.Fatalf("Preflight = %v, want reason %s", err, v1alpha1.ReasonNotInAutoScalingGroup)
	}
	if !strings.Contains(err.Error(), "1 of 2 nodes") || !strings.Contains(err.Error(), "gpu-2 ("+instB+")") {
		t.Errorf("error %q does not name gpu-2 as the one of 2 in no group", err)
	}
	// A provider that only reboots these nodes (Karpenter replaces them)
	// does not care about groups.
	if msg, err := p.PreflightReboot(t.Context(), nodes); err != nil || strings.Contains(msg, "Auto Scaling") {
		t.Errorf("PreflightReboot = %q, %v; want a pass that does not look at groups", msg, err)
	}
}

func TestPreflightSkipsGoneInstanceAndBadProviderID(t *testing.T) {
	f := newFakeAWS(t)
	f.add(instB, fakeInstance{State: "running", Zone: "us-east-1a", Group: "g", Lifecycle: "InService"})
	p := newTestProvider(t, f)
	// instA is unknown to EC2 (terminated long ago): the next node is tried.
	msg, err := p.PreflightReboot(t.Context(), []*corev1.Node{gpuNode("gone", "aws:///us-east-1a/"+instA), gpuNode("gpu-2", "aws:///us-east-1a/"+instB)})
	if err != nil || !strings.Contains(msg, "node gpu-2") {
		t.Errorf("PreflightReboot = %q, %v; want the dry run on gpu-2", msg, err)
	}
	// A node registers its own providerID: a malformed one is skipped and
	// named, and fails the preflight only when no node is left.
	msg, err = p.Preflight(t.Context(), []*corev1.Node{gpuNode("odd", "aws:///nowhere/i-1"), gpuNode("gpu-2", "aws:///us-east-1a/"+instB)})
	if err != nil || !strings.Contains(msg, "1 nodes skipped") || !strings.Contains(msg, "node odd") {
		t.Errorf("Preflight with one malformed providerID = %q, %v; want a pass naming node odd as skipped", msg, err)
	}
	_, err = p.Preflight(t.Context(), []*corev1.Node{gpuNode("odd", "aws:///nowhere/i-1")})
	if err == nil || provider.ReasonOf(err) != v1alpha1.ReasonPreflightFailed || !strings.Contains(err.Error(), "node odd") {
		t.Errorf("Preflight with only a malformed providerID = %v, want PreflightFailed naming node odd", err)
	}
}

func TestPreflightWithoutNodes(t *testing.T) {
	f := newFakeAWS(t)
	msg, err := newTestProvider(t, f).Preflight(t.Context(), nil)
	if err != nil || !strings.Contains(msg, fakeRole) || !strings.Contains(msg, "no node") {
		t.Errorf("Preflight(no nodes) = %q, %v; want the identity and no node to try", msg, err)
	}
	if c := f.callsOf(""); len(c) != 1 || c[0].Region != "eu-west-3" {
		t.Errorf("calls = %+v, want one GetCallerIdentity in the configured region", c)
	}
}
