package remediation

import (
	"strings"
	"testing"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// TestParseGPUFaults: the agent's report is read, and each kind of bad
// report is refused with an error that says what and where.
func TestParseGPUFaults(t *testing.T) {
	good := `{"time":"2026-12-01T12:00:00Z","gpus":[{"index":3,"uuid":"GPU-5a3f2e1b-8c4d-4e6f-9a0b-1c2d3e4f5a6b","busID":"00000000:3B:00.0",` +
		`"reason":"DBE","action":"reset-gpu","pods":["ml/train-0"],"sharing":"Exclusive","future":"ignored"}]}`
	rep, err := parseGPUFaults(good)
	if err != nil || len(rep.GPUs) != 1 || rep.GPUs[0].Pods[0] != "ml/train-0" || rep.GPUs[0].BusID != "00000000:3B:00.0" {
		t.Fatalf("parseGPUFaults(good) = %+v, %v", rep, err)
	}
	for _, tc := range []struct{ raw, want string }{
		{`[]`, "not a GPU fault report"},
		{`{"gpus":[]} {}`, "data after the JSON value"},
		{`{"gpus":[{"index":-1,"action":"reset-gpu","sharing":"Exclusive"}]}`, "gpus[0]: index -1 is negative"},
		{`{"gpus":[{"index":1,"action":"reset-gpu","sharing":"Exclusive"},{"index":1,"action":"reboot","sharing":"MIG"}]}`, "gpus[1]: GPU 1 listed twice"},
		{`{"gpus":[{"index":1,"action":"explode","sharing":"Exclusive"}]}`, "gpus[0]: action"},
		{`{"gpus":[{"index":1,"action":"reset-gpu","sharing":""}]}`, `sharing "" is none of`},
		{`{"gpus":[{"index":1,"action":"reset-gpu","sharing":"Exclusive","pods":["nonamespace"]}]}`, `pods[0] "nonamespace" is not namespace/name`},
		{`{"gpus":[{"index":1,"action":"reset-gpu","sharing":"Exclusive","pods":["a/b/c"]}]}`, `pods[0] "a/b/c"`},
		{`{"gpus":[{"index":1,"uuid":"` + strings.Repeat("x", 65) + `","action":"reset-gpu","sharing":"Exclusive"}]}`, "uuid or busID longer"},
		{`{"gpus":[` + strings.Repeat(`{"index":1,"action":"none","sharing":"Exclusive"},`, maxFaultGPUs) + `{"index":2,"action":"none","sharing":"Exclusive"}]}`, "GPUs, more than the 64 allowed"},
	} {
		_, err := parseGPUFaults(tc.raw)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), v1alpha1.AnnotationGPUFaults) {
			t.Errorf("parseGPUFaults(%.60q) error %v, want one naming the annotation and saying %q", tc.raw, err, tc.want)
		}
	}
}

// TestParseGPUReset: an answer needs a request ID and a known outcome.
func TestParseGPUReset(t *testing.T) {
	rep, err := parseGPUReset(`{"requestID":"n-1-reset-1","gpus":[{"index":3}],"outcome":"Failed","reason":"GPUInUse","startedAt":"2026-12-01T12:00:00Z"}`)
	if err != nil || rep.Reason != v1alpha1.ResetReasonInUse {
		t.Fatalf("parseGPUReset = %+v, %v", rep, err)
	}
	for _, tc := range []struct{ raw, want string }{
		{`{"requestID":"x","outcome":"Maybe"}`, `outcome "Maybe" is none of`},
		{`{"outcome":"Succeeded"}`, "no requestID"},
		{`"Succeeded"`, "not a GPU reset report"},
		{`{"requestID":"x","outcome":"Succeeded","message":"` + strings.Repeat("m", maxGPUResetBytes) + `"}`, "more than the 32768 allowed"},
	} {
		_, err := parseGPUReset(tc.raw)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), v1alpha1.AnnotationGPUReset) {
			t.Errorf("parseGPUReset(%.60q) error %v, want one naming the annotation and saying %q", tc.raw, err, tc.want)
		}
	}
}

// TestSameGPUs: an answer is about the requested GPUs when the indexes
// match and so do the UUID and bus ID the request has, in any order and
// case.
func TestSameGPUs(t *testing.T) {
	req := []v1alpha1.GPURef{{Index: 3, UUID: "GPU-aa", BusID: "00000000:3B:00.0"}, {Index: 1}}
	for _, tc := range []struct {
		got  []v1alpha1.GPURef
		want bool
	}{
		{[]v1alpha1.GPURef{{Index: 1, UUID: "GPU-x"}, {Index: 3, UUID: "gpu-AA", BusID: "00000000:3b:00.0"}}, true},
		{[]v1alpha1.GPURef{{Index: 3, UUID: "GPU-bb", BusID: "00000000:3B:00.0"}, {Index: 1}}, false},
		{[]v1alpha1.GPURef{{Index: 3, UUID: "GPU-aa", BusID: "00000000:3B:00.0"}}, false},
		{[]v1alpha1.GPURef{{Index: 3, UUID: "GPU-aa"}, {Index: 1}}, false},
	} {
		if got := sameGPUs(req, tc.got); got != tc.want {
			t.Errorf("sameGPUs(%v, %v) = %v, want %v", req, tc.got, got, tc.want)
		}
	}
}

// FuzzParseGPUFaults: any annotation is either refused or gives a report
// within the bounds the controller relies on.
func FuzzParseGPUFaults(f *testing.F) {
	f.Add(`{"gpus":[{"index":3,"uuid":"GPU-1","action":"reset-gpu","pods":["a/b"],"sharing":"Exclusive"}]}`)
	f.Add(`{"gpus":[{"index":0,"action":"replace","sharing":"MIG","podsError":"no socket"}]}`)
	f.Add(`{"gpus":null}`)
	f.Fuzz(func(t *testing.T, raw string) {
		rep, err := parseGPUFaults(raw)
		if err != nil {
			return
		}
		if len(rep.GPUs) > maxFaultGPUs {
			t.Fatalf("%d GPUs accepted", len(rep.GPUs))
		}
		for _, g := range rep.GPUs {
			if g.Index < 0 || len(g.Pods) > maxFaultPods || len(g.UUID) > 64 {
				t.Fatalf("out of bounds GPU accepted: %+v", g)
			}
			for _, p := range g.Pods {
				if strings.Count(p, "/") != 1 {
					t.Fatalf("pod %q accepted", p)
				}
			}
		}
	})
}

// FuzzParseGPUReset: any annotation is refused or has an ID and a known
// outcome.
func FuzzParseGPUReset(f *testing.F) {
	f.Add(`{"requestID":"n-reset-1","gpus":[{"index":3}],"outcome":"Succeeded","steps":[{"name":"reset","ok":true,"time":"2026-12-01T12:00:00.000000Z"}]}`)
	f.Add(`{"requestID":"n-reset-1","outcome":"Running"}`)
	f.Fuzz(func(t *testing.T, raw string) {
		rep, err := parseGPUReset(raw)
		if err != nil {
			return
		}
		if rep.RequestID == "" || (rep.Outcome != v1alpha1.GPUResetRunning && rep.Outcome != v1alpha1.GPUResetSucceeded && rep.Outcome != v1alpha1.GPUResetFailed) {
			t.Fatalf("accepted %+v", rep)
		}
	})
}
