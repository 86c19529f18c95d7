package smi

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

func TestParseRejectsNonXML(t *testing.T) {
	a100, err := os.ReadFile(filepath.Join("testdata", "a100-sxm4-v12.xml"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		input string
		want  []string // substrings the error must contain
	}{{
		name:  "truncated",
		input: string(a100[:len(a100)/2]),
		want: []string{
			fmt.Sprintf("parsing nvidia-smi XML at line %d,", bytes.Count(a100[:len(a100)/2], []byte("\n"))+1),
			"unexpected EOF",
		},
	}, {
		name:  "empty",
		input: "",
		want:  []string{"no <nvidia_smi_log> element"},
	}, {
		name:  "driver failure text",
		input: "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n",
		want:  []string{"no <nvidia_smi_log> element", `"NVIDIA-SMI has failed because it couldn't communicate`},
	}, {
		name:  "wrong root",
		input: `<?xml version="1.0"?><nvidia_smi_dump></nvidia_smi_dump>`,
		want:  []string{"line 1", "expected element type <nvidia_smi_log> but have <nvidia_smi_dump>"},
	}, {
		name:  "mismatched tags",
		input: "<nvidia_smi_log>\n<gpu>\n<uuid>GPU-1</gpu>\n</nvidia_smi_log>",
		want:  []string{"line 3", "element <uuid> closed by </gpu>"},
	}, {
		name:  "bad entity",
		input: "<nvidia_smi_log>\n<driver_version>&bogus;</driver_version>\n</nvidia_smi_log>",
		want:  []string{"line 2", "invalid character entity &bogus;"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap, err := Parse(strings.NewReader(tt.input))
			if err == nil {
				t.Fatalf("Parse succeeded with %d GPUs, want an error", len(snap.GPUs))
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestParseReadError(t *testing.T) {
	boom := errors.New("boom")
	_, err := Parse(iotest.ErrReader(boom))
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "reading nvidia-smi output") {
		t.Errorf("Parse(failing reader) = %v, want it to wrap %v", err, boom)
	}
}

// Garbage in single fields must cost those fields only: the parse succeeds,
// each bad field is nil with an error naming the GPU and the element, and
// everything else is read.
func TestGarbageFieldsBecomeQueryErrors(t *testing.T) {
	in := `<nvidia_smi_log>
	<driver_version>535.54.03</driver_version>
	<attached_gpus>two</attached_gpus>
	<gpu id="00000000:01:00.0">
		<uuid>GPU-a</uuid>
		<pci><pci_bus_id>00000000:01:00.0</pci_bus_id><replay_counter>-3</replay_counter></pci>
		<temperature><gpu_temp>27 C</gpu_temp></temperature>
	</gpu>
	<gpu id="zz:01:00.0">
		<uuid>GPU-b</uuid>
		<pci>
			<pci_bus_id>zz:01:00.0</pci_bus_id>
			<pci_gpu_link_info><link_widths><current_link_width>wide</current_link_width></link_widths></pci_gpu_link_info>
		</pci>
		<temperature><gpu_temp>2 7 C</gpu_temp></temperature>
		<gpu_power_readings><power_draw>67.03 W</power_draw></gpu_power_readings>
		<fb_memory_usage><total>81920 MiB</total><used>lots MiB</used></fb_memory_usage>
	</gpu>
</nvidia_smi_log>`
	snap, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := &gpu.NodeSnapshot{
		Backend: "smi", DriverVersion: "535.54.03", FoundGPUs: 2,
		Errors: []gpu.QueryError{{Query: "attached_gpus", Message: `node: attached_gpus: cannot parse "two" as a whole number`}},
		GPUs: []gpu.GPUSnapshot{{
			Index: 0, UUID: "GPU-a", PCIBusID: "0000:01:00.0", TemperatureCelsius: gpu.F64(27),
			Errors: []gpu.QueryError{{
				Query:   "pci/replay_counter",
				Message: `gpu 0 (0000:01:00.0): pci/replay_counter: cannot parse "-3" as a whole number`,
			}},
		}, {
			Index: 1, UUID: "GPU-b", PCIBusID: "zz:01:00.0",
			PowerDrawWatts: gpu.F64(67.03), MemoryTotalBytes: gpu.U64(81920 << 20),
			Errors: []gpu.QueryError{{
				Query:   "pci/pci_bus_id",
				Message: `gpu 1 (zz:01:00.0): pci/pci_bus_id: PCI bus id "zz:01:00.0": bad domain "zz"`,
			}, {
				Query:   "fb_memory_usage/used",
				Message: `gpu 1 (zz:01:00.0): fb_memory_usage/used: cannot parse "lots MiB" as a memory size`,
			}, {
				Query:   "temperature/gpu_temp",
				Message: `gpu 1 (zz:01:00.0): temperature/gpu_temp: cannot parse "2 7 C" as a number (unit "C")`,
			}, {
				Query:   "pci/pci_gpu_link_info/link_widths/current_link_width",
				Message: `gpu 1 (zz:01:00.0): pci/pci_gpu_link_info/link_widths/current_link_width: cannot parse "wide" as a whole number (unit "x")`,
			}},
		}},
	}
	if diff := cmp.Diff(want, snap, sortErrors); diff != "" {
		t.Errorf("Parse mismatch (-want +got):\n%s", diff)
	}
}

func TestImplausibleAttachedGPUs(t *testing.T) {
	snap, err := Parse(strings.NewReader(`<nvidia_smi_log><attached_gpus>99999999</attached_gpus></nvidia_smi_log>`))
	if err != nil {
		t.Fatal(err)
	}
	want := []gpu.QueryError{{Query: "attached_gpus", Message: "node: attached_gpus: 99999999 GPUs is not plausible"}}
	if diff := cmp.Diff(want, snap.Errors); diff != "" || snap.FoundGPUs != 0 {
		t.Errorf("FoundGPUs = %d, errors (-want +got):\n%s", snap.FoundGPUs, diff)
	}
}
