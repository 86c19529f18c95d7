package analyzer

import (
	"math"
	"strconv"

	"github.com/google/cel-go/interpreter"

	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/gpu"
)

// The snapshot is handed to CEL as plain maps keyed by the JSON names of
// package gpu's types, built by hand: a JSON round trip costs ten times
// more and turns every number into a double. Conventions (doc.go):
//   - a nil pointer (unsupported reading) is an absent key: has(gpu.x);
//   - every other field is always present, zero-valued when unset;
//   - integers are CEL int (uint64 readings saturate at MaxInt64),
//     fractional readings are double, times are timestamps.

func i64(v uint64) int64 { return int64(min(v, math.MaxInt64)) }

func putU64(m map[string]any, k string, v *uint64) {
	if v != nil {
		m[k] = i64(*v)
	}
}

func putF64(m map[string]any, k string, v *float64) {
	if v != nil {
		m[k] = *v
	}
}

func putBool(m map[string]any, k string, v *bool) {
	if v != nil {
		m[k] = *v
	}
}

func errorList(errs []gpu.QueryError) []any {
	out := make([]any, len(errs))
	for i, e := range errs {
		out[i] = map[string]any{"query": e.Query, "message": e.Message, "timeout": e.Timeout}
	}
	return out
}

// nodeVars is the node variable; gpus is the same list as the gpus
// variable. A nil snapshot (the backend could not read the GPUs at all)
// gives available=false and zero values.
func nodeVars(s *gpu.NodeSnapshot, gpus []any) map[string]any {
	available := s != nil
	if s == nil {
		// Every key is still there, zero-valued, so node rules need no
		// has() for the case they exist to catch.
		s = &gpu.NodeSnapshot{}
	}
	devs := make([]any, len(s.DeviceNodes))
	for i, d := range s.DeviceNodes {
		devs[i] = d
	}
	return map[string]any{
		"available":           available,
		"time":                s.Time,
		"backend":             s.Backend,
		"driverVersion":       s.DriverVersion,
		"cudaDriverVersion":   s.CUDADriverVersion,
		"kernelModuleVersion": s.KernelModuleVersion,
		"kernelRelease":       s.KernelRelease,
		"expectedGPUs":        int64(s.ExpectedGPUs),
		"foundGPUs":           int64(s.FoundGPUs),
		"deviceNodes":         devs,
		"nvSwitch":            s.NVSwitch,
		"fabricManager":       s.FabricManager,
		"gpus":                gpus,
		"errors":              errorList(s.Errors),
	}
}

