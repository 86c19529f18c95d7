package cli

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/gpuheal/gpuheal/internal/diagnose"
)

type jsonReport struct {
	Findings []diagnose.Group `json:"findings"`
	GPUs     []struct {
		PCIBusID string `json:"pciBusId"`
	} `json:"gpus"`
}

func diagnoseJSON(t *testing.T, stdin string, args ...string) (jsonReport, int) {
	t.Helper()
	out, code := runCLI(t, stdin, append([]string{"diagnose", "-o", "json"}, args...)...)
	var rep jsonReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("not JSON (%v):\n%s", err, out)
	}
	return rep, code
}

func TestDiagnoseFixtures(t *testing.T) {
	rep, code := diagnoseJSON(t, "", "--kmsg", "testdata/dmesg-T-xid119.log")
	if code != diagnose.ExitFatal || len(rep.Findings) != 1 {
		t.Fatalf("xid119: exit %d, findings %+v", code, rep.Findings)
	}
	g := rep.Findings[0]
	if g.Code != "XID119" || g.Xid != 119 || g.GPU != "0000:9b:00.0" || g.Severity != "fatal" || g.Action != "reset-gpu" || g.Count != 5 {
		t.Errorf("xid119 group = %+v", g)
	}
	if g.First.IsZero() || !g.Last.After(g.First) {
		t.Errorf("xid119 first %v last %v: want a span from the dmesg -T stamps", g.First, g.Last)
	}

	rep, code = diagnoseJSON(t, "", "--kmsg", "testdata/dmesg-iso-xid13-oom.log")
	if code != diagnose.ExitWarning {
		t.Errorf("xid13/oom exit %d, want %d", code, diagnose.ExitWarning)
	}
	counts := map[string]int{}
	for _, g := range rep.Findings {
		counts[g.Code] = g.Count
	}
	if counts["XID13"] != 16 || counts["XID43"] != 1 || counts["OOM_KILL"] == 0 {
		t.Errorf("xid13/oom counts = %v, want XID13:16 XID43:1 and OOM kills", counts)
	}
	// Worst first: the warnings before the info-level Xid 43.
	if last := rep.Findings[len(rep.Findings)-1]; last.Code != "XID43" {
		t.Errorf("last finding %s, want XID43 (info) last", last.Code)
	}

	rep, code = diagnoseJSON(t, "", "--kmsg", "testdata/devkmsg-raw.log")
	if code != diagnose.ExitClean || len(rep.Findings) != 0 {
		t.Errorf("devkmsg noise: exit %d, findings %+v", code, rep.Findings)
	}
}

func TestDiagnoseStdinAndSMI(t *testing.T) {
	log := "[  600.000123] NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"
	rep, code := diagnoseJSON(t, log, "--kmsg", "-", "--smi-xml", "testdata/synthetic-v100-v10-faulty.xml")
	if code != diagnose.ExitFatal {
		t.Fatalf("exit %d, want %d", code, diagnose.ExitFatal)
	}
	byCode := map[string]diagnose.Group{}
	for _, g := range rep.Findings {
		byCode[g.Code] = g
	}
	if g := byCode["XID79"]; g.GPU != "0000:18:00.0" || g.Action != "reboot" || g.Source != "kmsg" {
		t.Errorf("XID79 from stdin = %+v", g)
	}
	if g := byCode["DBE"]; g.Source != "smi" || g.GPU != "0000:1a:00.0" || g.Severity != "fatal" {
		t.Errorf("DBE from the XML = %+v", g)
	}
	if g := byCode["RETIRED_PAGES_PENDING"]; g.Action != "reset-gpu" {
		t.Errorf("pending retirement = %+v", g)
	}
	if len(rep.GPUs) != 2 {
		t.Errorf("gpus from the XML: %d, want 2", len(rep.GPUs))
	}
	if rep.Findings[0].Severity != "fatal" {
		t.Errorf("first finding %+v is not the worst", rep.Findings[0])
	}
}

func TestDiagnoseHealthyXMLAndTable(t *testing.T) {
	out, code := runCLI(t, "", "diagnose", "--smi-xml", "testdata/a10g.xml")
	if code != 0 || !strings.Contains(out, "no findings") {
		t.Fatalf("healthy A10G: exit %d, output %q", code, out)
	}
	out, code = runCLI(t, "", "diagnose", "--kmsg", "testdata/dmesg-T-xid119.log", "--color", "always")
	if code != diagnose.ExitFatal || !strings.Contains(out, "\x1b[31mfatal") || !strings.Contains(out, "XID119") {
		t.Fatalf("table: exit %d\n%s", code, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Errorf("table has %d lines, want header + one finding:\n%s", len(lines), out)
	}
}

func TestDiagnoseUnreadableInput(t *testing.T) {
	out, code := runCLI(t, "", "diagnose", "--kmsg", "testdata/nonexistent.log")
	if code != diagnose.ExitUnreadable || !strings.Contains(out, "testdata/nonexistent.log") {
		t.Errorf("missing file: exit %d, %q", code, out)
	}
	bad := t.TempDir() + "/broken.xml"
	if err := os.WriteFile(bad, []byte("<nvidia_smi_log>\n<gpu id=\"00000000:1A:00.0\">\n<temperature>"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code = runCLI(t, "", "diagnose", "--smi-xml", bad)
	if code != diagnose.ExitUnreadable || !strings.Contains(out, bad) || !strings.Contains(out, "line") {
		t.Errorf("truncated XML: exit %d, %q (want the file and a line)", code, out)
	}
	_, code = runCLI(t, "", "diagnose")
	if code != diagnose.ExitUnreadable {
		t.Errorf("no input: exit %d", code)
	}
}

// Garbage, overlong lines and invalid UTF-8 are skipped and counted; the
// Xid line after them is still found.
func TestDiagnoseSurvivesBadInput(t *testing.T) {
	var in strings.Builder
	in.WriteString("\x00\x01\x02\xff\xfe garbage\n")
	in.WriteString(strings.Repeat("A", 1<<20) + "\n")
	in.WriteString("[ 1.000000] caf\xe9 invalid utf8\n")
	in.WriteString("[ 2.000000] NVRM: Xid (PCI:0000:3b:00): 48, pid=1, name=python, An uncorrectable double bit error\n")
	rep, code := diagnoseJSON(t, in.String(), "--kmsg", "-")
	if code != diagnose.ExitFatal || len(rep.Findings) != 1 || rep.Findings[0].Code != "XID48" {
		t.Fatalf("exit %d findings %+v", code, rep.Findings)
	}
}

// A record user space wrote to /dev/kmsg (facility user) is not the
// driver's report, however well it imitates one.
func TestDiagnoseIgnoresUserSpaceRecords(t *testing.T) {
	in := "14,1,100,-;NVRM: Xid (PCI:0000:05:00): 79, pid=1, GPU has fallen off the bus.\n" +
		"<14>[  1.000000] NVRM: Xid (PCI:0000:05:00): 48, An uncorrectable double bit error\n"
	rep, code := diagnoseJSON(t, in, "--kmsg", "-")
	if len(rep.Findings) != 0 {
		t.Errorf("exit %d, findings %+v; want none", code, rep.Findings)
	}
}
