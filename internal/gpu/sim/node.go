package sim

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

// BackendName is what Name returns and snapshots carry as Backend.
const BackendName = "sim"

var errClosed = errors.New("sim: node is closed")

// Node is one simulated GPU node. It implements gpu.Source; all methods
// are safe for concurrent use.
type Node struct {
	opts     Options
	model    model
	clock    clock.PassiveClock
	key      uint64    // seed + node name; every generated value hangs off it
	start    time.Time // schedule times count from here
	boot     time.Time // kernel-log timestamps count from here
	nvswitch bool

	mu     sync.Mutex
	gpus   []*gpuState
	driver string
	kmod   string
	cuda   string
	fabric string
	log    kernelLog
	due    Schedule      // this node's entries, in time order
	next   int           // first entry of due not yet applied
	wake   chan struct{} // SetSchedule tells a waiting Run
	closed bool
	// latent faults by GPU index (nil: none); they belong to the board,
	// so Reset keeps them (latent.go).
	latent []*latentState
	// fab is the RDMA fabric (nil: none); its faults are the cables',
	// switches' and NICs', so Reset keeps them (fabricfault.go).
	fab       *fabricState
	busy      bool
	busySince time.Time
}

var _ gpu.Source = (*Node)(nil)

// New builds a node from opts; see Options for the defaults.
func New(opts Options) (*Node, error) {
	o, m, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	n := &Node{
		opts:     o,
		model:    m,
		clock:    o.Clock,
		key:      nodeKey(o.Seed, o.NodeName),
		nvswitch: *o.NVSwitch,
		log:      kernelLog{w: o.KernelLog, size: o.KernelLogSize},
		wake:     make(chan struct{}, 1),
		latent:   make([]*latentState, o.GPUs),
	}
	n.start = n.clock.Now()
	n.boot = n.start.Add(-o.Uptime)
	if o.Fabric.Devices > 0 {
		n.fab = newFabric(n.key, o.Fabric, n.boot)
	}
	n.resetLocked()
	if err := n.SetSchedule(o.Schedule); err != nil {
		return nil, err
	}
	return n, nil
}

// Name is the backend name, "sim".
func (n *Node) Name() string { return BackendName }

// NodeName is the simulated node's name.
func (n *Node) NodeName() string { return n.opts.NodeName }

// Start is the time New ran; schedule entries are timed from it.
func (n *Node) Start() time.Time { return n.start }

// Close stops the node; later calls to Snapshot and Inject fail.
func (n *Node) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.closed = true
	select {
	case n.wake <- struct{}{}: // a waiting Run sees closed and returns
	default:
	}
	return nil
}

// Snapshot first applies the schedule entries that are due, then reads
// every GPU. Xid events injected since the previous snapshot are
// delivered once. A kernel-log write failure while applying the schedule
// lands in the snapshot's Errors: the readings are still good.
func (n *Node) Snapshot(ctx context.Context) (*gpu.NodeSnapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, errClosed
	}
	now := n.clock.Now()
	_, applyErr := n.applyDueLocked(now)
	applyErr = errors.Join(applyErr, n.surfaceDueLocked(now))
	tick := uint64(max(now.Sub(n.boot), 0) / time.Second)
	s := &gpu.NodeSnapshot{
		Time:                now,
		Backend:             BackendName,
		DriverVersion:       n.driver,
		CUDADriverVersion:   n.cuda,
		KernelModuleVersion: n.kmod,
		KernelRelease:       n.opts.KernelRelease,
		ExpectedGPUs:        len(n.gpus),
		NVSwitch:            n.nvswitch,
		FabricManager:       n.fabric,
		GPUs:                make([]gpu.GPUSnapshot, 0, len(n.gpus)),
		DeviceNodes:         make([]string, 0, len(n.gpus)+2),
	}
	for _, g := range n.gpus {
		if g.gone {
			continue
		}
		s.GPUs = append(s.GPUs, n.gpuSnapshot(g, tick))
		s.DeviceNodes = append(s.DeviceNodes, g.dev)
	}
	// A GPU that fell off the bus still counts: the driver still lists it,
	// NVML just cannot talk to it. Only a GPU gone from the bus is unseen.
	s.FoundGPUs = len(s.GPUs)
	s.DeviceNodes = append(s.DeviceNodes, "/dev/nvidiactl", "/dev/nvidia-uvm")
	if n.fab != nil {
		s.Fabric = n.fab.snapshot(now)
	}
	if applyErr != nil {
		s.Errors = append(s.Errors, gpu.QueryError{Query: "sim schedule", Message: applyErr.Error()})
	}
	return s, nil
}

