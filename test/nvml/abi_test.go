//go:build integration

package nvml

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/clock"

	"github.com/gpuheal/gpuheal/internal/analyzer"
	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/gpu"
)

// What stub/device.c answers, normalized as the agent reports it.
var (
	wantBusIDs = []string{"0000:1b:00.0", "0000:43:00.0", "0000:52:00.0", "0000:61:00.0",
		"0000:9d:00.0", "0000:c3:00.0", "0000:d1:00.0", "0000:df:00.0"}
	wantUUIDs = []string{
		"GPU-f3a3c571-7476-4899-b5a3-adb3254a9493", "GPU-649dda6e-b49c-43dc-acbc-408cc5521660",
		"GPU-81c1e7ff-6efa-4d5b-9988-5afcbb61a9cd", "GPU-1f0e4b4a-886c-4a30-9c26-ffa8ccce240c",
		"GPU-436f40f2-74b8-4e87-bc99-1c531484f407", "GPU-a5c2948b-eed6-4fbb-a8a8-2a070c425b3f",
		"GPU-3acdf616-55d9-4c6e-b459-294ef273b44c", "GPU-fcc1b543-c49c-465b-96c2-703c4f353a13",
	}
)

const (
	lostGPU = 3 // STUB_LOST_GPU
	xidGPU  = 5 // STUB_XID_GPU
	mib     = 1 << 20
)

func TestAgentOnStubNVML(t *testing.T) {
	libs := stubLibraries(t)
	emptyRoot := t.TempDir()
	for _, tc := range []struct {
		name  string
		lib   string
		mode  string
		how   discovery
		args  []string
		check func(t *testing.T, r onceResult)
	}{
		{"ok through LD_LIBRARY_PATH", libs.full, "ok", viaLoaderPath, nil, healthyNode("550.90.07", "12.4", true)},
		{"ok through --driver-root", libs.full, "ok", viaDriverRoot, nil, healthyNode("550.90.07", "12.4", true)},
		{"lost GPU", libs.full, "lost-gpu", viaDriverRoot, nil, lostGPUNode},
		{"no driver", libs.full, "no-driver", viaLoaderPath, nil,
			noGPU("no NVIDIA GPU found: nvml: initializing NVML: Init: Driver Not Loaded")},
		{"driver root without the library", libs.full, "ok", viaLoaderPath, []string{"--driver-root=" + emptyRoot},
			noGPU("no NVIDIA GPU found: nvml: no libnvidia-ml.so.1 under driver root " + emptyRoot +
				" (searched " + multiarchDir() + ", usr/lib64, usr/lib, lib64, lib and the root itself)")},
		// R470 lacks functions the agent calls on newer drivers; calling
		// one would end the agent (exit 127, "symbol lookup error").
		{"old driver (R470 symbols)", libs.r470, "old-driver", viaDriverRoot, nil, healthyNode("470.256.02", "11.4", false)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, runOnce(t, tc.lib, tc.mode, tc.how, tc.args...))
		})
	}
}

// healthyNode checks the eight idle H100s; modern says whether the
// driver has the post-R470 fabric info and recovery-action field.
func healthyNode(driver, cuda string, modern bool) func(*testing.T, onceResult) {
	return func(t *testing.T, r onceResult) {
		s := mustSnapshot(t, r)
		if s.Backend != "nvml" || s.DriverVersion != driver || s.CUDADriverVersion != cuda || s.FoundGPUs != 8 || len(s.GPUs) != 8 {
			t.Fatalf("backend %q driver %q cuda %q, %d found of %d; want nvml %s %s, 8 of 8\nstderr:\n%s",
				s.Backend, s.DriverVersion, s.CUDADriverVersion, s.FoundGPUs, len(s.GPUs), driver, cuda, r.stderr)
		}
		for i, g := range s.GPUs {
			checkIdentity(t, i, g)
			var bad []string
			expect := func(what string, ok bool) {
				if !ok {
					bad = append(bad, what)
				}
			}
			expect("not missing, no errors", !g.Missing && len(g.Errors) == 0)
			expect("memory 81559 MiB", eq(g.MemoryTotalBytes, 81559*mib) && eq(g.MemoryUsedBytes, mib))
			expect("temperature", feq(g.TemperatureCelsius, float64(30+i)) && feq(g.MemoryTemperatureCelsius, float64(40+i)))
			expect("power", feq(g.PowerDrawWatts, float64(70+i)) && feq(g.PowerLimitWatts, 700))
			expect("clocks", feq(g.SMClockMHz, 1980) && feq(g.MemoryClockMHz, 2619))
			// Idle, from nvmlDeviceGetCurrentClocksEventReasons or, on R470,
			// from its older name.
			expect("clock event reasons GPU idle", eq(g.ClockEventReasons, 1))
			expect("ECC on, no errors", g.ECCModeEnabled != nil && *g.ECCModeEnabled &&
				eq(g.ECC.VolatileUncorrected, 0) && eq(g.ECC.AggregateCorrected, 0))
			expect("no retired pages (Hopper remaps rows)", g.RetiredPages == nil)
			expect("no remapped rows", g.RemappedRows != nil && *g.RemappedRows == gpu.RemappedRows{})
			expect("PCIe gen5 x16", eq(g.PCIe.LinkGenCurrent, 5) && eq(g.PCIe.LinkWidthMax, 16) && eq(g.PCIe.ReplayCounter, 0))
			expect("18 NVLinks up", len(g.NVLink) == 18 && g.NVLink[17].Active && eq(g.NVLink[0].CRCFlit, 0))
			expect("persistence on, MIG off", g.PersistenceMode != nil && *g.PersistenceMode && g.MIGEnabled != nil && !*g.MIGEnabled)
			if modern {
				expect("fabric Completed/Success", g.FabricState == "Completed" && g.FabricStatus == "Success")
				expect("recovery action none", g.RecoveryAction != nil && *g.RecoveryAction == 0)
			} else {
				expect("fabric unknown", g.FabricState == "" && g.FabricStatus == "")
				expect("recovery action unknown", g.RecoveryAction == nil)
			}
			if len(bad) > 0 {
				t.Errorf("GPU %d: wrong %s\n%+v", i, strings.Join(bad, "; "), g)
			}
		}
		if t.Failed() {
			t.Logf("stderr:\n%s", r.stderr)
		}
	}
}

