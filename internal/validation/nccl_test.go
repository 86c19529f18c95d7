package validation

import (
	"strings"
	"testing"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// all_reduce_perf over 16× H100 on two GCP a3-mega nodes, plain output.
func TestNCCLPlainCapture(t *testing.T) {
	out := capture(t, "nccl-allreduce-h100-16ranks.txt")
	rep, err := ParseNCCL(out)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Ranks != 16 || rep.Devices[15] != "NVIDIA H100 80GB HBM3" || len(rep.Rows) != 31 || rep.AvgBusBW != 70.742 || !rep.HasOOB || !rep.OutOfBoundsOK {
		t.Fatalf("ranks %d devices %q rows %d avg %v oob %v/%v", rep.Ranks, rep.Devices, len(rep.Rows), rep.AvgBusBW, rep.HasOOB, rep.OutOfBoundsOK)
	}
	last := rep.Rows[30]
	if last.Size != 8589934592 || last.Type != "float" || last.Redop != "sum" || last.OutOfPlace.BusBW != 338.82 || last.InPlace.BusBW != 337.35 || last.InPlace.Wrong != 0 {
		t.Errorf("last row %+v", last)
	}
	v := JudgeNCCL(out, 50)
	wantOutcome(t, v, v1alpha1.CheckPassed, "70.74 GB/s", "peak busbw 338.8 GB/s at 8GB", "16 ranks")
	if !strings.Contains(v.Excerpt, "# Avg bus bandwidth    : 70.742") || !strings.Contains(v.Excerpt, "8589934592") {
		t.Errorf("excerpt:\n%s", v.Excerpt)
	}
	wantOutcome(t, JudgeNCCL(out, 350), v1alpha1.CheckFailed, "below the floor of 350 GB/s")
}

// all_gather_perf over 16× H200 on GKE through SkyPilot and mpirun: every
// line carries "(head, rank=0, pid=3808) [1,0]<stdout>:".
func TestNCCLRankPrefixedCapture(t *testing.T) {
	out := capture(t, "nccl-allgather-h200-mpirun-prefix.txt")
	rep, err := ParseNCCL(out)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Ranks != 16 || rep.Devices[0] != "NVIDIA H200" || len(rep.Rows) != 24 || rep.AvgBusBW != 122.073 || rep.Rows[0].Redop != "none" {
		t.Fatalf("ranks %d rows %d avg %v", rep.Ranks, len(rep.Rows), rep.AvgBusBW)
	}
	row, bw, _ := rep.Peak()
	if bw != 332.58 || row.Size != 8589934592 {
		t.Errorf("peak %v at %d", bw, row.Size)
	}
	wantOutcome(t, JudgeNCCL(out, 100), v1alpha1.CheckPassed, "122.1 GB/s")
	// srun -l's " 0: " prefix reads the same.
	srun := strings.ReplaceAll(string(out), "(head, rank=0, pid=3808) [1,0]<stdout>:", " 0: ")
	rep2, err := ParseNCCL([]byte(srun))
	if err != nil || len(rep2.Rows) != 24 || rep2.AvgBusBW != 122.073 || rep2.Ranks != 16 {
		t.Fatalf("srun prefix: %v %+v", err, rep2)
	}
}

func TestNCCLFailures(t *testing.T) {
	const name = "nccl-allreduce-h100-16ranks.txt"
	wrong := edit(t, name,
		"  1073741824     268435456     float     sum      -1   6759.0  158.86  297.86      0   6737.4  159.37  298.82      0",
		"  1073741824     268435456     float     sum      -1   6759.0  158.86  297.86      0   6737.4  159.37  298.82     12")
	v := JudgeNCCL(wrong, 50)
	wantOutcome(t, v, v1alpha1.CheckFailed, "wrong results at 1GB: 0 out-of-place, 12 in-place")
	if !strings.Contains(v.Excerpt, "298.82     12") {
		t.Errorf("excerpt lacks the wrong row:\n%s", v.Excerpt)
	}
	oob := edit(t, name, "# Out of bounds values : 0 OK", "# Out of bounds values : 7 FAILED")
	wantOutcome(t, JudgeNCCL(oob, 50), v1alpha1.CheckFailed, "7 out of bounds values")
	low := edit(t, name, "# Avg bus bandwidth    : 70.742", "# Avg bus bandwidth    : 12.5")
	wantOutcome(t, JudgeNCCL(low, 50), v1alpha1.CheckFailed, "12.5 GB/s is below the floor of 50 GB/s")

	s := string(capture(t, name))
	cutShort := s[:strings.Index(s, "  2147483648")]
	wantOutcome(t, JudgeNCCL([]byte(cutShort), 50), v1alpha1.CheckError, `no "# Avg bus bandwidth" line (28 table rows read)`)
	wantOutcome(t, JudgeNCCL([]byte("bash: all_reduce_perf: command not found\n"), 50), v1alpha1.CheckError, "not nccl-tests output")
	bad := edit(t, name, "# Avg bus bandwidth    : 70.742", "# Avg bus bandwidth    : fast")
	wantOutcome(t, JudgeNCCL(bad, 50), v1alpha1.CheckError, `line 56: Avg bus bandwidth "fast"`)
}
