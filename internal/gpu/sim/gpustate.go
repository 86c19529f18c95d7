package sim

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

// gpuState is the mutable truth about one simulated GPU; snapshots are
// rendered from it and faults change it.
type gpuState struct {
	index  int
	uuid   string
	serial string
	bus    string // 0000:18:00.0
	dev    string // /dev/nvidia0
	// Seeded, per-GPU baselines; readings add per-second noise.
	baseTemp  float64
	basePower float64
	memUsed   uint64

	gone bool // gpu-missing: not listed at all
	lost bool // fell-off-bus: listed, Missing

	volCorr, volUncorr, aggCorr, aggUncorr uint64
	remap                                  gpu.RemappedRows
	retired                                gpu.RetiredPages

	replays          uint64
	linkGen, linkWid uint64
	links            []linkState

	clockEvents uint64
	hotTemp     float64 // > 0 while a thermal slowdown holds the GPU hot

	recovery gpu.RecoveryAction
	pending  []gpu.XidEvent // delivered once, by the next snapshot
	// persistOff: persistence mode turned off (for a reset); resets
	// counts the single-GPU resets (gpureset.go).
	persistOff bool
	resets     int
	totals     map[uint64]uint64
}

type linkState struct {
	down                               bool
	crcFlit, crcData, replay, recovery uint64
}

func newGPUState(key uint64, m model, i int) *gpuState {
	return &gpuState{
		index:       i,
		uuid:        gpuUUID(key, i),
		serial:      gpuSerial(key, i),
		bus:         hgxBusIDs[i],
		dev:         fmt.Sprintf("/dev/nvidia%d", i),
		baseTemp:    36 + 7*unit(hash(key, i, hBaseTemp, 0)),
		basePower:   m.idlePower - 5 + 10*unit(hash(key, i, hBasePower, 0)),
		memUsed:     (1 + hash(key, i, hMemUsed, 0)%4) << 20,
		linkGen:     m.pcieGen,
		linkWid:     16,
		links:       make([]linkState, m.nvlinks),
		clockEvents: gpu.ClockEventGPUIdle,
		totals:      map[uint64]uint64{},
	}
}

// kernelBus is the address form NVRM prints in Xid lines: no function.
func (g *gpuState) kernelBus() string {
	return strings.TrimSuffix(g.bus, ".0")
}

// upstreamPort is the PCIe port above the GPU (bus-1, device 1), the one
// that reports AER errors and limits a downtrained link.
func (g *gpuState) upstreamPort() string {
	b, _ := strconv.ParseUint(g.bus[5:7], 16, 8)
	return fmt.Sprintf("%s%02x:01.0", g.bus[:5], b-1)
}

func (g *gpuState) recordXid(code, data uint64, now time.Time) {
	g.pending = append(g.pending, gpu.XidEvent{Xid: code, Time: now, Data: data})
	g.totals[code]++
}

// snapshot renders the GPU at tick (whole seconds since boot); it drains
// the pending Xid events.
func (n *Node) gpuSnapshot(g *gpuState, tick uint64) gpu.GPUSnapshot {
	m := n.model
	s := gpu.GPUSnapshot{
		Index:     g.index,
		UUID:      g.uuid,
		PCIBusID:  g.bus,
		Name:      m.name,
		Serial:    g.serial,
		VBIOS:     m.vbios,
		MinorNum:  gpu.U64(uint64(g.index)),
		XidEvents: g.pending,
	}
	g.pending = nil
	if len(g.totals) > 0 {
		s.XidTotals = maps.Clone(g.totals)
	}
	if g.lost {
		s.Missing = true
		s.Errors = []gpu.QueryError{{Query: "device handle", Message: "GPU is lost"}}
		return s
	}
	noise := func(what uint64) float64 { return 2*unit(hash(n.key, g.index, what, tick)) - 1 }

	temp := g.baseTemp + noise(hTempNoise)
	if g.hotTemp > 0 {
		temp = g.hotTemp + noise(hTempNoise)
	}
	s.TemperatureCelsius = gpu.F64(round(temp, 0))
	s.MemoryTemperatureCelsius = gpu.F64(round(temp+3+noise(hMemTempNoise), 0))
	s.PowerDrawWatts = gpu.F64(round(g.basePower+1.5*noise(hPowerNoise), 2))
	s.PowerLimitWatts = gpu.F64(m.powerLimit)
	s.SMClockMHz = gpu.F64(m.idleSM)
	s.MemoryClockMHz = gpu.F64(m.memClock)
	s.ClockEventReasons = gpu.U64(g.clockEvents)
	s.UtilizationGPUPercent = gpu.F64(0)
	s.UtilizationMemoryPercent = gpu.F64(0)
	s.MemoryUsedBytes = gpu.U64(g.memUsed)
	s.MemoryTotalBytes = gpu.U64(m.memMiB << 20)

	s.ECCModeEnabled = gpu.Bool(true)
	s.ECC = gpu.ECCCounts{
		VolatileCorrected:    gpu.U64(g.volCorr),
		VolatileUncorrected:  gpu.U64(g.volUncorr),
		AggregateCorrected:   gpu.U64(g.aggCorr),
		AggregateUncorrected: gpu.U64(g.aggUncorr),
	}
	if m.rowRemap {
		rr := g.remap
		s.RemappedRows = &rr
	} else {
		rp := g.retired
		s.RetiredPages = &rp
	}
	s.PCIe = gpu.PCIe{
		ReplayCounter:    gpu.U64(g.replays),
		LinkGenCurrent:   gpu.U64(g.linkGen),
		LinkGenMax:       gpu.U64(m.pcieGen),
		LinkWidthCurrent: gpu.U64(g.linkWid),
		LinkWidthMax:     gpu.U64(16),
	}
	s.NVLink = make([]gpu.NVLink, len(g.links))
	// One backing array for the 4 counters of every link: 18 links would
	// otherwise cost 72 allocations per GPU per snapshot.
	c := make([]uint64, 4*len(g.links))
	for i, l := range g.links {
		c := c[4*i : 4*i+4 : 4*i+4]
		c[0], c[1], c[2], c[3] = l.crcFlit, l.crcData, l.replay, l.recovery
		s.NVLink[i] = gpu.NVLink{
			Link: i, Active: !l.down,
			CRCFlit: &c[0], CRCData: &c[1], Replay: &c[2], Recovery: &c[3],
		}
	}
	if m.recovery {
		ra := g.recovery
		s.RecoveryAction = &ra
		s.ResetRequired = gpu.Bool(ra == gpu.RecoveryGPUReset || ra == gpu.RecoveryDrainAndReset)
		s.DrainAndResetRecommended = gpu.Bool(ra == gpu.RecoveryDrainAndReset)
	}
	s.PersistenceMode = gpu.Bool(!g.persistOff)
	s.MIGEnabled = gpu.Bool(false)
	if m.fabric && n.nvswitch {
		// The GPU keeps its fabric registration when the fabric manager
		// stops; only new NVLink setups fail, which FabricManager shows.
		s.FabricState, s.FabricStatus = "Completed", "Success"
	}
	return s
}
