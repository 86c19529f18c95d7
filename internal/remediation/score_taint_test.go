package remediation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/gpuheal/gpuheal/internal/score/tieraffinity"
)

func TestWithBronzeTaint(t *testing.T) {
	bronze := tieraffinity.BronzeTaint()
	other := corev1.Taint{Key: "example.com/dedicated", Value: "ml", Effect: corev1.TaintEffectNoSchedule}
	unhealthy := corev1.Taint{Key: "gpuheal.io/unhealthy", Effect: corev1.TaintEffectNoSchedule}
	handEdited := corev1.Taint{Key: tieraffinity.TaintKey, Value: "gold", Effect: corev1.TaintEffectNoSchedule}
	for _, tc := range []struct {
		name        string
		in          []corev1.Taint
		want        bool
		out         []corev1.Taint
		wantChanged bool
	}{
		{"none, not wanted", nil, false, nil, false},
		{"none, wanted", nil, true, []corev1.Taint{bronze}, true},
		{"others kept, in order", []corev1.Taint{other, unhealthy}, true, []corev1.Taint{other, unhealthy, bronze}, true},
		{"already there", []corev1.Taint{other, bronze}, true, []corev1.Taint{other, bronze}, false},
		{"removed, others kept", []corev1.Taint{bronze, other, unhealthy}, false, []corev1.Taint{other, unhealthy}, true},
		{"others only, not wanted", []corev1.Taint{other}, false, []corev1.Taint{other}, false},
		{"hand-edited value corrected", []corev1.Taint{handEdited, other}, true, []corev1.Taint{other, bronze}, true},
		{"duplicates made one", []corev1.Taint{bronze, other, bronze}, true, []corev1.Taint{other, bronze}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]corev1.Taint(nil), tc.in...)
			out, changed := withBronzeTaint(in, tc.want)
			if changed != tc.wantChanged {
				t.Errorf("changed %v, want %v", changed, tc.wantChanged)
			}
			if d := cmp.Diff(tc.out, out); d != "" {
				t.Errorf("taints (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.in, in); d != "" {
				t.Errorf("the input was modified (-before +after):\n%s", d)
			}
		})
	}
}
