package gpucheck

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/gpu"
)

// healthyGPU is one GPU with every reading the checks look at, all good.
func healthyGPU(i int) gpu.GPUSnapshot {
	ra := gpu.RecoveryNone
	return gpu.GPUSnapshot{
		Index: i, PCIBusID: "0000:1" + string(rune('0'+i)) + ":00.0",
		UtilizationGPUPercent: gpu.F64(0),
		ECCModeEnabled:        gpu.Bool(true),
		ECC:                   gpu.ECCCounts{VolatileUncorrected: gpu.U64(0)},
		RemappedRows:          &gpu.RemappedRows{},
		PCIe:                  gpu.PCIe{LinkGenCurrent: gpu.U64(5), LinkGenMax: gpu.U64(5), LinkWidthCurrent: gpu.U64(16), LinkWidthMax: gpu.U64(16)},
		NVLink:                []gpu.NVLink{{Link: 0, Active: true}, {Link: 1, Active: true}},
		RecoveryAction:        &ra,
		FabricState:           "Completed", FabricStatus: "Success",
	}
}

func healthyNode(n int) *gpu.NodeSnapshot {
	s := &gpu.NodeSnapshot{Time: time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC), ExpectedGPUs: n, FoundGPUs: n,
		DriverVersion: "570.133.20", KernelModuleVersion: "570.133.20", NVSwitch: true, FabricManager: "running"}
	for i := range n {
		s.GPUs = append(s.GPUs, healthyGPU(i))
	}
	return s
}

