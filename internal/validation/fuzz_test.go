package validation

import (
	"testing"
	"unicode/utf8"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// checkVerdict holds for any input: a known outcome, a bounded excerpt
// and value, valid UTF-8, and a message that says why.
func checkVerdict(t *testing.T, v Verdict) {
	t.Helper()
	switch v.Outcome {
	case v1alpha1.CheckPassed, v1alpha1.CheckFailed, v1alpha1.CheckError:
	default:
		t.Fatalf("outcome %q", v.Outcome)
	}
	if len(v.Excerpt) > MaxExcerpt || len(v.Value) > maxValue+8 || v.Message == "" {
		t.Fatalf("excerpt %d bytes, value %d bytes, message %q", len(v.Excerpt), len(v.Value), v.Message)
	}
	if !utf8.ValidString(v.Excerpt) || !utf8.ValidString(v.Message) || !utf8.ValidString(v.Value) {
		t.Fatalf("invalid UTF-8 in %+v", v)
	}
}

func seed(f *testing.F, names ...string) {
	for _, n := range names {
		f.Add(capture(f, n))
	}
}

func FuzzParseDCGM(f *testing.F) {
	seed(f, "dcgm-text-4.4.1-b200-pcie-fail.txt", "dcgm-text-3.3.3-a100-pass.txt",
		"dcgm-json-3x-handwritten-gpu3-memory-fail.json", "dcgm-json-4x-handwritten-pass.json")
	f.Fuzz(func(t *testing.T, out []byte) {
		v := JudgeDCGM(out, 3)
		checkVerdict(t, v)
		if rep, err := ParseDCGM(out); err == nil && len(rep.Tests) == 0 && len(rep.Errors) == 0 {
			t.Fatal("a report without tests or errors parsed")
		}
	})
}

func FuzzParseNCCL(f *testing.F) {
	seed(f, "nccl-allreduce-h100-16ranks.txt", "nccl-allgather-h200-mpirun-prefix.txt")
	f.Fuzz(func(t *testing.T, out []byte) {
		v := JudgeNCCL(out, 100)
		checkVerdict(t, v)
		if rep, err := ParseNCCL(out); err == nil && !rep.HasAvg {
			t.Fatal("parsed without an Avg bus bandwidth line")
		}
	})
}

func FuzzParseNVBandwidth(f *testing.F) {
	seed(f, "nvbandwidth-d2d-read-h100-v0.4.txt")
	f.Fuzz(func(t *testing.T, out []byte) {
		v := JudgeNVBandwidth(out, 300)
		checkVerdict(t, v)
		if v.Outcome == v1alpha1.CheckPassed {
			rep, err := ParseNVBandwidth(out)
			if p, ok := rep.MinDeviceToDevice(); err != nil || !ok || p.GBps < 300 {
				t.Fatalf("passed on %v %+v", err, p)
			}
		}
	})
}
