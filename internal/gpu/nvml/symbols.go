//go:build cgo

package nvml

// go-nvml links every NVML function into the agent as a lazily bound
// import and dlopens libnvidia-ml with RTLD_LAZY: calling a function the
// loaded library does not define is not an error code but the dynamic
// loader ending the process ("symbol lookup error: undefined symbol",
// exit 127), which no recover can catch. So each function the backend
// calls that an old driver lacks is looked up first, once, and skipped
// when absent: the GPU then reads as "cannot tell", as for NOT_SUPPORTED.
//
// Drivers from R470 on are covered; every other call the backend makes
// is older than R470: the newest of them, nvmlDeviceGetRemappedRows and
// the MIG queries, came with R450 (NVML API 11.0, the header CUDA 11.0
// ships; R450 is CUDA 11.0's driver branch). Source: NVIDIA/go-nvml
// commit 695db45, "Publish bindings for v11.0 of the NVML API", whose
// nvml.h declares both.
const (
	symClocksEventReasons = "nvmlDeviceGetCurrentClocksEventReasons" // R535; "throttle reasons" before
	symFabricInfo         = "nvmlDeviceGetGpuFabricInfo"             // after R470, for Hopper's NVLink fabric
)

// symbols says which optional functions the library has.
type symbols struct {
	clocksEventReasons bool
	fabricInfo         bool
}

// lookupSymbols asks the loaded library (after Init) for each optional
// function. A library that cannot say (a mock without Extensions) is
// taken to have them all: it answers through Go, and a missing function
// there is an error code, not a crash.
func lookupSymbols(lib Library) symbols {
	return symbols{
		clocksEventReasons: hasSymbol(lib, symClocksEventReasons),
		fabricInfo:         hasSymbol(lib, symFabricInfo),
	}
}

func hasSymbol(lib Library, name string) (has bool) {
	defer func() {
		if recover() != nil {
			has = true
		}
	}()
	ext := lib.Extensions()
	if ext == nil {
		return true
	}
	return ext.LookupSymbol(name) == nil
}
