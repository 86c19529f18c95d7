package sim

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

// Kind names a fault the sim can inject. The string values are what
// schedule files use.
type Kind string

// Fault kinds. doc.go says what each one changes and logs.
const (
	KindXid                  Kind = "xid"
	KindSBE                  Kind = "sbe"
	KindDBE                  Kind = "dbe"
	KindRowRemapPending      Kind = "row-remap-pending"
	KindRowRemapFailure      Kind = "row-remap-failure"
	KindRetiredPages         Kind = "retired-pages"
	KindPCIeReplay           Kind = "pcie-replay"
	KindPCIeDowngrade        Kind = "pcie-downgrade"
	KindNVLinkDown           Kind = "nvlink-down"
	KindNVLinkErrors         Kind = "nvlink-errors"
	KindThermalSlowdown      Kind = "thermal-slowdown"
	KindPowerBrake           Kind = "power-brake"
	KindFellOffBus           Kind = "fell-off-bus"
	KindGPUMissing           Kind = "gpu-missing"
	KindDriverVersionChange  Kind = "driver-version-change"
	KindFabricManagerStopped Kind = "fabric-manager-stopped"
	KindRecoveryAction       Kind = "recovery-action"
	KindLatent               Kind = "latent"
	// The RDMA fabric's (fabricfault.go); the device param picks the
	// device.
	KindFabricPortDown      Kind = "fabric-port-down"
	KindFabricLinkFlap      Kind = "fabric-link-flap"
	KindFabricSymbolErrors  Kind = "fabric-symbol-errors"
	KindFabricDegradedRate  Kind = "fabric-degraded-rate"
	KindFabricDeviceMissing Kind = "fabric-device-missing"
	KindEFAErrors           Kind = "efa-errors"
)

// kindInfo lists, per kind, whether it is node-level (GPU is ignored) and
// which params it accepts; anything else is rejected so typos surface.
var kindInfo = map[Kind]struct {
	node   bool
	params []string
}{
	KindXid:                  {params: []string{"code", "message", "pid", "name", "data"}},
	KindSBE:                  {params: []string{"count"}},
	KindDBE:                  {params: []string{"count"}},
	KindRowRemapPending:      {params: []string{"cause"}},
	KindRowRemapFailure:      {},
	KindRetiredPages:         {params: []string{"sbe", "dbe", "pending"}},
	KindPCIeReplay:           {params: []string{"count"}},
	KindPCIeDowngrade:        {params: []string{"gen", "width"}},
	KindNVLinkDown:           {params: []string{"link"}},
	KindNVLinkErrors:         {params: []string{"link", "crc", "crc-data", "replay", "recovery"}},
	KindThermalSlowdown:      {params: []string{"temp"}},
	KindPowerBrake:           {},
	KindFellOffBus:           {},
	KindGPUMissing:           {},
	KindDriverVersionChange:  {node: true, params: []string{"version", "cuda"}},
	KindFabricManagerStopped: {node: true},
	KindRecoveryAction:       {params: []string{"action"}},
	KindLatent:               {params: []string{"mode", "factor", "surface-after", "surface"}},
	KindFabricPortDown:       {node: true, params: []string{"device"}},
	KindFabricLinkFlap:       {node: true, params: []string{"device", "every", "times"}},
	KindFabricSymbolErrors:   {node: true, params: []string{"device", "rate"}},
	KindFabricDegradedRate:   {node: true, params: []string{"device", "rate"}},
	KindFabricDeviceMissing:  {node: true, params: []string{"device"}},
	KindEFAErrors:            {node: true, params: []string{"device", "rate", "counter"}},
}

// Kinds lists every fault kind, sorted.
func Kinds() []Kind {
	return slices.Sorted(maps.Keys(kindInfo))
}

// Fault is one injected fault. GPU is the GPU index (ignored by node-level
// kinds); Params are kind-specific, as strings so that schedule files and
// flags can carry them unchanged.
type Fault struct {
	Kind   Kind              `json:"kind"`
	GPU    int               `json:"gpu"`
	Params map[string]string `json:"params,omitempty"`
}

// spec is a Fault with its params parsed and range-checked.
type spec struct {
	Fault
	code, data, n                  uint64
	message, pid, name             string
	correctable, pending           bool
	sbe, dbe                       uint64
	gen, width                     uint64 // 0: leave unchanged
	link                           int
	crc, crcData, replay, recovery uint64
	temp                           float64
	action                         gpu.RecoveryAction
	version, cuda                  string
	latent                         latentSpec
	fab                            fabricSpec
}

// Validate checks the kind and params without a node; Inject additionally
// checks them against the node (GPU count, model, NVSwitch).
func (f Fault) Validate() error {
	_, err := f.parse()
	return err
}

