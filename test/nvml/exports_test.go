//go:build integration

package nvml

import (
	"debug/buildinfo"
	"debug/elf"
	"slices"
	"strings"
	"testing"
)

// stubExports is every function the nvml backend calls, under the name
// go-nvml resolves: versioned ones (_v2, _v3) where go-nvml looks them up
// at load and prefers them. stub/README.md lists the same.
var stubExports = []string{
	"nvmlDeviceGetClockInfo", "nvmlDeviceGetComputeInstanceId", "nvmlDeviceGetCount_v2",
	"nvmlDeviceGetCurrPcieLinkGeneration", "nvmlDeviceGetCurrPcieLinkWidth",
	"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons",
	"nvmlDeviceGetEccMode", "nvmlDeviceGetEnforcedPowerLimit", "nvmlDeviceGetFieldValues",
	"nvmlDeviceGetGpuFabricInfo", "nvmlDeviceGetGpuInstanceId", "nvmlDeviceGetHandleByIndex_v2",
	"nvmlDeviceGetMaxMigDeviceCount", "nvmlDeviceGetMaxPcieLinkGeneration", "nvmlDeviceGetMaxPcieLinkWidth",
	"nvmlDeviceGetMemoryInfo", "nvmlDeviceGetMigDeviceHandleByIndex", "nvmlDeviceGetMigMode",
	"nvmlDeviceGetMinorNumber", "nvmlDeviceGetName", "nvmlDeviceGetNvLinkErrorCounter",
	"nvmlDeviceGetNvLinkState", "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPcieReplayCounter",
	"nvmlDeviceGetPersistenceMode", "nvmlDeviceGetPowerUsage", "nvmlDeviceGetRemappedRows",
	"nvmlDeviceGetRetiredPages", "nvmlDeviceGetRetiredPagesPendingStatus", "nvmlDeviceGetSerial",
	"nvmlDeviceGetSupportedEventTypes", "nvmlDeviceGetTemperature", "nvmlDeviceGetTotalEccErrors",
	"nvmlDeviceGetUUID", "nvmlDeviceGetUtilizationRates", "nvmlDeviceGetVbiosVersion",
	"nvmlDeviceRegisterEvents", "nvmlErrorString", "nvmlEventSetCreate", "nvmlEventSetFree",
	"nvmlEventSetWait_v2", "nvmlInit_v2", "nvmlShutdown", "nvmlSystemGetCudaDriverVersion",
	"nvmlSystemGetDriverVersion",
}

// absentFromR470 are the functions the agent must look up before calling.
var absentFromR470 = []string{"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetGpuFabricInfo"}

// The old-driver cases mean something only if the R470 build really lacks
// the symbols (so dlsym fails as on a real R470 node), and the others only
// if the full build has everything, and nothing but the NVML API.
func TestStubExports(t *testing.T) {
	libs := stubLibraries(t)
	r470 := slices.DeleteFunc(slices.Clone(stubExports), func(s string) bool { return slices.Contains(absentFromR470, s) })
	for _, tc := range []struct {
		lib  string
		want []string
	}{{libs.full, stubExports}, {libs.r470, r470}} {
		f, err := elf.Open(tc.lib)
		if err != nil {
			t.Fatal(err)
		}
		syms, err := f.DynamicSymbols()
		_ = f.Close()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range syms {
			if s.Section != elf.SHN_UNDEF && elf.ST_TYPE(s.Info) == elf.STT_FUNC {
				got = append(got, s.Name)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s exports\n%v\nwant\n%v", tc.lib, got, tc.want)
		}
	}
}

// The binary under test must be the shipped kind: cgo, internal linker,
// and libnvidia-ml not linked but loaded at run time.
func TestAgentBuiltAsMakeBuild(t *testing.T) {
	bin := agentBinary(t)
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	// -trimpath keeps -ldflags out of the build info, so the linker is
	// told by its output: the system linker adds crt's .init section and,
	// on Debian's defaults, a .gnu.hash; Go's internal linker adds neither.
	if settings["CGO_ENABLED"] != "1" || settings["-trimpath"] != "true" {
		t.Errorf("build settings CGO_ENABLED=%q -trimpath=%q; want cgo and -trimpath", settings["CGO_ENABLED"], settings["-trimpath"])
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	for _, name := range []string{".init", ".gnu.hash"} {
		if f.Section(name) != nil {
			t.Errorf("the agent has a %s section: linked by the system linker, not with -linkmode=internal", name)
		}
	}
	if f.Section(".interp") == nil {
		t.Error("the agent has no .interp: not dynamically linked, so it could not dlopen libnvidia-ml")
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(libs, func(l string) bool { return strings.HasPrefix(l, "libnvidia-ml") }) {
		t.Errorf("the agent links %v; libnvidia-ml must be dlopened, so a node without it still runs the agent", libs)
	}
}
