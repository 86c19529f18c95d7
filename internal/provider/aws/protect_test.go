package aws

import (
	"errors"
	"strings"
	"testing"

	"github.com/gpuheal/gpuheal/internal/provider"
)

func TestScaleInProtectionProtectsAndUnprotects(t *testing.T) {
	f := newFakeAWS(t)
	f.add(instA, inGroup("us-east-1b"))
	p := newTestProvider(t, f)
	node := gpuNode("gpu-1", "aws:///us-east-1b/"+instA)

	if err := p.SetScaleInProtection(t.Context(), node, true); err != nil {
		t.Fatalf("protect: %v", err)
	}
	if !f.instance(instA).Protected {
		t.Fatal("instance not protected from scale-in after protect")
	}
	set := f.callsOf("SetInstanceProtection")
	if len(set) != 1 {
		t.Fatalf("SetInstanceProtection called %d times, want 1", len(set))
	}
	for k, want := range map[string]string{"InstanceIds.member.1": instA, "AutoScalingGroupName": "gpu-p5", "ProtectedFromScaleIn": "true"} {
		if got := set[0].Form.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if set[0].Region != "us-east-1" || set[0].Service != "autoscaling" {
		t.Errorf("signed for %s/%s, want us-east-1/autoscaling", set[0].Region, set[0].Service)
	}

	if err := p.SetScaleInProtection(t.Context(), node, false); err != nil {
		t.Fatalf("unprotect: %v", err)
	}
	if f.instance(instA).Protected {
		t.Error("instance still protected after unprotect")
	}
	set = f.callsOf("SetInstanceProtection")
	if len(set) != 2 || set[1].Form.Get("ProtectedFromScaleIn") != "false" {
		t.Errorf("SetInstanceProtection calls = %+v, want a second one with ProtectedFromScaleIn=false", set)
	}
	// The group was looked up once and then remembered.
	if n := len(f.callsOf("DescribeAutoScalingInstances")); n != 1 {
		t.Errorf("DescribeAutoScalingInstances called %d times, want 1", n)
	}
}

func TestScaleInProtectionAlreadySetMakesNoChange(t *testing.T) {
	f := newFakeAWS(t)
	in := inGroup("us-east-1a")
	in.Protected = true
	f.add(instA, in)
	node := gpuNode("gpu-1", "aws:///us-east-1a/"+instA)

	// A restarted controller protecting its gold nodes again.
	if err := newTestProvider(t, f).SetScaleInProtection(t.Context(), node, true); err != nil {
		t.Fatalf("protect: %v", err)
	}
	if n := len(f.callsOf("SetInstanceProtection")); n != 0 {
		t.Errorf("SetInstanceProtection called %d times for an instance already protected, want 0", n)
	}
	if !f.instance(instA).Protected {
		t.Error("instance lost its protection")
	}
}

func TestScaleInProtectionOutsideAnyGroupIsUnsupported(t *testing.T) {
	f := newFakeAWS(t)
	f.add(instA, fakeInstance{State: "running", Zone: "us-east-1a"})
	err := newTestProvider(t, f).SetScaleInProtection(t.Context(), gpuNode("gpu-3", "aws:///us-east-1a/"+instA), true)
	if !errors.Is(err, ErrNoAutoScalingGroup) || !errors.Is(err, provider.ErrUnsupported) {
		t.Fatalf("err = %v, want ErrNoAutoScalingGroup wrapping provider.ErrUnsupported", err)
	}
	for _, want := range []string{"gpu-3", instA, "us-east-1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if n := len(f.callsOf("SetInstanceProtection")); n != 0 {
		t.Errorf("SetInstanceProtection called %d times, want 0", n)
	}
}

func TestScaleInProtectionLooksUpAMovedInstanceAgain(t *testing.T) {
	f := newFakeAWS(t)
	f.add(instA, inGroup("us-east-1a"))
	p := newTestProvider(t, f)
	node := gpuNode("gpu-1", "aws:///us-east-1a/"+instA)
	if err := p.SetScaleInProtection(t.Context(), node, true); err != nil {
		t.Fatalf("protect: %v", err)
	}

	// Someone detaches the instance and attaches it to another group.
	moved := inGroup("us-east-1a")
	moved.Group = "gpu-p5-b"
	f.add(instA, moved)

	err := p.SetScaleInProtection(t.Context(), node, false)
	var ae *Error
	if !errors.As(err, &ae) || ae.Op != "SetInstanceProtection" || ae.Code != "ValidationError" {
		t.Fatalf("unprotect with the old group remembered: err = %v, want SetInstanceProtection ValidationError", err)
	}
	if err := p.SetScaleInProtection(t.Context(), node, true); err != nil {
		t.Fatalf("protect after the failure: %v", err)
	}
	set := f.callsOf("SetInstanceProtection")
	if got := set[len(set)-1].Form.Get("AutoScalingGroupName"); got != "gpu-p5-b" || !f.instance(instA).Protected {
		t.Errorf("last SetInstanceProtection for group %q, protected=%v; want gpu-p5-b, true", got, f.instance(instA).Protected)
	}
	if n := len(f.callsOf("DescribeAutoScalingInstances")); n != 2 {
		t.Errorf("DescribeAutoScalingInstances called %d times, want 2 (once more after the failure)", n)
	}
}

func TestScaleInProtectionMalformedProviderIDMakesNoCall(t *testing.T) {
	f := newFakeAWS(t)
	err := newTestProvider(t, f).SetScaleInProtection(t.Context(), gpuNode("gpu-9", "aws:///us-east-1a/nope"), true)
	if !errors.Is(err, ErrMalformedProviderID) {
		t.Errorf("err = %v, want ErrMalformedProviderID", err)
	}
	if calls := f.callsOf(""); len(calls) != 0 {
		t.Errorf("made %d AWS calls, want none", len(calls))
	}
}
