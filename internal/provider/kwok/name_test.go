package kwok

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestReplacementName(t *testing.T) {
	a := ReplacementName("gpu-0007", "inc-1")
	if a != ReplacementName("gpu-0007", "inc-1") {
		t.Fatal("same token gave different names")
	}
	if !strings.HasPrefix(a, "gpu-0007-r") || len(a) != len("gpu-0007-r")+6 {
		t.Errorf("ReplacementName = %q, want gpu-0007-r + 6 hex", a)
	}
	if b := ReplacementName("gpu-0007", "inc-2"); b == a {
		t.Errorf("two tokens gave the same name %q", a)
	}
	// A replacement's replacement does not grow the name.
	if c := ReplacementName(a, "inc-2"); c != ReplacementName("gpu-0007", "inc-2") {
		t.Errorf("ReplacementName(%q) = %q, want the suffix replaced", a, c)
	}
	long := strings.Repeat("a", 253)
	if got := ReplacementName(long, "x"); len(got) > 253 {
		t.Errorf("name of %d characters exceeds 253", len(got))
	}
}

func TestReplacesValueFitsALabel(t *testing.T) {
	if got := replacesValue("gpu-0007"); got != "gpu-0007" {
		t.Errorf("replacesValue(short) = %q", got)
	}
	long := strings.Repeat("n", 100)
	if got := replacesValue(long); len(got) > 63 || got != replacesValue(long) {
		t.Errorf("replacesValue(long) = %q (%d chars)", got, len(got))
	}
}

func TestOursAndProviderID(t *testing.T) {
	for key, want := range map[string]bool{
		"gpuheal.io/score": true, "agent.gpuheal.io/x": true, "nvidia.com/gpu.count": false,
		"notgpuheal.io/x": false, "gpuheal.io": false,
	} {
		if got := ours(key); got != want {
			t.Errorf("ours(%q) = %v, want %v", key, got, want)
		}
	}
	aws := &corev1.Node{Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1b/i-0123"}}
	if got := providerID(aws, "n-r000000"); !strings.HasPrefix(got, "aws:///us-east-1b/i-0") || len(got) != len("aws:///us-east-1b/i-0")+16 {
		t.Errorf("providerID from aws = %q", got)
	}
	plain := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
	if got := providerID(plain, "n-r000000"); got != "kwok://n-r000000" {
		t.Errorf("providerID = %q, want kwok://n-r000000", got)
	}
}
