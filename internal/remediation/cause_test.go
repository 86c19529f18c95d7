package remediation

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

func TestCauseOfReadsTheNode(t *testing.T) {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
			v1alpha1.LabelNvidiaDriverMajor: "580", v1alpha1.LabelNvidiaDriverMinor: "65", v1alpha1.LabelNvidiaDriverRev: "06",
			v1alpha1.LabelEKSNodegroupImage: "ami-0abc", v1alpha1.LabelInstanceType: "p5.48xlarge", v1alpha1.LabelZone: "us-east-1a",
		}},
		Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KernelVersion: "6.8.0-1021-aws", OSImage: "Ubuntu 22.04"}},
	}
	got := causeOf(n, v1alpha1.Trigger{Type: gpuCondition, Reason: "NvidiaXID79Error"})
	want := v1alpha1.Cause{Condition: gpuCondition + "/NvidiaXID79Error", DriverVersion: "580.65.06", KernelVersion: "6.8.0-1021-aws",
		Image: "ami-0abc", InstanceType: "p5.48xlarge", Zone: "us-east-1a"}
	if got != want {
		t.Errorf("causeOf = %+v, want %+v", got, want)
	}
	n.Labels[v1alpha1.LabelNvidiaDriverVersion] = "580.65.07"
	delete(n.Labels, v1alpha1.LabelEKSNodegroupImage)
	if got := causeOf(n, v1alpha1.Trigger{}); got.DriverVersion != "580.65.07" || got.Image != "Ubuntu 22.04" {
		t.Errorf("causeOf = %+v, want the full driver label and the OS image", got)
	}
}

func TestBreakersClosedAt(t *testing.T) {
	p := &v1alpha1.RemediationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	if got, err := breakersClosedAt(p); err != nil || !got.IsZero() {
		t.Errorf("no annotation: %v, %v; want zero", got, err)
	}
	p.Annotations = map[string]string{v1alpha1.AnnotationCauseBreakersClosedAt: "2026-12-01T12:00:00Z"}
	if got, err := breakersClosedAt(p); err != nil || !got.Equal(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)) {
		t.Errorf("got %v, %v", got, err)
	}
	p.Annotations[v1alpha1.AnnotationCauseBreakersClosedAt] = "yesterday"
	if _, err := breakersClosedAt(p); err == nil || !strings.Contains(err.Error(), v1alpha1.AnnotationCauseBreakersClosedAt) || !strings.Contains(err.Error(), "policy p") {
		t.Errorf("bad value: error %v, want one naming the policy and the annotation", err)
	}
}

// FuzzBreakersClosedAt: whatever a person writes in the annotation, the
// reader never panics, and a value it accepts closes breakers opened up to
// that time and no later.
func FuzzBreakersClosedAt(f *testing.F) {
	for _, s := range []string{"2026-12-01T12:00:00Z", "2026-12-01T12:00:00.5+01:00", "", "now", "9999-12-31T23:59:59Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		p := &v1alpha1.RemediationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: map[string]string{v1alpha1.AnnotationCauseBreakersClosedAt: v}}}
		at, err := breakersClosedAt(p)
		if err != nil {
			if !at.IsZero() {
				t.Fatalf("%q: error %v with time %v; a bad value must close nothing", v, err, at)
			}
			return
		}
		if b := (v1alpha1.CauseBreaker{OpenedAt: metav1.NewTime(at.Add(time.Second))}); !b.OpenedAt.After(at) {
			t.Fatalf("%q: a breaker opened after %v counts as closed", v, at)
		}
	})
}

// FuzzCauseID: causes that differ in any field have different ids, however
// their label values are made (a separator in a value must not make two
// causes one).
func FuzzCauseID(f *testing.F) {
	f.Add("AcceleratedHardwareReady/NvidiaXID79Error", "580.65.06", "6.8.0", "ami-0abc", "p5.48xlarge", "us-east-1a", "x")
	f.Add("a/b", "\"", "/", "", "", "", "")
	f.Fuzz(func(t *testing.T, cond, driver, kernel, image, itype, zone, other string) {
		a := v1alpha1.Cause{Condition: cond, DriverVersion: driver, KernelVersion: kernel, Image: image, InstanceType: itype, Zone: zone}
		for i, b := range []v1alpha1.Cause{
			{Condition: other, DriverVersion: driver, KernelVersion: kernel, Image: image, InstanceType: itype, Zone: zone},
			{Condition: cond, DriverVersion: other, KernelVersion: kernel, Image: image, InstanceType: itype, Zone: zone},
			{Condition: cond, DriverVersion: driver, KernelVersion: other, Image: image, InstanceType: itype, Zone: zone},
			{Condition: cond + driver, KernelVersion: kernel, Image: image, InstanceType: itype, Zone: zone},
			{Condition: cond, DriverVersion: driver, KernelVersion: kernel, Image: image, InstanceType: itype + zone},
		} {
			if a != b && causeID(a) == causeID(b) {
				t.Fatalf("variant %d: %+v and %+v share id %s", i, a, b, causeID(a))
			}
		}
		if id := causeID(a); len(id) != 10 {
			t.Fatalf("id %q, want 10 hex digits", id)
		}
	})
}
