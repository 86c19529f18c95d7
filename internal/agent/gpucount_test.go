package agent

import (
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/agent/kubecore"
)

func labelledNode(labels map[string]string) *kubecore.Node {
	return &kubecore.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: labels}}
}

func TestExpectedFromNode(t *testing.T) {
	for _, tc := range []struct {
		name    string
		labels  map[string]string
		want    int
		wantKey string
		wantErr string
	}{
		{"nothing", nil, 0, "", ""},
		{"gpu operator", map[string]string{v1alpha1.LabelNvidiaGPUCount: "8"}, 8, v1alpha1.LabelNvidiaGPUCount, ""},
		{"karpenter first", map[string]string{v1alpha1.LabelKarpenterInstanceGPUCount: "8", v1alpha1.LabelNvidiaGPUCount: "7",
			v1alpha1.LabelEKSInstanceGPUCount: "4"}, 8, v1alpha1.LabelKarpenterInstanceGPUCount, ""},
		{"eks before gpu operator", map[string]string{v1alpha1.LabelEKSInstanceGPUCount: "8", v1alpha1.LabelNvidiaGPUCount: "7"},
			8, v1alpha1.LabelEKSInstanceGPUCount, ""},
		// GFD counts again after a reboot: a dead GPU makes it say 7 on
		// an 8-GPU type, and the type's count must win.
		{"table over gpu operator", map[string]string{v1alpha1.LabelNvidiaGPUCount: "7", v1alpha1.LabelInstanceType: "p5.48xlarge"},
			8, v1alpha1.LabelInstanceType, ""},
		{"karpenter over gpu operator", map[string]string{v1alpha1.LabelKarpenterInstanceGPUCount: "8", v1alpha1.LabelNvidiaGPUCount: "7"},
			8, v1alpha1.LabelKarpenterInstanceGPUCount, ""},
		{"gpu operator over a smaller type", map[string]string{v1alpha1.LabelNvidiaGPUCount: "8", v1alpha1.LabelInstanceType: "g6e.12xlarge"},
			8, v1alpha1.LabelNvidiaGPUCount, ""},
		{"tie names the type", map[string]string{v1alpha1.LabelNvidiaGPUCount: "8", v1alpha1.LabelInstanceType: "p5.48xlarge"},
			8, v1alpha1.LabelInstanceType, ""},
		{"eks over table", map[string]string{v1alpha1.LabelEKSInstanceGPUCount: "8", v1alpha1.LabelInstanceType: "g6.48xlarge"},
			8, v1alpha1.LabelEKSInstanceGPUCount, ""},
		{"p4d", map[string]string{v1alpha1.LabelInstanceType: "p4d.24xlarge"}, 8, v1alpha1.LabelInstanceType, ""},
		{"p4de", map[string]string{v1alpha1.LabelInstanceType: "p4de.24xlarge"}, 8, v1alpha1.LabelInstanceType, ""},
		{"p5", map[string]string{v1alpha1.LabelInstanceType: "p5.48xlarge"}, 8, v1alpha1.LabelInstanceType, ""},
		{"p5 small", map[string]string{v1alpha1.LabelInstanceType: "p5.4xlarge"}, 1, v1alpha1.LabelInstanceType, ""},
		{"p5e", map[string]string{v1alpha1.LabelInstanceType: "p5e.48xlarge"}, 8, v1alpha1.LabelInstanceType, ""},
		{"p5en", map[string]string{v1alpha1.LabelInstanceType: "p5en.48xlarge"}, 8, v1alpha1.LabelInstanceType, ""},
		{"p6-b200", map[string]string{v1alpha1.LabelInstanceType: "p6-b200.48xlarge"}, 8, v1alpha1.LabelInstanceType, ""},
		{"p6-b300", map[string]string{v1alpha1.LabelInstanceType: "p6-b300.48xlarge"}, 8, v1alpha1.LabelInstanceType, ""},
		{"p6e-gb200", map[string]string{v1alpha1.LabelInstanceType: "p6e-gb200.36xlarge"}, 4, v1alpha1.LabelInstanceType, ""},
		{"g5 single", map[string]string{v1alpha1.LabelInstanceType: "g5.16xlarge"}, 1, v1alpha1.LabelInstanceType, ""},
		{"g6 quad", map[string]string{v1alpha1.LabelInstanceType: "g6.24xlarge"}, 4, v1alpha1.LabelInstanceType, ""},
		{"g6e eight", map[string]string{v1alpha1.LabelInstanceType: "g6e.48xlarge"}, 8, v1alpha1.LabelInstanceType, ""},
		{"type not in table", map[string]string{v1alpha1.LabelInstanceType: "m7i.large"}, 0, "", ""},
		{"bad label", map[string]string{v1alpha1.LabelNvidiaGPUCount: "eight"}, 0, "", `"eight"`},
		{"negative", map[string]string{v1alpha1.LabelKarpenterInstanceGPUCount: "-1"}, 0, "",
			v1alpha1.LabelKarpenterInstanceGPUCount},
		// A broken label is reported and the others still count.
		{"bad label beside the type", map[string]string{v1alpha1.LabelNvidiaGPUCount: "eight", v1alpha1.LabelInstanceType: "p5.48xlarge"},
			8, v1alpha1.LabelInstanceType, `"eight"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, key, err := expectedFromNode(labelledNode(tc.labels))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "n1") {
					t.Fatalf("err = %v, want one naming node n1 and %s", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if n != tc.want || key != tc.wantKey {
				t.Fatalf("expectedFromNode = %d, %q, %v; want %d, %q", n, key, err, tc.want, tc.wantKey)
			}
		})
	}
}

func TestKnownGPUNode(t *testing.T) {
	withCapacity := labelledNode(nil)
	withCapacity.Status.Capacity = map[string]resource.Quantity{v1alpha1.ResourceNvidiaGPU: resource.MustParse("8")}
	zeroCapacity := labelledNode(nil)
	zeroCapacity.Status.Capacity = map[string]resource.Quantity{v1alpha1.ResourceNvidiaGPU: resource.MustParse("0")}
	for _, tc := range []struct {
		name string
		node *kubecore.Node
		want bool
	}{
		{"plain node", labelledNode(map[string]string{v1alpha1.LabelInstanceType: "m7i.large"}), false},
		{"instance type", labelledNode(map[string]string{v1alpha1.LabelInstanceType: "p5.48xlarge"}), true},
		{"count label", labelledNode(map[string]string{v1alpha1.LabelNvidiaGPUCount: "8"}), true},
		{"count label 0", labelledNode(map[string]string{v1alpha1.LabelNvidiaGPUCount: "0"}), false},
		{"broken count label, gpu instance type", labelledNode(map[string]string{v1alpha1.LabelNvidiaGPUCount: "x",
			v1alpha1.LabelInstanceType: "g6.xlarge"}), true},
		{"gpu present", labelledNode(map[string]string{v1alpha1.LabelNvidiaGPUPresent: "true"}), true},
		{"capacity", withCapacity, true},
		{"capacity 0", zeroCapacity, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, why := knownGPUNode(tc.node); got != tc.want || (got && why == "") {
				t.Fatalf("knownGPUNode = %v (%q), want %v", got, why, tc.want)
			}
		})
	}
}

// Node labels are outside input: any value gives a count ≥ 0 or an error
// naming the label, never a panic or a negative count.
func FuzzExpectedFromNode(f *testing.F) {
	f.Add("8", "", "p5.48xlarge")
	f.Add("", "eight", "")
	f.Add("-1", "9999999999999999999999", "p6-b200.48xlarge")
	f.Fuzz(func(t *testing.T, karpenter, operator, instanceType string) {
		labels := map[string]string{v1alpha1.LabelInstanceType: instanceType}
		if karpenter != "" {
			labels[v1alpha1.LabelKarpenterInstanceGPUCount] = karpenter
		}
		if operator != "" {
			labels[v1alpha1.LabelNvidiaGPUCount] = operator
		}
		n, key, err := expectedFromNode(labelledNode(labels))
		switch {
		case err != nil && !strings.Contains(err.Error(), v1alpha1.LabelKarpenterInstanceGPUCount) &&
			!strings.Contains(err.Error(), v1alpha1.LabelNvidiaGPUCount):
			t.Fatalf("error %q names no label", err)
		case n < 0:
			t.Fatalf("count %d", n)
		case n > 0 && key == "":
			t.Fatalf("count %d from no key", n)
		case n > 0 && labels[key] == "" && !(key == v1alpha1.LabelInstanceType && instanceGPUs[instanceType] == n):
			t.Fatalf("count %d from %s, which is not on the node", n, key)
		}
		for _, k := range []string{v1alpha1.LabelKarpenterInstanceGPUCount, v1alpha1.LabelNvidiaGPUCount} {
			if c, err := strconv.Atoi(labels[k]); err == nil && c > n {
				t.Fatalf("count %d below %s=%d: the largest source must win", n, k, c)
			}
		}
		if c := instanceGPUs[instanceType]; c > n {
			t.Fatalf("count %d below the instance type's %d", n, c)
		}
	})
}
