package cli

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/gpuheal/gpuheal/internal/diagnose"
)

const validationData = "../validation/testdata/"

// The captures in internal/validation/testdata, judged as the gate would.
func TestDiagnoseChecksOnCaptures(t *testing.T) {
	out, code := runCLI(t, "", "diagnose", "--dcgm-diag", validationData+"dcgm-text-4.4.1-b200-pcie-fail.txt", "--dcgm-level", "2")
	if code != diagnose.ExitFatal || !strings.Contains(out, "DCGM   Failed   FAIL: pcie") || !strings.Contains(out, "level 2: every test passes") ||
		!strings.Contains(out, "DCGM excerpt (") || !strings.Contains(out, "  | pcie") {
		t.Fatalf("dcgm: exit %d\n%s", code, out)
	}
	out, code = runCLI(t, "", "diagnose", "-o", "json", "--nccl", validationData+"nccl-allgather-h200-mpirun-prefix.txt",
		"--nvbandwidth", validationData+"nvbandwidth-d2d-read-h100-v0.4.txt", "--min-gbps", "100")
	var rep struct {
		Checks []struct {
			Kind, File, Outcome, Value, Floor, Message, Excerpt string
		} `json:"checks"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("not JSON (%v):\n%s", err, out)
	}
	if code != 0 || len(rep.Checks) != 2 {
		t.Fatalf("exit %d, %+v", code, rep.Checks)
	}
	if c := rep.Checks[0]; c.Kind != "NCCL" || c.Outcome != "Passed" || c.Value != "122.1 GB/s" || c.Floor != "100 GB/s" || !strings.Contains(c.Excerpt, "# Avg bus bandwidth    : 122.073") {
		t.Errorf("nccl %+v", c)
	}
	if c := rep.Checks[1]; c.Kind != "NVBandwidth" || c.Outcome != "Passed" || c.Value != "370.3 GB/s" || !strings.Contains(c.Message, "GPU 0 -> GPU 6") {
		t.Errorf("nvbandwidth %+v", c)
	}
	_, code = runCLI(t, "", "diagnose", "--nccl", validationData+"nccl-allreduce-h100-16ranks.txt", "--min-gbps", "350")
	if code != diagnose.ExitFatal {
		t.Errorf("70.7 GB/s against 350: exit %d, want %d", code, diagnose.ExitFatal)
	}
}

func TestDiagnoseChecksBadFiles(t *testing.T) {
	out, code := runCLI(t, "", "diagnose", "--nccl", "testdata/nonexistent.txt")
	if code != diagnose.ExitUnreadable || !strings.Contains(out, "nccl-tests output testdata/nonexistent.txt") {
		t.Errorf("missing: exit %d %q", code, out)
	}
	// The wrong tool's output: an Error naming the file, exit 4.
	out, code = runCLI(t, "", "diagnose", "--dcgm-diag", validationData+"nvbandwidth-d2d-read-h100-v0.4.txt")
	if code != diagnose.ExitUnreadable || !strings.Contains(out, "nvbandwidth-d2d-read-h100-v0.4.txt: not DCGM diag output") {
		t.Errorf("wrong format: exit %d\n%s", code, out)
	}
	// An ESC sequence in the output (it came from the node) never reaches the terminal.
	evil := t.TempDir() + "/evil.txt"
	b, err := os.ReadFile(validationData + "nccl-allreduce-h100-16ranks.txt")
	if err != nil {
		t.Fatal(err)
	}
	tampered := strings.Replace(string(b), "70.742 ", "70.742 \x1b]0;owned\x07\x1b[2J", 1)
	if err := os.WriteFile(evil, []byte(tampered), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ = runCLI(t, "", "diagnose", "--nccl", evil)
	if strings.ContainsRune(out, 0x1b) || !strings.Contains(out, "# Avg bus bandwidth    : 70.742") {
		t.Errorf("escape sequence printed:\n%q", out)
	}
	_, code = runCLI(t, "", "diagnose", "--nccl", evil, "--kmsg", "-")
	if code != diagnose.ExitUnreadable {
		t.Errorf("checks with --kmsg: exit %d", code)
	}
}