// KernelLog returns the kept kernel-log records with Seq >= fromSeq, as a
// reader of /dev/kmsg would see them.
func (n *Node) KernelLog(fromSeq uint64) []Record {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.log.since(fromSeq)
}

// Reset puts every GPU and node fact back to what New built. The kernel
// log keeps its records and sequence numbers, and schedule entries that
// were already applied stay applied, so nothing fires twice. Latent
// faults stay too (they are the board's), with their load time restarted,
// and so do fabric faults (a cable's, a switch port's, a NIC's), with
// the adapters' counters started over (fabricfault.go).
func (n *Node) Reset() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.resetLocked()
	n.rearmLatentLocked()
	if n.fab != nil {
		n.fab.reboot(n.clock.Now())
	}
}

func (n *Node) resetLocked() {
	n.gpus = make([]*gpuState, n.opts.GPUs)
	for i := range n.gpus {
		n.gpus[i] = newGPUState(n.key, n.model, i)
	}
	n.driver, n.kmod, n.cuda = n.opts.DriverVersion, n.opts.DriverVersion, n.opts.CUDAVersion
	n.fabric = ""
	if n.nvswitch {
		n.fabric = "running"
	}
}

// Clear undoes a fault kind on one GPU (node-level kinds ignore gpu), as
// the matching repair would: a reset activates pending row remaps and
// zeroes volatile ECC counters, a reboot brings a lost GPU back, a reload
// ends a driver mismatch. Aggregate counters, remapped-row counts and Xid
// totals are history and stay. Clearing xid is a no-op, and so is
// clearing latent: no repair but a new board removes it. A fabric kind is
// cleared on every device, as a new cable or NIC would: the port is up at
// full rate, the device is back, counters stop rising and keep their
// counts. Nothing is logged.
func (n *Node) Clear(gpuIndex int, kind Kind) error {
	info, ok := kindInfo[kind]
	if !ok {
		return fmt.Errorf("sim: unknown fault kind %q (known: %s)", kind, joinKinds())
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if info.node {
		switch kind {
		case KindDriverVersionChange:
			n.kmod = n.driver
		case KindFabricManagerStopped:
			if n.nvswitch {
				n.fabric = "running"
			}
		default:
			if n.fab != nil && IsFabricKind(kind) {
				n.fab.clearKind(kind, n.clock.Now())
			}
		}
		return nil
	}
	if gpuIndex < 0 || gpuIndex >= len(n.gpus) {
		return fmt.Errorf("sim: clear %s: gpu %d out of range (node %s has %d GPUs)",
			kind, gpuIndex, n.opts.NodeName, len(n.gpus))
	}
	g := n.gpus[gpuIndex]
	switch kind {
	case KindSBE:
		g.volCorr = 0
	case KindDBE:
		g.volUncorr = 0
	case KindRowRemapPending:
		g.remap.Pending = false
	case KindRowRemapFailure:
		g.remap.Failure = false
	case KindRetiredPages:
		g.retired.Pending = false
	case KindPCIeReplay:
		g.replays = 0
	case KindPCIeDowngrade:
		g.linkGen, g.linkWid = n.model.pcieGen, 16
	case KindNVLinkDown:
		for i := range g.links {
			g.links[i].down = false
		}
	case KindNVLinkErrors:
		for i := range g.links {
			g.links[i] = linkState{down: g.links[i].down}
		}
	case KindThermalSlowdown:
		g.hotTemp = 0
		g.clearClockEvents(gpu.ClockEventHwThermal)
	case KindPowerBrake:
		g.clearClockEvents(gpu.ClockEventHwPowerBrake)
	case KindFellOffBus:
		g.lost = false
	case KindGPUMissing:
		g.gone = false
	case KindRecoveryAction:
		g.recovery = gpu.RecoveryNone
	}
	return nil
}

// clearClockEvents drops bit; HW slowdown stays while another HW cause
// holds it, and an unthrottled GPU reads idle again.
func (g *gpuState) clearClockEvents(bit uint64) {
	g.clockEvents &^= bit
	if g.clockEvents&(gpu.ClockEventHwThermal|gpu.ClockEventHwPowerBrake) == 0 {
		g.clockEvents &^= gpu.ClockEventHwSlowdown
	}
	if g.clockEvents == 0 {
		g.clockEvents = gpu.ClockEventGPUIdle
	}
}
