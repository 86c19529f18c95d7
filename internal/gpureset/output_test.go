package gpureset

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
)

// Every fixture (testdata/README.md names its source) parses to its reason.
func TestParseOutputFixtures(t *testing.T) {
	cases := map[string]struct {
		failed bool
		reason string
		says   string
	}{
		"success.txt":           {false, "", ""},
		"in-use-client.txt":     {true, v1alpha1.ResetReasonInUse, "In use by another client"},
		"in-use-process.txt":    {true, v1alpha1.ResetReasonInUse, "in use by another process"},
		"in-use-mig-parted.txt": {true, v1alpha1.ResetReasonInUse, "00000000:00:06.0"},
		"primary.txt":           {true, v1alpha1.ResetReasonPrimaryGPU, "primary GPU"},
		"not-supported.txt":     {true, v1alpha1.ResetReasonNotSupported, "Not Supported"},
		"no-devices.txt":        {true, v1alpha1.ResetReasonNotFound, "No devices"},
		"gpu-lost.txt":          {true, v1alpha1.ResetReasonNotFound, "GPU is lost"},
		"unknown-error.txt":     {true, v1alpha1.ResetReasonError, "could not be reset"},
	}
	files, err := filepath.Glob("testdata/reset/*.txt")
	if err != nil || len(files) != len(cases) {
		t.Fatalf("fixtures %v (%v); want the %d the table names", files, err, len(cases))
	}
	for _, f := range files {
		name := filepath.Base(f)
		c, ok := cases[name]
		if !ok {
			t.Errorf("%s: no expected reason in the table", name)
			continue
		}
		out, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		reason, msg := ParseOutput(string(out), c.failed)
		if reason != c.reason || !strings.Contains(msg, c.says) {
			t.Errorf("%s: reason %q message %q; want %q with %q", name, reason, msg, c.reason, c.says)
		}
	}
}

// The success line with a non-zero exit, or exit 0 without it, is no
// success; empty output says so; a huge output is cut.
func TestParseOutputEdges(t *testing.T) {
	if r, _ := ParseOutput("GPU 00000000:1A:00.0 was successfully reset.\n", true); r != v1alpha1.ResetReasonError {
		t.Errorf("success text with a failed exit: %q, want ResetError", r)
	}
	if r, m := ParseOutput("", false); r != v1alpha1.ResetReasonError || !strings.Contains(m, "without saying") {
		t.Errorf("empty output, exit 0: %q %q", r, m)
	}
	if r, m := ParseOutput("", true); r != v1alpha1.ResetReasonError || !strings.Contains(m, "nothing") {
		t.Errorf("empty output, failed: %q %q", r, m)
	}
	r, m := ParseOutput(strings.Repeat("x", 10*MaxOutput)+"\nIn use by another client", true)
	if r != v1alpha1.ResetReasonError || len(m) > maxMessage {
		t.Errorf("oversized output: reason %q, message of %d bytes; want ResetError (the tail is past the cap), at most %d", r, len(m), maxMessage)
	}
}

func FuzzParseOutput(f *testing.F) {
	files, _ := filepath.Glob("testdata/reset/*.txt")
	for _, p := range files {
		b, _ := os.ReadFile(p)
		f.Add(string(b), true)
	}
	f.Fuzz(func(t *testing.T, out string, failed bool) {
		reason, msg := ParseOutput(out, failed)
		if len(msg) > maxMessage {
			t.Fatalf("message of %d bytes", len(msg))
		}
		if reason == "" && (failed || msg != "") {
			t.Fatalf("success for failed=%v message %q", failed, msg)
		}
	})
}

func FuzzParseComputeApps(f *testing.F) {
	f.Add("1234, 00000000:1B:00.0\n99, 00000000:3B:00.0\n")
	f.Add("No running processes found\n")
	f.Fuzz(func(t *testing.T, out string) {
		pids, err := ParseComputeApps(out, "0000:1b:00.0")
		if err == nil {
			for _, p := range pids {
				if p <= 0 {
					t.Fatalf("pid %d", p)
				}
			}
		}
	})
}

func TestParseComputeApps(t *testing.T) {
	pids, err := ParseComputeApps("1234, 00000000:1B:00.0\n99, 00000000:3B:00.0\n77, 00000000:1B:00.0\n", "0000:1b:00.0")
	if err != nil || len(pids) != 2 || pids[0] != 1234 || pids[1] != 77 {
		t.Errorf("pids %v, %v; want [1234 77]", pids, err)
	}
	if pids, err := ParseComputeApps("No running processes found\n", "0000:1b:00.0"); err != nil || len(pids) != 0 {
		t.Errorf("no processes: %v %v", pids, err)
	}
	if _, err := ParseComputeApps("abc, 00000000:1B:00.0\n", "0000:1b:00.0"); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("bad pid: %v, want an error naming line 1", err)
	}
}
