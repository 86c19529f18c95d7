package aws

import (
	"errors"
	"strings"
	"testing"

	"github.com/gpuheal/gpuheal/internal/provider"
)

func inGroup(zone string) fakeInstance {
	return fakeInstance{State: "running", Zone: zone, Group: "gpu-p5", Lifecycle: "InService"}
}

func TestReplaceTerminatesInGroupKeepingCapacity(t *testing.T) {
	f := newFakeAWS(t)
	f.add(instA, inGroup("us-east-1b"))
	p := newTestProvider(t, f)

	id, err := p.Replace(t.Context(), gpuNode("gpu-1", "aws:///us-east-1b/"+instA), "nr-1")
	if err != nil {
		t.Fatalf("Replace: %v", err)
	}
	if want := "act-0123456789abcdef0-1"; id != want {
		t.Errorf("Replace returned %q, want the activity id %q", id, want)
	}
	describe := f.callsOf("DescribeAutoScalingInstances")
	if len(describe) != 1 || describe[0].Form.Get("InstanceIds.member.1") != instA {
		t.Errorf("DescribeAutoScalingInstances calls = %+v, want one for %s", describe, instA)
	}
	term := f.callsOf("TerminateInstanceInAutoScalingGroup")
	if len(term) != 1 {
		t.Fatalf("TerminateInstanceInAutoScalingGroup called %d times, want 1", len(term))
	}
	if got := term[0].Form.Get("InstanceId"); got != instA {
		t.Errorf("terminated %q, want %q", got, instA)
	}
	if got := term[0].Form.Get("ShouldDecrementDesiredCapacity"); got != "false" {
		t.Errorf("ShouldDecrementDesiredCapacity = %q, want false so the group launches a replacement", got)
	}
	if term[0].Region != "us-east-1" || term[0].Service != "autoscaling" {
		t.Errorf("signed for %s/%s, want us-east-1/autoscaling", term[0].Region, term[0].Service)
	}
	if in := f.instance(instA); in.Replacements != 1 || in.Lifecycle != "Terminating" {
		t.Errorf("instance after Replace: %+v, want one replacement and lifecycle Terminating", in)
	}
}

func TestReplaceRepeatedTerminatesOnce(t *testing.T) {
	f := newFakeAWS(t)
	f.add(instA, inGroup("us-east-1a"))
	node := gpuNode("gpu-1", "aws:///us-east-1a/"+instA)
	p := newTestProvider(t, f)

	first, err := p.Replace(t.Context(), node, "nr-1")
	if err != nil {
		t.Fatalf("Replace: %v", err)
	}
	again, err := p.Replace(t.Context(), node, "nr-1")
	if err != nil || again != first {
		t.Fatalf("repeated Replace = %q, %v; want the first activity %q", again, err, first)
	}

	// After a controller restart nothing is remembered: the group's
	// lifecycle state is what stops a second termination.
	restarted := newTestProvider(t, f)
	if id, err := restarted.Replace(t.Context(), node, "nr-1"); err != nil || id != "" {
		t.Fatalf("Replace after restart, instance terminating = %q, %v; want \"\", nil", id, err)
	}
	// Minutes later the instance is terminated and out of its group.
	f.finishTermination(instA)
	if id, err := newTestProvider(t, f).Replace(t.Context(), node, "nr-1"); err != nil || id != "" {
		t.Fatalf("Replace after termination finished = %q, %v; want \"\", nil", id, err)
	}

	if n := len(f.callsOf("TerminateInstanceInAutoScalingGroup")); n != 1 {
		t.Errorf("TerminateInstanceInAutoScalingGroup called %d times, want 1", n)
	}
	if got := f.instance(instA).Terminations; got != 1 {
		t.Errorf("instance terminated %d times, want 1", got)
	}
}

func TestReplaceWithLostAnswerCountsAsDone(t *testing.T) {
	f := newFakeAWS(t)
	f.add(instA, inGroup("us-east-1a"))
	// The first terminate takes effect but its answer is a 503; the SDK's
	// retry then finds the instance already terminating.
	f.loseAnswer("TerminateInstanceInAutoScalingGroup")
	p := newTestProvider(t, f)

	if _, err := p.Replace(t.Context(), gpuNode("gpu-1", "aws:///us-east-1a/"+instA), "nr-1"); err != nil {
		t.Fatalf("Replace: %v", err)
	}
	if n := len(f.callsOf("TerminateInstanceInAutoScalingGroup")); n != 2 {
		t.Errorf("TerminateInstanceInAutoScalingGroup called %d times, want 2 (one retry)", n)
	}
	if got := f.instance(instA).Terminations; got != 1 {
		t.Errorf("instance terminated %d times, want 1", got)
	}
}

func TestReplaceOutsideAnyGroupIsUnsupported(t *testing.T) {
	f := newFakeAWS(t)
	f.add(instA, fakeInstance{State: "running", Zone: "us-east-1a"})
	p := newTestProvider(t, f)

	_, err := p.Replace(t.Context(), gpuNode("gpu-3", "aws:///us-east-1a/"+instA), "nr-1")
	if !errors.Is(err, ErrNoAutoScalingGroup) || !errors.Is(err, provider.ErrUnsupported) {
		t.Fatalf("err = %v, want ErrNoAutoScalingGroup wrapping provider.ErrUnsupported", err)
	}
	for _, want := range []string{"gpu-3", instA, "us-east-1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if n := len(f.callsOf("TerminateInstanceInAutoScalingGroup")); n != 0 {
		t.Errorf("TerminateInstanceInAutoScalingGroup called %d times, want 0", n)
	}
}

func TestReplaceStoppedInstanceOutsideGroupIsNotDone(t *testing.T) {
	// A stopped instance can start again; it is not evidence that an
	// earlier Replace happened.
	f := newFakeAWS(t)
	f.add(instA, fakeInstance{State: "stopped", Zone: "us-east-1a"})
	_, err := newTestProvider(t, f).Replace(t.Context(), gpuNode("gpu-3", "aws:///us-east-1a/"+instA), "nr-1")
	if !errors.Is(err, ErrNoAutoScalingGroup) {
		t.Fatalf("err = %v, want ErrNoAutoScalingGroup", err)
	}
}
