package nodestatus

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/agent/kubecore/kubecorefake"
	"github.com/gpuheal/gpuheal/internal/analyzer"
)

func faultOn(gpu int32, pods ...string) *v1alpha1.GPUFaultReport {
	return &v1alpha1.GPUFaultReport{Time: metav1.NewTime(since), GPUs: []v1alpha1.GPUFault{{
		GPURef: v1alpha1.GPURef{Index: gpu, UUID: fmt.Sprintf("GPU-%08d-0000-0000-0000-000000000000", gpu), BusID: "00000000:3B:00.0"},
		Reason: "DBE", Action: "reset-gpu", Pods: pods, Sharing: v1alpha1.GPUSharingExclusive,
	}}}
}

// faultWrites lists the Node writes: "status", or "metadata " and the
// gpu-faults the patch sets ("" when it removes it).
func faultWrites(t *testing.T, reqs []kubecorefake.Request) []string {
	t.Helper()
	var out []string
	for _, r := range reqs {
		switch {
		case r.Method != http.MethodPatch:
		case strings.HasSuffix(r.Path, "/status"):
			out = append(out, "status")
		default:
			var patch struct {
				Metadata struct {
					Annotations map[string]*string `json:"annotations"`
				} `json:"metadata"`
			}
			if err := json.Unmarshal([]byte(r.Body), &patch); err != nil {
				t.Fatal(err)
			}
			v := ""
			if p := patch.Metadata.Annotations[v1alpha1.AnnotationGPUFaults]; p != nil {
				var rep v1alpha1.GPUFaultReport
				if err := json.Unmarshal([]byte(*p), &rep); err != nil {
					t.Fatalf("gpu-faults %q: %v", *p, err)
				}
				for _, g := range rep.GPUs {
					v += fmt.Sprintf("gpu%d%v", g.Index, g.Pods)
				}
			}
			out = append(out, "metadata "+v)
		}
	}
	return out
}

// The GPU fault report leads the condition turning unhealthy (the
// controller that sees the condition finds which pods to evict), is not
// written again while it says the same, follows a change of its pods,
// and trails the condition turning healthy, as the advice does.
func TestGPUFaultsLeadAndTrailTheCondition(t *testing.T) {
	p, api, clk := newTestConditions(t)
	p.Set([]analyzer.ConditionStatus{hardware(analyzer.StatusTrue, clk.Now())}, 8, 0)
	mustSync(t, p)

	start := len(api.Requests())
	if err := p.SetGPUFaults(faultOn(3, "ml/a")); err != nil {
		t.Fatal(err)
	}
	p.Set([]analyzer.ConditionStatus{hardware(analyzer.StatusFalse, clk.Now())}, 7, 0)
	mustSync(t, p)
	if d := cmp.Diff([]string{"metadata gpu3[ml/a]", "status"}, faultWrites(t, api.Requests()[start:])); d != "" {
		t.Errorf("writes when GPU 3 turns faulty (-want +got):\n%s", d)
	}

	start = len(api.Requests())
	later := faultOn(3, "ml/a")
	later.Time = metav1.NewTime(clk.Now()) // read again, the same answer
	if err := p.SetGPUFaults(later); err != nil {
		t.Fatal(err)
	}
	mustSync(t, p)
	if got := faultWrites(t, api.Requests()[start:]); len(got) != 0 {
		t.Errorf("an unchanged report was written again: %v", got)
	}

	start = len(api.Requests())
	if err := p.SetGPUFaults(faultOn(3, "ml/a", "ml/b")); err != nil {
		t.Fatal(err)
	}
	mustSync(t, p)
	if d := cmp.Diff([]string{"metadata gpu3[ml/a ml/b]"}, faultWrites(t, api.Requests()[start:])); d != "" {
		t.Errorf("writes when a pod joins (-want +got):\n%s", d)
	}

	start = len(api.Requests())
	if err := p.SetGPUFaults(nil); err != nil {
		t.Fatal(err)
	}
	p.Set([]analyzer.ConditionStatus{hardware(analyzer.StatusTrue, clk.Now())}, 8, 0)
	mustSync(t, p)
	if d := cmp.Diff([]string{"metadata gpu3[ml/a ml/b]", "status", "metadata "}, faultWrites(t, api.Requests()[start:])); d != "" {
		t.Errorf("writes when GPU 3 recovers (-want +got):\n%s", d)
	}
	if v, ok := api.Annotation(v1alpha1.AnnotationGPUFaults); ok {
		t.Errorf("a healthy node keeps gpu-faults %q", v)
	}
}

// A report past MaxGPUFaultsBytes drops its pods and says why: every GPU
// Unknown, which costs a whole-node drain.
func TestGPUFaultsOverTheCap(t *testing.T) {
	t.Parallel()
	pods := make([]string, 2000)
	for i := range pods {
		pods[i] = fmt.Sprintf("namespace-%d/pod-with-a-long-name-%d", i, i)
	}
	v, err := encodeFaults(*faultOn(3, pods...))
	if err != nil {
		t.Fatal(err)
	}
	var got v1alpha1.GPUFaultReport
	if err := json.Unmarshal([]byte(v), &got); err != nil {
		t.Fatal(err)
	}
	g := got.GPUs[0]
	if len(v) > MaxGPUFaultsBytes || g.Sharing != v1alpha1.GPUSharingUnknown || len(g.Pods) != 0 ||
		!strings.Contains(g.PodsError, "2000 pods: too many to list") || g.UUID == "" {
		t.Errorf("report over the cap = %d bytes, %+v; want the GPU kept, Unknown, no pods, the count in PodsError", len(v), g)
	}
}
