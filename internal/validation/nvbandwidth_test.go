package validation

import (
	"strings"
	"testing"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// nvbandwidth v0.4 device_to_device_memcpy_read_ce on 8× H100 (Azure
// ND96isr H100 v5).
func TestNVBandwidthCapture(t *testing.T) {
	out := capture(t, "nvbandwidth-d2d-read-h100-v0.4.txt")
	rep, err := ParseNVBandwidth(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Matrices) != 1 || len(rep.Matrices[0].Rows) != 8 || len(rep.Matrices[0].Cols) != 8 || rep.Sums["device_to_device_memcpy_read_ce"] != 20785.58 {
		t.Fatalf("report %+v", rep)
	}
	p, ok := rep.MinDeviceToDevice()
	if !ok || p.GBps != 370.26 || p.Row != 0 || p.Col != 6 {
		t.Fatalf("min %+v", p)
	}
	v := JudgeNVBandwidth(out, 300)
	wantOutcome(t, v, v1alpha1.CheckPassed, "370.3 GB/s", "GPU 0 -> GPU 6", "device_to_device_memcpy_read_ce")
	if !strings.Contains(v.Excerpt, "0       N/A    370.90") || !strings.Contains(v.Excerpt, "SUM device_to_device_memcpy_read_ce 20785.58") {
		t.Errorf("excerpt:\n%s", v.Excerpt)
	}
}

func TestNVBandwidthFailures(t *testing.T) {
	const name = "nvbandwidth-d2d-read-h100-v0.4.txt"
	slow := edit(t, name, "5    371.02    370.51    371.92    372.18    370.90       N/A    372.05    370.90",
		"5    371.02    370.51    371.92     41.07    370.90       N/A    372.05    370.90")
	v := JudgeNVBandwidth(slow, 300)
	wantOutcome(t, v, v1alpha1.CheckFailed, "41.07 GB/s (GPU 5 -> GPU 3", "below the floor of 300 GB/s")
	if !strings.Contains(v.Excerpt, "41.07") {
		t.Errorf("excerpt lacks the worst row:\n%s", v.Excerpt)
	}
	s := string(capture(t, name))
	truncated := s[:strings.Index(s, "6    371.41")]
	wantOutcome(t, JudgeNVBandwidth([]byte(truncated), 300), v1alpha1.CheckError, "truncated")
	short := edit(t, name, "370.90       N/A\n\nSUM", "370.90\n\nSUM")
	wantOutcome(t, JudgeNVBandwidth(short, 300), v1alpha1.CheckError, "row 7 has 7 values for 8 columns")
	hostOnly := strings.NewReplacer("device_to_device_memcpy_read_ce", "host_to_device_memcpy_ce").Replace(s)
	wantOutcome(t, JudgeNVBandwidth([]byte(hostOnly), 300), v1alpha1.CheckError, "no device-to-device figure")
	wantOutcome(t, JudgeNVBandwidth([]byte("CUDA error: no CUDA-capable device is detected\n"), 300), v1alpha1.CheckError, "not nvbandwidth output")
}
