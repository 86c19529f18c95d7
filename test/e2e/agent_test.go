//go:build integration

package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestAgentStandaloneOnceJSON(t *testing.T) {
	t.Parallel()
	agentBin := buildBinary(t, "github.com/gpuheal/gpuheal/cmd/gpuheal-agent", "gpuheal-agent")
	out, err := exec.Command(agentBin, "--standalone", "--once", "-o", "json", "--gpu-backend=sim", "--sim-gpus=4", "--sim-model=A100-SXM4-80GB").Output()
	if err != nil {
		t.Fatalf("agent --once: %v", err)
	}
	var snap struct {
		Backend   string `json:"backend"`
		FoundGPUs int    `json:"foundGPUs"`
		GPUs      []struct {
			PCIBusID string `json:"pciBusId"`
			Name     string `json:"name"`
		} `json:"gpus"`
	}
	if err := json.Unmarshal(out, &snap); err != nil {
		t.Fatalf("output is not one JSON snapshot: %v\n%s", err, out)
	}
	if snap.Backend != "sim" || snap.FoundGPUs != 4 || len(snap.GPUs) != 4 {
		t.Fatalf("backend %q, found %d, %d GPUs; want sim, 4, 4", snap.Backend, snap.FoundGPUs, len(snap.GPUs))
	}
	if !strings.Contains(snap.GPUs[0].Name, "A100") || len(snap.GPUs[0].PCIBusID) != len("0000:18:00.0") {
		t.Errorf("GPU 0 = %+v", snap.GPUs[0])
	}
}

// On a machine with no NVIDIA library and no nvidia-smi (this one, and CI),
// auto finds nothing: exit code 3 and a one-line reason naming both tries.
func TestAgentWithoutGPUExitsThree(t *testing.T) {
	t.Parallel()
	agentBin := buildBinary(t, "github.com/gpuheal/gpuheal/cmd/gpuheal-agent", "gpuheal-agent")
	if _, err := exec.LookPath("nvidia-smi"); err == nil {
		t.Skip("this machine has nvidia-smi; the no-GPU path cannot be shown here")
	}
	cmd := exec.Command(agentBin, "--standalone", "--once", "--gpu-backend=auto", "--nvidia-smi-path=/nonexistent/nvidia-smi")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("exit = %v, want exit status 3; stderr:\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "no NVIDIA GPU found: nvml: ") || !strings.Contains(last, "smi: ") {
		t.Fatalf("last stderr line = %q", last)
	}
}

func TestAgentRejectsBadFlagsWithTheirName(t *testing.T) {
	t.Parallel()
	agentBin := buildBinary(t, "github.com/gpuheal/gpuheal/cmd/gpuheal-agent", "gpuheal-agent")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--standalone", "--gpu-backend=cuda"}, `--gpu-backend "cuda"`},
		{[]string{"--standalone", "--interval=100ms"}, "--interval 100ms"},
		{[]string{"--once"}, "--once needs --standalone"},
		{[]string{"--gpu-backend=sim"}, "--node-name is required"},
	} {
		out, err := exec.Command(agentBin, tc.args...).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), tc.want) {
			t.Errorf("%v: exit %v, output %q; want exit 2 mentioning %q", tc.args, err, out, tc.want)
		}
	}
}

func TestAgentCheckConfig(t *testing.T) {
	t.Parallel()
	agentBin := buildBinary(t, "github.com/gpuheal/gpuheal/cmd/gpuheal-agent", "gpuheal-agent")
	dir := t.TempDir()
	good, bad := dir+"/good.yaml", dir+"/bad.yaml"
	writeFile(t, good, "rules:\n- name: hot\n  expr: has(gpu.temperatureCelsius) && gpu.temperatureCelsius > 90\n  severity: warning\n  condition: AcceleratedHardwareReady\n  reason: NvidiaHot\n  for: 5m\n")
	writeFile(t, bad, "rules:\n- name: broken\n  expr: gpu.temperatureCelsius >\n  severity: fatal\n  condition: AcceleratedHardwareReady\n  reason: X\n")
	if out, err := exec.Command(agentBin, "--check-config", good).CombinedOutput(); err != nil || !strings.Contains(string(out), "valid") {
		t.Errorf("good config: %v %s", err, out)
	}
	out, err := exec.Command(agentBin, "--check-config", bad).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "rule 0 (broken)") || !strings.Contains(string(out), "Syntax error") {
		t.Errorf("bad config: exit %v, output %s", err, out)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
