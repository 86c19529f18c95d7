package smi

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

// reasonsXML builds a clocks_<kind>_reasons block with the named reasons
// Active and every other known reason Not Active.
func reasonsXML(kind string, active ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<clocks_%s_reasons>", kind)
	for _, name := range []string{
		"gpu_idle", "applications_clocks_setting", "sw_power_cap", "hw_slowdown", "hw_thermal_slowdown",
		"hw_power_brake_slowdown", "sync_boost", "sw_thermal_slowdown", "display_clocks_setting",
	} {
		v := "Not Active"
		for _, a := range active {
			if a == name {
				v = "Active"
			}
		}
		fmt.Fprintf(&b, "<clocks_%s_reason_%s>%s</clocks_%s_reason_%s>", kind, name, v, kind, name)
	}
	fmt.Fprintf(&b, "</clocks_%s_reasons>", kind)
	return b.String()
}

func TestClockReasonBits(t *testing.T) {
	bits := map[string]uint64{
		"gpu_idle": 0x1, "applications_clocks_setting": 0x2, "sw_power_cap": 0x4, "hw_slowdown": 0x8,
		"sync_boost": 0x10, "sw_thermal_slowdown": 0x20, "hw_thermal_slowdown": 0x40,
		"hw_power_brake_slowdown": 0x80, "display_clocks_setting": 0x100,
	}
	for _, kind := range []string{"event", "throttle"} {
		for name, bit := range bits {
			t.Run(kind+"/"+name, func(t *testing.T) {
				g := parseGPU(t, reasonsXML(kind, name))
				if diff := cmp.Diff(gpu.U64(bit), g.ClockEventReasons); diff != "" {
					t.Errorf("ClockEventReasons (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestClockReasonBlocks(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		want    *uint64
		wantErr string
	}{{
		name: "several active",
		body: reasonsXML("event", "sw_power_cap", "hw_power_brake_slowdown"),
		want: gpu.U64(gpu.ClockEventSwPowerCap | gpu.ClockEventHwPowerBrake),
	}, {
		name: "absent",
	}, {
		name: "whole block N/A",
		body: `<clocks_event_reasons>N/A</clocks_event_reasons>`,
	}, {
		name: "every reason N/A",
		body: strings.ReplaceAll(reasonsXML("event"), "Not Active", "N/A"),
	}, {
		name: "event block wins over throttle block",
		body: reasonsXML("throttle", "gpu_idle") + reasonsXML("event", "hw_slowdown"),
		want: gpu.U64(gpu.ClockEventHwSlowdown),
	}, {
		name: "singular display_clock_setting",
		body: `<clocks_event_reasons><clocks_event_reason_display_clock_setting>Active</clocks_event_reason_display_clock_setting></clocks_event_reasons>`,
		want: gpu.U64(gpu.ClockEventDisplayClock),
	}, {
		name: "unknown reason is skipped",
		body: `<clocks_event_reasons>
			<clocks_event_reason_gpu_idle>Not Active</clocks_event_reason_gpu_idle>
			<clocks_event_reason_future_thing>Active</clocks_event_reason_future_thing>
		</clocks_event_reasons>`,
		want: gpu.U64(0),
	}, {
		name: "a garbled reason keeps the others",
		body: strings.Replace(reasonsXML("event", "hw_slowdown"),
			"<clocks_event_reason_gpu_idle>Not Active", "<clocks_event_reason_gpu_idle>Sometimes", 1),
		want:    gpu.U64(gpu.ClockEventHwSlowdown),
		wantErr: `gpu 0 (0000:01:00.0): clocks_event_reasons/clocks_event_reason_gpu_idle: cannot parse "Sometimes" as Active/Not Active`,
	}, {
		name:    "whole block garbled",
		body:    `<clocks_event_reasons>0x8</clocks_event_reasons>`,
		wantErr: `gpu 0 (0000:01:00.0): clocks_event_reasons: unexpected text "0x8" where child elements belong`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := parseGPU(t, tt.body)
			if diff := cmp.Diff(tt.want, g.ClockEventReasons); diff != "" {
				t.Errorf("ClockEventReasons (-want +got):\n%s", diff)
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

func TestECCForms(t *testing.T) {
	tests := []struct {
		name string
		body string
		want gpu.ECCCounts
	}{{
		name: "DTD v13 splits SRAM uncorrectable",
		body: `<ecc_errors>
			<volatile>
				<sram_correctable>3</sram_correctable>
				<sram_uncorrectable_parity>1</sram_uncorrectable_parity>
				<sram_uncorrectable_secded>2</sram_uncorrectable_secded>
				<dram_correctable>4</dram_correctable>
				<dram_uncorrectable>5</dram_uncorrectable>
			</volatile>
			<aggregate>
				<sram_correctable>30</sram_correctable>
				<sram_uncorrectable_parity>10</sram_uncorrectable_parity>
				<sram_uncorrectable_secded>20</sram_uncorrectable_secded>
				<dram_correctable>40</dram_correctable>
				<dram_uncorrectable>50</dram_uncorrectable>
				<sram_threshold_exceeded>No</sram_threshold_exceeded>
			</aggregate>
		</ecc_errors>`,
		want: gpu.ECCCounts{
			VolatileCorrected: gpu.U64(7), VolatileUncorrected: gpu.U64(8),
			AggregateCorrected: gpu.U64(70), AggregateUncorrected: gpu.U64(80),
		},
	}, {
		name: "DTD v12 with a location N/A",
		body: `<ecc_errors><volatile>
			<sram_correctable>N/A</sram_correctable><sram_uncorrectable>N/A</sram_uncorrectable>
			<dram_correctable>9</dram_correctable><dram_uncorrectable>1</dram_uncorrectable>
		</volatile></ecc_errors>`,
		want: gpu.ECCCounts{VolatileCorrected: gpu.U64(9), VolatileUncorrected: gpu.U64(1)},
	}, {
		name: "whole block N/A",
		body: `<ecc_errors>N/A</ecc_errors>`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := parseGPU(t, tt.body)
			if diff := cmp.Diff(tt.want, g.ECC); diff != "" || len(g.Errors) > 0 {
				t.Errorf("ECC (-want +got):\n%s\nerrors: %v", diff, g.Errors)
			}
		})
	}
}

func TestRemappedRowsFailure(t *testing.T) {
	g := parseGPU(t, `<remapped_rows>
		<remapped_row_corr>3</remapped_row_corr>
		<remapped_row_unc>1</remapped_row_unc>
		<remapped_row_pending>Yes</remapped_row_pending>
		<remapped_row_failure>Yes</remapped_row_failure>
	</remapped_rows>`)
	want := &gpu.RemappedRows{Correctable: 3, Uncorrectable: 1, Pending: true, Failure: true}
	if diff := cmp.Diff(want, g.RemappedRows); diff != "" || len(g.Errors) > 0 {
		t.Errorf("RemappedRows (-want +got):\n%s\nerrors: %v", diff, g.Errors)
	}
}

func TestRetiredPagesPendingRetirement(t *testing.T) {
	g := parseGPU(t, `<retired_pages>
		<multiple_single_bit_retirement><retired_count>0</retired_count></multiple_single_bit_retirement>
		<double_bit_retirement><retired_count>1</retired_count></double_bit_retirement>
		<pending_blacklist>No</pending_blacklist>
		<pending_retirement>Yes</pending_retirement>
	</retired_pages>`)
	want := &gpu.RetiredPages{SingleBit: 0, DoubleBit: 1, Pending: true}
	if diff := cmp.Diff(want, g.RetiredPages); diff != "" || len(g.Errors) > 0 {
		t.Errorf("RetiredPages (-want +got):\n%s\nerrors: %v", diff, g.Errors)
	}
}

// Older drivers printed single_bit/double_bit per MIG device.
func TestMIGDeviceOldSchema(t *testing.T) {
	g := parseGPU(t, `<mig_mode><current_mig>Enabled</current_mig></mig_mode>
		<mig_devices><mig_device>
			<index>0</index>
			<gpu_instance_id>N/A</gpu_instance_id>
			<compute_instance_id>0</compute_instance_id>
			<ecc_error_count><volatile_count>
				<single_bit>1</single_bit><double_bit>2</double_bit>
			</volatile_count></ecc_error_count>
			<fb_memory_usage><total>4864 MiB</total><used>3 MiB</used></fb_memory_usage>
		</mig_device></mig_devices>`)
	want := []gpu.MIGDevice{{
		Index: 0, GPUInstanceID: -1, ComputeInstanceID: 0,
		MemoryUsedBytes: gpu.U64(3 << 20), MemoryTotalBytes: gpu.U64(4864 << 20),
		ECCCorrected: gpu.U64(1), ECCUncorrected: gpu.U64(2),
	}}
	if diff := cmp.Diff(want, g.MIGDevices); diff != "" || len(g.Errors) > 0 {
		t.Errorf("MIGDevices (-want +got):\n%s\nerrors: %v", diff, g.Errors)
	}
}