// lostGPUNode: GPU 3 answers GPU_IS_LOST; the others are fine, and the
// default rules make that a fatal gpu-missing problem asking for a reboot.
func lostGPUNode(t *testing.T, r onceResult) {
	s := mustSnapshot(t, r)
	if s.FoundGPUs != 7 || len(s.GPUs) != 8 {
		t.Fatalf("%d found of %d, want 7 of 8\nstderr:\n%s", s.FoundGPUs, len(s.GPUs), r.stderr)
	}
	for i, g := range s.GPUs {
		if i == lostGPU {
			if !g.Missing || len(g.Errors) == 0 || g.Errors[0].Message != "GPU is lost" {
				t.Errorf("GPU %d: missing %v, errors %v; want missing with NVML's \"GPU is lost\"", i, g.Missing, g.Errors)
			}
			continue
		}
		checkIdentity(t, i, g)
		if g.Missing || len(g.Errors) != 0 {
			t.Errorf("GPU %d: missing %v, errors %v; want a healthy GPU", i, g.Missing, g.Errors)
		}
	}
	res := analyzer.NewEngine(analyzer.DefaultRuleSet(), clock.RealClock{}).Evaluate(s, nil)
	var got []string
	for _, p := range res.Problems {
		if p.Rule == "gpu-missing" && p.GPU != nil && p.GPU.Index == lostGPU &&
			p.Severity == finding.Fatal && p.Action == finding.ActionReboot {
			return
		}
		got = append(got, fmt.Sprintf("%s gpu=%v %s %s", p.Rule, p.GPU, p.Severity, p.Action))
	}
	t.Errorf("default rules on the agent's snapshot: problems %v; want gpu-missing on GPU %d, fatal, reboot", got, lostGPU)
}

// noGPU: the documented exit status 3 with a one-line reason last.
func noGPU(reason string) func(*testing.T, onceResult) {
	return func(t *testing.T, r onceResult) {
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if r.code != 3 || lines[len(lines)-1] != reason {
			t.Errorf("exit %d, last stderr line %q; want exit 3 and %q\nstderr:\n%s", r.code, lines[len(lines)-1], reason, r.stderr)
		}
	}
}

func mustSnapshot(t *testing.T, r onceResult) *gpu.NodeSnapshot {
	t.Helper()
	if r.snap == nil {
		t.Fatalf("gpuheal-agent exited %d without a snapshot\nstderr:\n%s", r.code, r.stderr)
	}
	return r.snap
}

func checkIdentity(t *testing.T, i int, g gpu.GPUSnapshot) {
	t.Helper()
	want := fmt.Sprintf("%d %s %s NVIDIA H100 80GB HBM3 165492301000%d 96.00.99.00.01 minor %d", i, wantUUIDs[i], wantBusIDs[i], i+1, i)
	minor := -1
	if g.MinorNum != nil {
		minor = int(*g.MinorNum)
	}
	if got := fmt.Sprintf("%d %s %s %s %s %s minor %d", g.Index, g.UUID, g.PCIBusID, g.Name, g.Serial, g.VBIOS, minor); got != want {
		t.Errorf("GPU %d identity:\n got %s\nwant %s", i, got, want)
	}
}

func eq(p *uint64, v uint64) bool    { return p != nil && *p == v }
func feq(p *float64, v float64) bool { return p != nil && *p == v }

// The long-running agent: an Xid the driver delivers through the event
// set, as a counter and as the analyzer's problem, and the lost GPU as a
// problem, all on /metrics.
func TestAgentDaemonOnStubNVML(t *testing.T) {
	libs := stubLibraries(t)
	for _, tc := range []struct {
		name, mode, series string
	}{
		{"xid 79 from the event set", "xid", fmt.Sprintf(`gpuheal_gpu_xid_errors_total{gpu="%d",model="NVIDIA H100 80GB HBM3",pci_bus_id="%s",uuid="%s",xid="79"} 1`,
			xidGPU, wantBusIDs[xidGPU], wantUUIDs[xidGPU])},
		// No kernel log (--kmsg-path=): the event alone makes it fatal.
		{"xid 79 from the event set as a fatal problem", "xid", fmt.Sprintf(`gpuheal_problem_active{gpu="%d",rule="xid-fatal-reboot",severity="fatal"} 1`, xidGPU)},
		{"lost GPU as a fatal problem", "lost-gpu", fmt.Sprintf(`gpuheal_problem_active{gpu="%d",rule="gpu-missing",severity="fatal"} 1`, lostGPU)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := startDaemon(t, libs.full, tc.mode, viaDriverRoot)
			d.waitSeries(t, tc.series, 30*time.Second)
		})
	}
}