func gpuVars(g *gpu.GPUSnapshot) map[string]any {
	m := make(map[string]any, 40)
	m["index"] = int64(g.Index)
	m["uuid"] = g.UUID
	m["pciBusId"] = g.PCIBusID
	m["name"] = g.Name
	m["serial"] = g.Serial
	m["vbios"] = g.VBIOS
	putU64(m, "minorNumber", g.MinorNum)
	m["missing"] = g.Missing
	putF64(m, "utilizationGpuPercent", g.UtilizationGPUPercent)
	putF64(m, "utilizationMemoryPercent", g.UtilizationMemoryPercent)
	putU64(m, "memoryUsedBytes", g.MemoryUsedBytes)
	putU64(m, "memoryTotalBytes", g.MemoryTotalBytes)
	putF64(m, "temperatureCelsius", g.TemperatureCelsius)
	putF64(m, "memoryTemperatureCelsius", g.MemoryTemperatureCelsius)
	putF64(m, "powerDrawWatts", g.PowerDrawWatts)
	putF64(m, "powerLimitWatts", g.PowerLimitWatts)
	putF64(m, "smClockMHz", g.SMClockMHz)
	putF64(m, "memoryClockMHz", g.MemoryClockMHz)
	putU64(m, "clockEventReasons", g.ClockEventReasons)
	putBool(m, "eccModeEnabled", g.ECCModeEnabled)

	ecc := make(map[string]any, 4)
	putU64(ecc, "volatileCorrected", g.ECC.VolatileCorrected)
	putU64(ecc, "volatileUncorrected", g.ECC.VolatileUncorrected)
	putU64(ecc, "aggregateCorrected", g.ECC.AggregateCorrected)
	putU64(ecc, "aggregateUncorrected", g.ECC.AggregateUncorrected)
	m["ecc"] = ecc
	if p := g.RetiredPages; p != nil {
		m["retiredPages"] = map[string]any{"singleBit": i64(p.SingleBit), "doubleBit": i64(p.DoubleBit), "pending": p.Pending}
	}
	if r := g.RemappedRows; r != nil {
		m["remappedRows"] = map[string]any{"correctable": i64(r.Correctable), "uncorrectable": i64(r.Uncorrectable),
			"pending": r.Pending, "failure": r.Failure}
	}
	pcie := make(map[string]any, 5)
	putU64(pcie, "replayCounter", g.PCIe.ReplayCounter)
	putU64(pcie, "linkGenCurrent", g.PCIe.LinkGenCurrent)
	putU64(pcie, "linkGenMax", g.PCIe.LinkGenMax)
	putU64(pcie, "linkWidthCurrent", g.PCIe.LinkWidthCurrent)
	putU64(pcie, "linkWidthMax", g.PCIe.LinkWidthMax)
	m["pcie"] = pcie

	links := make([]any, len(g.NVLink))
	for i, l := range g.NVLink {
		lm := make(map[string]any, 6)
		lm["link"] = int64(l.Link)
		lm["active"] = l.Active
		putU64(lm, "crcFlit", l.CRCFlit)
		putU64(lm, "crcData", l.CRCData)
		putU64(lm, "replay", l.Replay)
		putU64(lm, "recovery", l.Recovery)
		links[i] = lm
	}
	m["nvlink"] = links
	events := make([]any, len(g.XidEvents))
	for i, e := range g.XidEvents {
		events[i] = map[string]any{"xid": i64(e.Xid), "time": e.Time, "data": i64(e.Data)}
	}
	m["xidEvents"] = events
	totals := make(map[string]any, len(g.XidTotals))
	for code, n := range g.XidTotals {
		// JSON's form: object keys are the codes in decimal.
		totals[strconv.FormatUint(code, 10)] = i64(n)
	}
	m["xidTotals"] = totals
	if a := g.RecoveryAction; a != nil {
		m["recoveryAction"] = i64(uint64(*a))
	}
	putBool(m, "resetRequired", g.ResetRequired)
	putBool(m, "drainAndResetRecommended", g.DrainAndResetRecommended)
	putBool(m, "persistenceMode", g.PersistenceMode)
	putBool(m, "migEnabled", g.MIGEnabled)
	migs := make([]any, len(g.MIGDevices))
	for i, d := range g.MIGDevices {
		dm := map[string]any{"index": int64(d.Index), "gpuInstanceId": int64(d.GPUInstanceID), "computeInstanceId": int64(d.ComputeInstanceID)}
		putU64(dm, "memoryUsedBytes", d.MemoryUsedBytes)
		putU64(dm, "memoryTotalBytes", d.MemoryTotalBytes)
		putU64(dm, "eccCorrected", d.ECCCorrected)
		putU64(dm, "eccUncorrected", d.ECCUncorrected)
		migs[i] = dm
	}
	m["migDevices"] = migs
	m["fabricState"] = g.FabricState
	m["fabricStatus"] = g.FabricStatus
	m["errors"] = errorList(g.Errors)
	return m
}

func findingVars(f *finding.Finding) map[string]any {
	return map[string]any{
		"source": f.Source, "code": f.Code, "xid": i64(f.Xid), "gpu": f.GPU, "device": f.Device,
		"severity": string(f.Severity), "action": string(f.Action), "time": f.Time, "message": f.Message,
	}
}

// activation resolves the variables of one evaluation without a map: one
// value is reused for every rule and GPU, so evaluating allocates nothing
// for the bindings themselves.
type activation struct {
	node, gpu, delta, finding map[string]any
	device, port, hwDelta     map[string]any
	gpus, findings, gpuFinds  []any
	seconds                   float64
	expectedDriver            string
}

func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case "node":
		return a.node, true
	case "gpu":
		return a.gpu, a.gpu != nil
	case "gpus":
		return a.gpus, true
	case "findings":
		return a.findings, true
	case "gpuFindings":
		return a.gpuFinds, true
	case "delta":
		return a.delta, a.delta != nil
	case "seconds":
		return a.seconds, true
	case "finding":
		return a.finding, a.finding != nil
	case "device":
		return a.device, a.device != nil
	case "port":
		return a.port, a.port != nil
	case "hwDelta":
		return a.hwDelta, a.hwDelta != nil
	case "expectedDriverVersion":
		return a.expectedDriver, true
	}
	return nil, false
}

func (a *activation) Parent() interpreter.Activation { return nil }
