package smi

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

// oneGPU wraps the inside of a <gpu> block into a whole nvidia-smi document.
func oneGPU(body string) string {
	return `<?xml version="1.0" ?>
<nvidia_smi_log>
	<driver_version>535.54.03</driver_version>
	<cuda_version>12.2</cuda_version>
	<attached_gpus>1</attached_gpus>
	<gpu id="00000000:01:00.0">
		<pci><pci_bus_id>00000000:01:00.0</pci_bus_id></pci>
		` + body + `
	</gpu>
</nvidia_smi_log>`
}

func parseGPU(t *testing.T, body string) gpu.GPUSnapshot {
	t.Helper()
	snap, err := Parse(strings.NewReader(oneGPU(body)))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(snap.GPUs) != 1 {
		t.Fatalf("got %d GPUs, want 1", len(snap.GPUs))
	}
	return snap.GPUs[0]
}

// errMessages lists the messages of g's errors, for compact comparisons.
func errMessages(g gpu.GPUSnapshot) []string {
	var out []string
	for _, e := range g.Errors {
		out = append(out, e.Message)
	}
	return out
}

func TestValueForms(t *testing.T) {
	const prefix = "gpu 0 (0000:01:00.0): temperature/gpu_temp: "
	tests := []struct {
		raw     string
		want    *float64
		wantErr string // whole message; "" for none
	}{
		{raw: "27 C", want: gpu.F64(27)},
		{raw: "27C", want: gpu.F64(27)},
		{raw: " 27 ", want: gpu.F64(27)},
		{raw: "-5 C", want: gpu.F64(-5)},
		{raw: ""},
		{raw: "N/A"},
		{raw: "[N/A]"},
		{raw: "Not Supported"},
		{raw: "[Not Supported]"},
		{raw: "Requested functionality has been deprecated"},
		{raw: "Unknown Error", wantErr: prefix + `nvidia-smi reported "Unknown Error"`},
		{raw: "[Unknown Error]", wantErr: prefix + `nvidia-smi reported "Unknown Error"`},
		{raw: "GPU is lost", wantErr: prefix + `nvidia-smi reported "GPU is lost"`},
		{raw: "hot C", wantErr: prefix + `cannot parse "hot C" as a number (unit "C")`},
		{raw: "27 F", wantErr: prefix + `cannot parse "27 F" as a number (unit "C")`},
		{raw: "NaN C", wantErr: prefix + `cannot parse "NaN C" as a number (unit "C")`},
		{raw: "1e400 C", wantErr: prefix + `cannot parse "1e400 C" as a number (unit "C")`},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			// The sibling reading must survive whatever happens to gpu_temp.
			g := parseGPU(t, `<temperature><gpu_temp>`+tt.raw+`</gpu_temp><memory_temp>44 C</memory_temp></temperature>`)
			if diff := cmp.Diff(tt.want, g.TemperatureCelsius); diff != "" {
				t.Errorf("TemperatureCelsius (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(gpu.F64(44), g.MemoryTemperatureCelsius); diff != "" {
				t.Errorf("MemoryTemperatureCelsius (-want +got):\n%s", diff)
			}
			var want []string
			if tt.wantErr != "" {
				want = []string{tt.wantErr}
			}
			if diff := cmp.Diff(want, errMessages(g)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTimeoutErrorIsMarked(t *testing.T) {
	g := parseGPU(t, `<clocks><sm_clock>[Timeout]</sm_clock></clocks>`)
	want := []gpu.QueryError{{
		Query:   "clocks/sm_clock",
		Message: `gpu 0 (0000:01:00.0): clocks/sm_clock: nvidia-smi reported "Timeout"`,
		Timeout: true,
	}}
	if diff := cmp.Diff(want, g.Errors); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

func TestFlagForms(t *testing.T) {
	tests := []struct {
		raw     string
		want    *bool
		wantErr bool
	}{
		{raw: "Enabled", want: gpu.Bool(true)},
		{raw: "Disabled", want: gpu.Bool(false)},
		{raw: "Yes", want: gpu.Bool(true)},
		{raw: "No", want: gpu.Bool(false)},
		{raw: "N/A"},
		{raw: "Maybe", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			g := parseGPU(t, `<persistence_mode>`+tt.raw+`</persistence_mode>`)
			if diff := cmp.Diff(tt.want, g.PersistenceMode); diff != "" {
				t.Errorf("PersistenceMode (-want +got):\n%s", diff)
			}
			if got := len(g.Errors) > 0; got != tt.wantErr {
				t.Errorf("errors = %v, want an error: %v", g.Errors, tt.wantErr)
			}
		})
	}
}

func TestMemorySizes(t *testing.T) {
	tests := []struct {
		raw     string
		want    *uint64
		wantErr string
	}{
		{raw: "81920 MiB", want: gpu.U64(81920 << 20)},
		{raw: "80 GiB", want: gpu.U64(80 << 30)},
		{raw: "512 KiB", want: gpu.U64(512 << 10)},
		{raw: "12", want: gpu.U64(12 << 20)},
		{raw: "N/A"},
		{raw: "-1 MiB", wantErr: `cannot parse "-1 MiB" as a memory size`},
		{raw: "1.5 MiB", wantErr: `cannot parse "1.5 MiB" as a memory size`},
		{raw: "99999999999999999 MiB", wantErr: `memory size "99999999999999999 MiB" overflows 64 bits of bytes`},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			g := parseGPU(t, `<fb_memory_usage><total>`+tt.raw+`</total></fb_memory_usage>`)
			if diff := cmp.Diff(tt.want, g.MemoryTotalBytes); diff != "" {
				t.Errorf("MemoryTotalBytes (-want +got):\n%s", diff)
			}
			var want []string
			if tt.wantErr != "" {
				want = []string{"gpu 0 (0000:01:00.0): fb_memory_usage/total: " + tt.wantErr}
			}
			if diff := cmp.Diff(want, errMessages(g)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRecoveryActions(t *testing.T) {
	for _, a := range []gpu.RecoveryAction{
		gpu.RecoveryNone, gpu.RecoveryGPUReset, gpu.RecoveryNodeReboot, gpu.RecoveryDrainP2P, gpu.RecoveryDrainAndReset,
	} {
		t.Run(a.String(), func(t *testing.T) {
			g := parseGPU(t, `<gpu_recovery_action>`+a.String()+`</gpu_recovery_action>`)
			if diff := cmp.Diff(&a, g.RecoveryAction); diff != "" || len(g.Errors) > 0 {
				t.Errorf("RecoveryAction (-want +got):\n%s\nerrors: %v", diff, g.Errors)
			}
		})
	}
	t.Run("unknown", func(t *testing.T) {
		g := parseGPU(t, `<gpu_recovery_action>Reboot Soon</gpu_recovery_action>`)
		want := []string{`gpu 0 (0000:01:00.0): gpu_recovery_action: unknown recovery action "Reboot Soon"`}
		if g.RecoveryAction != nil {
			t.Errorf("RecoveryAction = %v, want nil", *g.RecoveryAction)
		}
		if diff := cmp.Diff(want, errMessages(g)); diff != "" {
			t.Errorf("errors (-want +got):\n%s", diff)
		}
	})
	t.Run("N/A", func(t *testing.T) {
		if g := parseGPU(t, `<gpu_recovery_action>N/A</gpu_recovery_action>`); g.RecoveryAction != nil || len(g.Errors) > 0 {
			t.Errorf("RecoveryAction = %v, errors %v; want nil, none", g.RecoveryAction, g.Errors)
		}
	})
}

func TestResetStatusAndFabric(t *testing.T) {
	g := parseGPU(t, `
		<gpu_reset_status>
			<reset_required>Yes</reset_required>
			<drain_and_reset_recommended>Yes</drain_and_reset_recommended>
		</gpu_reset_status>
		<fabric><state>Completed</state><status>Success</status></fabric>`)
	got := []any{g.ResetRequired, g.DrainAndResetRecommended, g.FabricState, g.FabricStatus}
	want := []any{gpu.Bool(true), gpu.Bool(true), "Completed", "Success"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reset status and fabric (-want +got):\n%s", diff)
	}
}
