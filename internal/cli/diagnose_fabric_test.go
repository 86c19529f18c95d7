package cli

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuheal/gpuheal/internal/diagnose"
)

// TestDiagnoseFabric: the fabric's kernel-log findings come through --kmsg
// with the adapter in device and no GPU; a Fabric Manager log comes
// through --fm-log; both in one report.
func TestDiagnoseFabric(t *testing.T) {
	rep, code := diagnoseJSON(t, "", "--kmsg", "testdata/dmesg-mlx5-dpc-recovery.log", "--fm-log", "testdata/fabricmanager.log")
	if code != diagnose.ExitFatal {
		t.Fatalf("exit %d, want %d; findings %+v", code, diagnose.ExitFatal, rep.Findings)
	}
	type key struct{ source, code, device string }
	got := map[key]diagnose.Group{}
	for _, g := range rep.Findings {
		if g.GPU != "" {
			t.Errorf("fabric finding on a GPU: %+v", g)
		}
		got[key{g.Source, g.Code, g.Device}] = g
	}
	if g := got[key{"kmsg", "MLX5_FW_FATAL", "0004:01:00.1"}]; g.Count != 2 || g.Action != "reboot" {
		t.Errorf("firmware fatal group = %+v, want 2 findings, reboot", g)
	}
	if g := got[key{"kmsg", "MLX5_PCI_ERROR", "0004:01:00.0"}]; g.Count != 1 || g.Severity != "warning" {
		t.Errorf("PCI error group = %+v", g)
	}
	g := got[key{"fabricmanager", "FM_NVSWITCH_NONFATAL", "0000:86:00.0"}]
	if g.Count != 1 || g.Severity != "warning" || g.First.IsZero() {
		t.Errorf("Fabric Manager group = %+v, want one warning with its time", g)
	}
	if len(rep.Findings) != 4 {
		t.Errorf("%d groups, want 4: %+v", len(rep.Findings), rep.Findings)
	}

	out, code := runCLI(t, "", "diagnose", "--fm-log", "testdata/fabricmanager.log")
	if code != diagnose.ExitWarning || !strings.Contains(out, "FM_NVSWITCH_NONFATAL") || !strings.Contains(out, "0000:86:00.0") {
		t.Errorf("table of the Fabric Manager log alone: exit %d\n%s", code, out)
	}
	out, code = runCLI(t, "", "diagnose", "--fm-log", "testdata/nonexistent.log")
	if code != diagnose.ExitUnreadable || !strings.Contains(out, "testdata/nonexistent.log") {
		t.Errorf("missing Fabric Manager log: exit %d, %q", code, out)
	}
}

// TestDiagnoseSysfs: --sysfs reads the RDMA devices of a tree; a port down
// on a node whose instance type names its device count is fatal.
func TestDiagnoseSysfs(t *testing.T) {
	root := t.TempDir()
	for dev, state := range map[string]string{"rdmap16s27": "4: ACTIVE", "rdmap32s27": "1: DOWN"} {
		port := filepath.Join(root, "class", "infiniband", dev, "ports", "1")
		if err := os.MkdirAll(filepath.Join(port, "hw_counters"), 0o755); err != nil {
			t.Fatal(err)
		}
		for name, v := range map[string]string{"state": state, "phys_state": "5: LinkUp", "rate": "100 Gb/sec (4X EDR)", "link_layer": "Unknown"} {
			if err := os.WriteFile(filepath.Join(port, name), []byte(v+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	rep, code := diagnoseJSON(t, "", "--sysfs", root, "--instance-type", "p4d.24xlarge")
	if code != diagnose.ExitFatal {
		t.Fatalf("exit %d, want fatal; %+v", code, rep.Findings)
	}
	codes := map[string]string{}
	for _, g := range rep.Findings {
		codes[g.Code+" "+g.Device] = string(g.Severity)
	}
	want := map[string]string{"FABRIC_DEVICE_MISSING ": "fatal", "FABRIC_PORT_DOWN rdmap32s27": "fatal"}
	if !maps.Equal(codes, want) {
		t.Errorf("findings %v, want %v", codes, want)
	}
	if out, code := runCLI(t, "", "diagnose", "--sysfs", filepath.Join(root, "nonexistent")); code != diagnose.ExitUnreadable {
		t.Errorf("a missing tree: exit %d, %q", code, out)
	}
}
