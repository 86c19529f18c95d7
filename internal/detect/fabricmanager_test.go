package detect

import (
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/kmsg"
)

func newFM() *FabricManager { return NewFabricManager(FMOptions{Location: time.UTC}) }

// TestFabricManagerLines has one case per Fabric Manager line form; the
// sources are in testdata/README.md.
func TestFabricManagerLines(t *testing.T) {
	at := func(s string) time.Time {
		ts, err := time.ParseInLocation(fmStamp, s, time.UTC)
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	tests := []struct {
		name string
		line string
		want *dev // nil: not a finding
		t    string
	}{
		{"NVSwitch non-fatal (fixture capture)", "[Feb 27 2025 15:10:02] [ERROR] [tid 12727] detected NVSwitch non-fatal error 12028 on fid 0 on NVSwitch pci bus id 00000000:86:00.0 physical id 3 port 61",
			&dev{"FM_NVSWITCH_NONFATAL", "0000:86:00.0", warning, none}, "Feb 27 2025 15:10:02"},
		{"NVSwitch fatal (gpud)", "[Jul 23 2024 07:53:55] [ERROR] [tid 841] detected NVSwitch fatal error 20034 on fid 0 on NVSwitch pci bus id 00000000:86:00.0 physical id 3 port 33",
			&dev{"FM_NVSWITCH_FATAL", "0000:86:00.0", fatal, reboot}, "Jul 23 2024 07:53:55"},
		{"multicast team (gpud)", "[Sep 17 2024 06:01:46] [ERROR] [tid 1230079] failed to find the GPU handle 5410063385821516767 in the multicast team request setup 6130285411925746235.",
			&dev{"FM_MULTICAST_FAILED", "", fatal, reboot}, "Sep 17 2024 06:01:46"},
		{"topology mismatch (gpud's message, stamp written)", "[Jan 08 2025 10:00:00] [ERROR] [tid 2001] detected number of NVSwitches don't match with any supported system topology, aborting fabric manager",
			&dev{"FM_TOPOLOGY_MISMATCH", "", fatal, reboot}, "Jan 08 2025 10:00:00"},
		{"GPU NVLink fatal (OCI runbook capture)", "[Oct 13 2025 18:14:38] [ERROR] [tid 202] Fabric Manager detected GPU NVL Fatal error on :",
			&dev{"FM_GPU_NVLINK_FATAL", "", fatal, reboot}, "Oct 13 2025 18:14:38"},
		{"other error", "[Feb 05 2025 01:02:03] [ERROR] [tid 7] failed to open NVSwitch device, error: 3",
			&dev{"FM_ERROR", "", warning, none}, "Feb 05 2025 01:02:03"},
		{"fatal level", "[Feb  5 2025 01:02:03] [FATAL] [tid 7] something new",
			&dev{"FM_ERROR", "", warning, none}, "Feb 05 2025 01:02:03"},
		{"no NVSwitch to manage", "[Feb 05 2025 01:02:03] [ERROR] [tid 7] request to query NVSwitch device information from NVSwitch driver failed with error:WARNING Nothing to do [NV_WARN_NOTHING_TO_DO]", nil, ""},
		{"info (fixture capture)", "[Feb 27 2025 07:09:52] [INFO] [tid 1808] multicast group 1 is freed.", nil, ""},
		{"fatal words at info level", "[Feb 27 2025 07:09:52] [INFO] [tid 1808] detected NVSwitch fatal error 20034 on fid 0", nil, ""},
		{"warning level", "[Feb 27 2025 07:09:52] [WARNING] [tid 1808] failed to do something", nil, ""},
		{"continuation (fixture capture)", "Message payload details:Team release request: Team Handle:7be4cbdfbc4d0a3b Flags:0", nil, ""},
		{"continuation (OCI runbook capture)", "moduleId : 3", nil, ""},
		{"impossible date", "[Feb 30 2025 15:10:02] [ERROR] [tid 1] detected NVSwitch fatal error 20034", nil, ""},
		{"no closing bracket", "[Feb 27 2025 15:10:02 [ERROR] [tid 1] detected NVSwitch fatal error 20034", nil, ""},
		{"bad tid", "[Feb 27 2025 15:10:02] [ERROR] [tid x1] detected NVSwitch fatal error 20034", nil, ""},
		{"relayed by another program", "app: [Feb 27 2025 15:10:02] [ERROR] [tid 1] detected NVSwitch fatal error 20034", nil, ""},
		{"", "", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want []finding.Finding
			if tt.want != nil {
				want = append(want, finding.Finding{Source: "fabricmanager", Code: tt.want.code, Device: tt.want.device,
					Severity: tt.want.sev, Action: tt.want.act, Time: at(tt.t), Message: tt.line})
			}
			if diff := cmp.Diff(want, newFM().Detect(tt.line)); diff != "" {
				t.Errorf("Detect(%q) (-want +got):\n%s", tt.line, diff)
			}
		})
	}
}

// TestFabricManagerFixture reads the real log through the kernel log's
// reader, as a follower of the file would: 101 lines of team setups and
// one non-fatal NVSwitch error.
func TestFabricManagerFixture(t *testing.T) {
	f, err := os.Open("testdata/fabricmanager.log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd := kmsg.NewReader(f, kmsg.Options{})
	m := newFM()
	var got []finding.Finding
	for {
		rec, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = m.Append(got, rec.Message)
	}
	want := []finding.Finding{{Source: "fabricmanager", Code: "FM_NVSWITCH_NONFATAL", Device: "0000:86:00.0",
		Severity: warning, Action: none, Time: time.Date(2025, 2, 27, 15, 10, 2, 0, time.UTC),
		Message: "[Feb 27 2025 15:10:02] [ERROR] [tid 12727] detected NVSwitch non-fatal error 12028 on fid 0 on NVSwitch pci bus id 00000000:86:00.0 physical id 3 port 61"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestParseFMLine(t *testing.T) {
	l, ok := parseFMLine("[Feb 25 2025 13:59:45] [INFO] [tid 1803] Received an inband message:  Message header details: magic Id:adbc\r\n", time.UTC)
	want := fmLine{t: time.Date(2025, 2, 25, 13, 59, 45, 0, time.UTC), level: "INFO", tid: 1803,
		msg: "Received an inband message:  Message header details: magic Id:adbc"}
	if !ok || l != want {
		t.Errorf("got %+v, %v; want %+v", l, ok, want)
	}
	if l, ok := parseFMLine("[Feb 25 2025 13:59:45] [ERROR] no thread id", time.UTC); !ok || l.tid != 0 || l.msg != "no thread id" {
		t.Errorf("line without a tid: %+v, %v", l, ok)
	}
	loc := time.FixedZone("node", -5*3600)
	if l, _ := parseFMLine("[Feb 25 2025 13:59:45] [ERROR] [tid 1] x", loc); !l.t.Equal(time.Date(2025, 2, 25, 18, 59, 45, 0, time.UTC)) {
		t.Errorf("stamp in the node's zone: %v", l.t)
	}
}

func TestFabricManagerNoiseAllocatesNothing(t *testing.T) {
	m := newFM()
	line := "[Feb 27 2025 07:09:52] [INFO] [tid 1808] multicast group 1 is freed."
	if a := testing.AllocsPerRun(100, func() { _ = m.Detect(line) }); a != 0 {
		t.Errorf("Detect of an INFO line: %v allocs, want 0", a)
	}
}