func check(t *testing.T, s *gpu.NodeSnapshot, name string) v1alpha1.AgentCheck {
	t.Helper()
	for _, c := range Judge(s) {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no check %s", name)
	return v1alpha1.AgentCheck{}
}

// Every check with a passing and a failing snapshot, and with the reading
// it needs unexposed: value, expected and message in words.
func TestChecks(t *testing.T) {
	for _, tc := range []struct {
		name, check string
		edit        func(*gpu.NodeSnapshot)
		want        v1alpha1.AgentCheck
	}{
		{"all present", v1alpha1.AgentCheckGPUsPresent, nil,
			v1alpha1.AgentCheck{Passed: true, Value: "8 GPUs", Expected: "8 GPUs"}},
		{"one fell off the bus", v1alpha1.AgentCheckGPUsPresent, func(s *gpu.NodeSnapshot) {
			s.GPUs[3] = gpu.GPUSnapshot{Index: 3, PCIBusID: "0000:13:00.0", Missing: true}
		},
			v1alpha1.AgentCheck{Value: "7 GPUs", Expected: "8 GPUs", Message: "GPU 3 (0000:13:00.0) does not answer: fallen off the bus or lost by the driver"}},
		{"one gone", v1alpha1.AgentCheckGPUsPresent, func(s *gpu.NodeSnapshot) { s.GPUs = s.GPUs[:7]; s.FoundGPUs = 7 },
			v1alpha1.AgentCheck{Value: "7 GPUs", Expected: "8 GPUs", Message: "7 of 8 GPUs found"}},
		{"none found, none expected", v1alpha1.AgentCheckGPUsPresent, func(s *gpu.NodeSnapshot) { s.GPUs, s.FoundGPUs, s.ExpectedGPUs = nil, 0, 0 },
			v1alpha1.AgentCheck{Value: "0 GPUs", Expected: "at least 1 GPU", Message: "no GPU answers"}},
		{"count unknown", v1alpha1.AgentCheckGPUsPresent, func(s *gpu.NodeSnapshot) { s.ExpectedGPUs = 0 },
			v1alpha1.AgentCheck{Passed: true, Value: "8 GPUs", Expected: "at least 1 GPU", Message: "expected count unknown (no --expected-gpus, GPU count label or known instance type): judged on the GPUs found"}},
		{"more than expected", v1alpha1.AgentCheckGPUsPresent, func(s *gpu.NodeSnapshot) { s.ExpectedGPUs = 4 },
			v1alpha1.AgentCheck{Passed: true, Value: "8 GPUs", Expected: "4 GPUs", Message: "more GPUs than expected"}},

		{"no ECC error", v1alpha1.AgentCheckNoVolatileECC, nil,
			v1alpha1.AgentCheck{Passed: true, Value: "0 uncorrected ECC errors", Expected: "0 uncorrected ECC errors"}},
		{"ECC errors", v1alpha1.AgentCheckNoVolatileECC, func(s *gpu.NodeSnapshot) {
			s.GPUs[2].ECC.VolatileUncorrected = gpu.U64(2)
			s.GPUs[5].ECC.VolatileUncorrected = gpu.U64(1)
		}, v1alpha1.AgentCheck{Value: "3 uncorrected ECC errors", Expected: "0 uncorrected ECC errors",
			Message: "volatile uncorrected ECC errors since the driver loaded: GPU 2 (0000:12:00.0): 2, GPU 5 (0000:15:00.0): 1"}},
		{"ECC off", v1alpha1.AgentCheckNoVolatileECC, func(s *gpu.NodeSnapshot) {
			for i := range s.GPUs {
				s.GPUs[i].ECCModeEnabled = gpu.Bool(false)
			}
		}, v1alpha1.AgentCheck{Passed: true, Expected: "0 uncorrected ECC errors", Message: "not exposed by the driver"}},

		{"no remap", v1alpha1.AgentCheckNoRowRemapPending, nil,
			v1alpha1.AgentCheck{Passed: true, Value: "none pending or failed", Expected: "none pending or failed"}},
		{"remap pending and failed", v1alpha1.AgentCheckNoRowRemapPending, func(s *gpu.NodeSnapshot) {
			s.GPUs[1].RemappedRows.Pending = true
			s.GPUs[4].RemappedRows.Failure = true
		}, v1alpha1.AgentCheck{Value: "2 GPUs pending or failed", Expected: "none pending or failed",
			Message: "GPU 1 (0000:11:00.0): row remap pending, GPU 4 (0000:14:00.0): row remapping failed"}},
		{"page retirement pending", v1alpha1.AgentCheckNoRowRemapPending, func(s *gpu.NodeSnapshot) {
			s.GPUs[0].RemappedRows, s.GPUs[0].RetiredPages = nil, &gpu.RetiredPages{DoubleBit: 1, Pending: true}
		}, v1alpha1.AgentCheck{Value: "1 GPU pending or failed", Expected: "none pending or failed",
			Message: "GPU 0 (0000:10:00.0): page retirement pending"}},
		{"remaps unexposed", v1alpha1.AgentCheckNoRowRemapPending, func(s *gpu.NodeSnapshot) {
			for i := range s.GPUs {
				s.GPUs[i].RemappedRows = nil
			}
		}, v1alpha1.AgentCheck{Passed: true, Expected: "none pending or failed", Message: "not exposed by the driver"}},

		{"links up", v1alpha1.AgentCheckNVLinksUp, nil,
			v1alpha1.AgentCheck{Passed: true, Value: "16 of 16 links up", Expected: "16 of 16 links up"}},
		{"a link down on NVSwitch", v1alpha1.AgentCheckNVLinksUp, func(s *gpu.NodeSnapshot) { s.GPUs[6].NVLink[1].Active = false },
			v1alpha1.AgentCheck{Value: "15 of 16 links up", Expected: "16 of 16 links up", Message: "GPU 6 (0000:16:00.0) link 1 down"}},
		{"a GPU's every link down on NVSwitch", v1alpha1.AgentCheckNVLinksUp, func(s *gpu.NodeSnapshot) {
			s.GPUs[6].NVLink[0].Active, s.GPUs[6].NVLink[1].Active = false, false
		}, v1alpha1.AgentCheck{Value: "14 of 16 links up", Expected: "16 of 16 links up", Message: "GPU 6 (0000:16:00.0) link 0, 1 down"}},
		{"PCIe board without a bridge", v1alpha1.AgentCheckNVLinksUp, func(s *gpu.NodeSnapshot) {
			s.NVSwitch = false
			for i := range s.GPUs {
				s.GPUs[i].NVLink[0].Active, s.GPUs[i].NVLink[1].Active = false, false
			}
		}, v1alpha1.AgentCheck{Passed: true, Value: "0 of 16 links up", Expected: "no link or every link up", Message: "no NVLink bridge: every link inactive"}},
		{"half a bridge", v1alpha1.AgentCheckNVLinksUp, func(s *gpu.NodeSnapshot) { s.NVSwitch = false; s.GPUs[0].NVLink[1].Active = false },
			v1alpha1.AgentCheck{Value: "15 of 16 links up", Expected: "16 of 16 links up", Message: "GPU 0 (0000:10:00.0) link 1 down"}},
		{"no NVLink", v1alpha1.AgentCheckNVLinksUp, func(s *gpu.NodeSnapshot) {
			for i := range s.GPUs {
				s.GPUs[i].NVLink = nil
			}
		}, v1alpha1.AgentCheck{Passed: true, Expected: "every link up", Message: "no NVLink on this node, or not exposed by the driver"}},

		{"fabric registered", v1alpha1.AgentCheckFabricHealthy, nil,
			v1alpha1.AgentCheck{Passed: true, Value: "Completed/Success", Expected: "Completed/Success"}},
		{"fabric manager stopped", v1alpha1.AgentCheckFabricHealthy, func(s *gpu.NodeSnapshot) { s.FabricManager = "stopped" },
			v1alpha1.AgentCheck{Value: "fabric manager stopped", Expected: "fabric manager running", Message: "nvidia-fabricmanager is stopped on an NVSwitch system: NVLink cannot be set up"}},
		{"registration in progress", v1alpha1.AgentCheckFabricHealthy, func(s *gpu.NodeSnapshot) { s.GPUs[2].FabricState, s.GPUs[2].FabricStatus = "In Progress", "" },
			v1alpha1.AgentCheck{Value: "1 GPU not registered", Expected: "Completed/Success", Message: "fabric registration GPU 2 (0000:12:00.0): In Progress/"}},
		{"product without fabric", v1alpha1.AgentCheckFabricHealthy, func(s *gpu.NodeSnapshot) {
			s.NVSwitch, s.FabricManager = false, ""
			for i := range s.GPUs {
				s.GPUs[i].FabricState, s.GPUs[i].FabricStatus = "", ""
			}
		}, v1alpha1.AgentCheck{Passed: true, Expected: "Completed/Success", Message: "no fabric on this product (no NVSwitch, no fabric state)"}},
		{"NVSwitch, fabric state unexposed", v1alpha1.AgentCheckFabricHealthy, func(s *gpu.NodeSnapshot) {
			for i := range s.GPUs {
				s.GPUs[i].FabricState, s.GPUs[i].FabricStatus = "", ""
			}
		}, v1alpha1.AgentCheck{Passed: true, Value: "fabric manager running", Expected: "Completed/Success", Message: "fabric registration not exposed by the driver"}},

		{"idle links", v1alpha1.AgentCheckPCIeLinkAtMax, nil,
			v1alpha1.AgentCheck{Passed: true, Expected: "maximum generation and width", Message: "idle: not judged"}},
		{"loaded links at max", v1alpha1.AgentCheckPCIeLinkAtMax, func(s *gpu.NodeSnapshot) {
			for i := range 6 {
				s.GPUs[i].UtilizationGPUPercent = gpu.F64(80)
			}
		}, v1alpha1.AgentCheck{Passed: true, Value: "6 GPUs at maximum under load", Expected: "maximum generation and width", Message: "2 idle GPUs not judged"}},
		{"loaded link narrowed", v1alpha1.AgentCheckPCIeLinkAtMax, func(s *gpu.NodeSnapshot) {
			s.GPUs[7].UtilizationGPUPercent, s.GPUs[7].PCIe.LinkWidthCurrent = gpu.F64(99), gpu.U64(8)
		}, v1alpha1.AgentCheck{Value: "1 GPU below maximum", Expected: "maximum generation and width",
			Message: "PCIe link below its maximum under load: GPU 7 (0000:17:00.0): gen 5/5 x8/x16 at 99% load"}},
		{"links unexposed", v1alpha1.AgentCheckPCIeLinkAtMax, func(s *gpu.NodeSnapshot) {
			for i := range s.GPUs {
				s.GPUs[i].PCIe = gpu.PCIe{}
			}
		}, v1alpha1.AgentCheck{Passed: true, Expected: "maximum generation and width", Message: "not exposed by the driver"}},
		{"utilization unexposed", v1alpha1.AgentCheckPCIeLinkAtMax, func(s *gpu.NodeSnapshot) {
			for i := range s.GPUs {
				s.GPUs[i].UtilizationGPUPercent = nil
			}
		}, v1alpha1.AgentCheck{Passed: true, Expected: "maximum generation and width", Message: "idle: not judged"}},

		{"no recovery action", v1alpha1.AgentCheckNoRecoveryPending, nil,
			v1alpha1.AgentCheck{Passed: true, Value: "None", Expected: "None"}},
		{"reboot asked", v1alpha1.AgentCheckNoRecoveryPending, func(s *gpu.NodeSnapshot) { ra := gpu.RecoveryNodeReboot; s.GPUs[4].RecoveryAction = &ra },
			v1alpha1.AgentCheck{Value: "1 GPU with an action pending", Expected: "None", Message: "the driver asks for GPU 4 (0000:14:00.0): Node Reboot"}},
		{"nvidia-smi reset status", v1alpha1.AgentCheckNoRecoveryPending, func(s *gpu.NodeSnapshot) {
			for i := range s.GPUs {
				s.GPUs[i].RecoveryAction, s.GPUs[i].ResetRequired = nil, gpu.Bool(i == 1)
			}
		}, v1alpha1.AgentCheck{Value: "1 GPU with an action pending", Expected: "None", Message: "the driver asks for GPU 1 (0000:11:00.0): GPU Reset"}},
		{"recovery unexposed", v1alpha1.AgentCheckNoRecoveryPending, func(s *gpu.NodeSnapshot) {
			for i := range s.GPUs {
				s.GPUs[i].RecoveryAction = nil
			}
		}, v1alpha1.AgentCheck{Passed: true, Expected: "None", Message: "not exposed by the driver"}},

		{"versions match", v1alpha1.AgentCheckDriverVersionsMatch, nil,
			v1alpha1.AgentCheck{Passed: true, Value: "kernel module 570.133.20", Expected: "driver 570.133.20"}},
		{"half-done upgrade", v1alpha1.AgentCheckDriverVersionsMatch, func(s *gpu.NodeSnapshot) { s.DriverVersion = "575.57.08" },
			v1alpha1.AgentCheck{Value: "kernel module 570.133.20", Expected: "driver 575.57.08", Message: "the kernel module and the user-space driver differ: a driver upgrade not finished by a reboot"}},
		{"module version unread", v1alpha1.AgentCheckDriverVersionsMatch, func(s *gpu.NodeSnapshot) { s.KernelModuleVersion = "" },
			v1alpha1.AgentCheck{Passed: true, Expected: "driver 570.133.20", Message: "driver or kernel module version not exposed by the driver"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := healthyNode(8)
			if tc.edit != nil {
				tc.edit(s)
			}
			tc.want.Name = tc.check
			if got := check(t, s, tc.check); got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// A GPU that does not answer is GPUsPresent's failure only: its empty
// readings fail no other check.
func TestMissingGPUFailsOnlyGPUsPresent(t *testing.T) {
	s := healthyNode(8)
	s.GPUs[3] = gpu.GPUSnapshot{Index: 3, PCIBusID: "0000:13:00.0", Missing: true}
	s.GPUs[3].UtilizationGPUPercent = gpu.F64(100)
	if f := failed(Judge(s)); len(f) != 1 || f[0] != v1alpha1.AgentCheckGPUsPresent {
		t.Errorf("fails %v, want only %s", f, v1alpha1.AgentCheckGPUsPresent)
	}
}

// TestNoSnapshotFailsEverything: when the GPUs cannot be read at all the
// report still names every check, each failed.
func TestNoSnapshotFailsEverything(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	r := Report(nil, "b00t", now)
	if !r.Time.Time.Equal(now) || r.BootID != "b00t" || len(r.Checks) != len(v1alpha1.AgentCheckNames) {
		t.Fatalf("report %+v", r)
	}
	for i, c := range r.Checks {
		if c.Name != v1alpha1.AgentCheckNames[i] || c.Passed || c.Message != "the GPUs could not be read" {
			t.Errorf("check %d: %+v", i, c)
		}
	}
}

// TestReport: the snapshot's time, the boot ID, and Equal ignoring time.
func TestReport(t *testing.T) {
	s := healthyNode(8)
	r := Report(s, "b00t", s.Time.Add(time.Hour))
	if !r.Time.Time.Equal(s.Time) || r.BootID != "b00t" || len(r.Checks) != 8 {
		t.Fatalf("report %+v", r)
	}
	later := Report(s, "b00t", s.Time.Add(2*time.Hour))
	later.Time.Time = later.Time.Add(time.Minute)
	if !Equal(r, later) {
		t.Error("the same checks at another time are not Equal")
	}
	if Equal(r, Report(s, "other", s.Time)) {
		t.Error("another boot is Equal")
	}
	s.GPUs[0].ECC.VolatileUncorrected = gpu.U64(1)
	if Equal(r, Report(s, "b00t", s.Time)) {
		t.Error("a failed check is Equal")
	}
}

// Text from the driver is cleaned of terminal sequences and bounded.
func TestTextIsCleanAndBounded(t *testing.T) {
	s := healthyNode(8)
	s.DriverVersion = "575\x1b]0;owned\x07.57"
	if c := check(t, s, v1alpha1.AgentCheckDriverVersionsMatch); c.Expected != "driver 575.57" {
		t.Errorf("expected %q, want the escape removed", c.Expected)
	}
	s = healthyNode(8)
	for i := range s.GPUs {
		s.GPUs[i].NVLink = make([]gpu.NVLink, 18)
		for l := range s.GPUs[i].NVLink {
			s.GPUs[i].NVLink[l] = gpu.NVLink{Link: l}
		}
		s.GPUs[i].PCIBusID = strings.Repeat("é", 10)
	}
	c := check(t, s, v1alpha1.AgentCheckNVLinksUp)
	if c.Passed || len(c.Message) > maxText || !strings.HasSuffix(c.Message, "…") || !utf8.ValidString(c.Message) {
		t.Errorf("every link down: %d bytes %q", len(c.Message), c.Message)
	}
}