var (
	cudaVersionRE = regexp.MustCompile(`^[0-9]{1,2}\.[0-9]{1,2}$`)
	pidRE         = regexp.MustCompile(`^[0-9]{1,10}$`)
	procNameRE    = regexp.MustCompile(`^[^\s,]{1,64}$`)
)

func (f Fault) parse() (spec, error) {
	info, ok := kindInfo[f.Kind]
	if !ok {
		return spec{}, fmt.Errorf("unknown fault kind %q (known: %s)", f.Kind, joinKinds())
	}
	if !info.node && (f.GPU < 0 || f.GPU >= len(hgxBusIDs)) {
		return spec{}, fmt.Errorf("fault %s: gpu %d out of range 0–%d", f.Kind, f.GPU, len(hgxBusIDs)-1)
	}
	for _, name := range slices.Sorted(maps.Keys(f.Params)) {
		if !slices.Contains(info.params, name) {
			if len(info.params) == 0 {
				return spec{}, fmt.Errorf("fault %s: unknown param %q (takes no params)", f.Kind, name)
			}
			return spec{}, fmt.Errorf("fault %s: unknown param %q (allowed: %s)",
				f.Kind, name, strings.Join(info.params, ", "))
		}
	}
	p := &paramReader{f: f}
	s := spec{Fault: f}
	switch f.Kind {
	case KindXid:
		s.code = p.uint("code", 0, 1, 999, true)
		s.message = p.str("message", "", nil, "")
		s.pid = p.str("pid", "", pidRE, "a process id")
		s.name = p.str("name", "", procNameRE, "a process name without spaces or commas")
		s.data = p.uint("data", 0, 0, 1<<32, false)
	case KindSBE, KindDBE, KindPCIeReplay:
		s.n = p.uint("count", 1, 1, 1_000_000_000, false)
	case KindRowRemapPending:
		switch c := p.str("cause", "uncorrectable", nil, ""); c {
		case "uncorrectable":
		case "correctable":
			s.correctable = true
		default:
			p.fail("cause", c, "want uncorrectable or correctable")
		}
	case KindRetiredPages:
		s.sbe = p.uint("sbe", 0, 0, 1_000_000, false)
		s.dbe = p.uint("dbe", 0, 0, 1_000_000, false)
		s.pending = p.bool("pending", true)
		if p.err == nil && s.sbe+s.dbe == 0 {
			p.err = fmt.Errorf("fault %s: one of params \"sbe\" or \"dbe\" must be above 0", f.Kind)
		}
	case KindPCIeDowngrade:
		s.gen = p.uint("gen", 0, 1, 5, false)
		s.width = p.uint("width", 0, 1, 16, false)
		if p.err == nil && s.width != 0 && s.width&(s.width-1) != 0 {
			p.fail("width", f.Params["width"], "want 1, 2, 4, 8 or 16")
		}
		if p.err == nil && s.gen == 0 && s.width == 0 {
			p.err = fmt.Errorf("fault %s: one of params \"gen\" or \"width\" is required", f.Kind)
		}
	case KindNVLinkDown:
		s.link = int(p.uint("link", 0, 0, 17, true))
	case KindNVLinkErrors:
		s.link = int(p.uint("link", 0, 0, 17, true))
		s.crc = p.uint("crc", 0, 0, 1<<40, false)
		s.crcData = p.uint("crc-data", 0, 0, 1<<40, false)
		s.replay = p.uint("replay", 0, 0, 1<<40, false)
		s.recovery = p.uint("recovery", 0, 0, 1<<40, false)
		if p.err == nil && s.crc+s.crcData+s.replay+s.recovery == 0 {
			p.err = fmt.Errorf("fault %s: one of params \"crc\", \"crc-data\", \"replay\" or \"recovery\" must be above 0", f.Kind)
		}
	case KindThermalSlowdown:
		s.temp = p.float("temp", 0, 40, 150)
	case KindDriverVersionChange:
		s.version = p.str("version", "", driverVersionRE, "a driver version like 575.57.08")
		if p.err == nil && s.version == "" {
			p.fail("version", "", "required")
		}
		s.cuda = p.str("cuda", "", cudaVersionRE, "a CUDA version like 12.9")
	case KindRecoveryAction:
		s.action = p.action("action")
	case KindLatent:
		s.latent = p.latent()
	case KindFabricPortDown, KindFabricLinkFlap, KindFabricSymbolErrors,
		KindFabricDegradedRate, KindFabricDeviceMissing, KindEFAErrors:
		s.fab = p.fabricFault()
	}
	return s, p.err
}

func joinKinds() string {
	ks := Kinds()
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = string(k)
	}
	return strings.Join(out, ", ")
}

// recoveryNames are the action names a recovery-action fault accepts, in
// NVML field 230 order.
var recoveryNames = []string{"none", "gpu-reset", "node-reboot", "drain-p2p", "drain-and-reset"}
