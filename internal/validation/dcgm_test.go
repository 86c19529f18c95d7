package validation

import (
	"strings"
	"testing"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// DCGM 4.4.1 on 8× B200 (DCGM issue #253): pcie's summary is Fail with a
// wrapped internal-error warning, while every GPU's line says Pass.
func TestDCGMText44PCIeFail(t *testing.T) {
	out := capture(t, "dcgm-text-4.4.1-b200-pcie-fail.txt")
	rep, err := ParseDCGM(out)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Format != DCGMFormatText || rep.Version != "4.4.1" || len(rep.Tests) != 3 {
		t.Fatalf("format %s version %s tests %+v", rep.Format, rep.Version, rep.Tests)
	}
	pcie := rep.Tests[2]
	if pcie.Category != "Integration" || pcie.Name != "pcie" || pcie.Status != DCGMFail || len(pcie.Results) != 8 {
		t.Fatalf("pcie = %+v", pcie)
	}
	if len(pcie.Warnings) != 1 || !strings.Contains(pcie.Warnings[0], "Syntax error: value, object or array expected.") ||
		!strings.Contains(pcie.Warnings[0], "Check DCGM and system logs for errors. Reset GPU. Restart DCGM.") {
		t.Errorf("wrapped warning not joined back: %q", pcie.Warnings)
	}
	if m := rep.Tests[1]; m.Name != "memory" || m.Status != DCGMPass || len(m.Results) != 8 || m.Results[7].GPU != "7" {
		t.Errorf("memory = %+v", m)
	}
	v := JudgeDCGM(out, 2)
	wantOutcome(t, v, v1alpha1.CheckFailed, "FAIL: pcie", "1 of 3 DCGM tests failed", "internal error")
	if v.Floor != "level 2: every test passes" || !strings.Contains(v.Excerpt, "| pcie") || strings.Contains(v.Excerpt, "| memory") {
		t.Errorf("floor %q, excerpt:\n%s", v.Floor, v.Excerpt)
	}
}

// DCGM 3.3.3 on 8× A100 80GB (p4de.24xlarge): level 2 passes; Stress is
// empty at that level.
func TestDCGMText33Pass(t *testing.T) {
	v := JudgeDCGM(capture(t, "dcgm-text-3.3.3-a100-pass.txt"), 2)
	wantOutcome(t, v, v1alpha1.CheckPassed, "PASS (11 tests)", "all 11 DCGM tests passed")
	rep, _ := ParseDCGM(capture(t, "dcgm-text-3.3.3-a100-pass.txt"))
	if rep.Version != "3.3.3" || rep.Tests[9].Name != "PCIe" || rep.Tests[9].Category != "Integration" {
		t.Errorf("report %+v", rep)
	}
}

// 3.x marks the GPUs in the result cell and adds a line per other result.
func TestDCGMText3xFailOnOneGPU(t *testing.T) {
	out := edit(t, "dcgm-text-3.3.3-a100-pass.txt",
		"| GPU Memory                | Pass - All                                     |",
		"| GPU Memory                | Pass - GPUs: 0, 1, 2, 4, 5, 6, 7               |\n"+
			"|                           | Fail - GPU: 3                                  |\n"+
			"| Warning                   | GPU 3 Thermal violations totaling 13.3 second  |\n"+
			"|                           | s started at 9.7 seconds into the test         |")
	v := JudgeDCGM(out, 2)
	wantOutcome(t, v, v1alpha1.CheckFailed, "FAIL: GPU Memory on GPU 3", "Thermal violations totaling 13.3 seconds started")
	if !strings.Contains(v.Excerpt, "Fail - GPU: 3") {
		t.Errorf("excerpt:\n%s", v.Excerpt)
	}
}

// An Error row before any test (a deployment failure) fails the node.
func TestDCGMTextErrorOutsideTests(t *testing.T) {
	out := edit(t, "dcgm-text-3.3.3-a100-pass.txt",
		"| Denylist                  | Pass                                           |",
		"| Error                     | GPU 3 has uncorrectable memory errors and row  |\n"+
			"|                           |  remappings are pending                        |")
	out = []byte(strings.Replace(string(out), "|-----  Deployment  --------+------------------------------------------------|\n", "|-----  Deployment  --------+------------------------------------------------|\n", 1))
	rep, err := ParseDCGM(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Errors) != 1 || rep.Errors[0] != "GPU 3 has uncorrectable memory errors and row remappings are pending" {
		t.Fatalf("errors %q", rep.Errors)
	}
	wantOutcome(t, JudgeDCGM(out, 2), v1alpha1.CheckFailed, "row remappings are pending")
}

func TestDCGMTextTruncated(t *testing.T) {
	s := string(capture(t, "dcgm-text-4.4.1-b200-pcie-fail.txt"))
	out := []byte(s[:strings.Index(s, "| pcie")])
	wantOutcome(t, JudgeDCGM(out, 2), v1alpha1.CheckError, "truncated: no closing border")
}

// Hand-written 3.x JSON (see testdata/README.md): GPU 3 fails memory,
// GPU 0 warns under power capping, skips do not fail.
func TestDCGMJSON3x(t *testing.T) {
	out := capture(t, "dcgm-json-3x-handwritten-gpu3-memory-fail.json")
	rep, err := ParseDCGM(out)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Format != DCGMFormatJSON3 || rep.Version != "3.3.9" || len(rep.Tests) != 9 {
		t.Fatalf("format %s version %s, %d tests", rep.Format, rep.Version, len(rep.Tests))
	}
	v := JudgeDCGM(out, 3)
	wantOutcome(t, v, v1alpha1.CheckFailed, "FAIL: GPU Memory on GPU 3", "volatile double-bit ECC", "warnings: Targeted Power on GPU 0")
	if !strings.Contains(v.Excerpt, "GPU 3: Fail: Detected 2 volatile double-bit ECC error(s) in GPU 3.") {
		t.Errorf("excerpt:\n%s", v.Excerpt)
	}
	// The same run with GPU 3's memory passing: Warn and Skip stay out of the outcome.
	passed := strings.Replace(string(out), `"status" : "Fail"`, `"status" : "Pass"`, 1)
	wantOutcome(t, JudgeDCGM([]byte(passed), 3), v1alpha1.CheckPassed, "PASS (9 tests)", "warnings: Targeted Power on GPU 0")
}

// Hand-written 4.x JSON around the real "diagnostic" object of DCGM
// issue #215.
func TestDCGMJSON4x(t *testing.T) {
	out := capture(t, "dcgm-json-4x-handwritten-pass.json")
	rep, err := ParseDCGM(out)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Format != DCGMFormatJSON4 || rep.Version != "4.1.1" || len(rep.Tests) != 4 || len(rep.Tests[2].Results) != 8 || rep.Tests[2].Results[5].GPU != "5" {
		t.Fatalf("report %+v", rep)
	}
	wantOutcome(t, JudgeDCGM(out, 3), v1alpha1.CheckPassed, "PASS (4 tests)")
	// GPU 5 fails the diagnostic: the summary says Fail and the result names it.
	s := string(out)
	d := strings.Index(s, `"name" : "diagnostic"`)
	i := d + strings.Index(s[d:], `"entity_id" : 5`)
	j := i + strings.Index(s[i:], `"Pass"`)
	failed := s[:j] + `"Fail"` + s[j+len(`"Pass"`):]
	failed = strings.Replace(failed, `"test_summary" : {
							"status" : "Pass"
						}
					}
				]
			},
			{
				"category" : "Integration"`, `"test_summary" : {
							"status" : "Fail"
						}
					}
				]
			},
			{
				"category" : "Integration"`, 1)
	wantOutcome(t, JudgeDCGM([]byte(failed), 3), v1alpha1.CheckFailed, "FAIL: diagnostic on GPU 5")
}

func TestDCGMJSONTruncatedAndForeign(t *testing.T) {
	out := capture(t, "dcgm-json-4x-handwritten-pass.json")
	wantOutcome(t, JudgeDCGM(out[:len(out)/2], 3), v1alpha1.CheckError, "DCGM JSON is truncated: it ends at line")
	wantOutcome(t, JudgeDCGM([]byte(`{"DCGM Diagnostic": {"test_categories": [{"category": "x", "tests": [{"name": "t", "results": [{"status": "Maybe"}]}]}]}}`), 3),
		v1alpha1.CheckError, `unknown status "Maybe"`)
	wantOutcome(t, JudgeDCGM([]byte("Error: unable to connect to host engine\n"), 3), v1alpha1.CheckError, "not DCGM diag output")
	wantOutcome(t, JudgeDCGM(nil, 3), v1alpha1.CheckError, "empty")
}
