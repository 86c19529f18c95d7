package sim

import (
	"fmt"
	"time"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

// maxAERReports caps the AER reports one replay burst logs: the kernel
// rate-limits them too, and a burst of thousands should not flood tests.
const maxAERReports = 4

// Inject applies f now: it changes what the next snapshot reads and writes
// the kernel-log records the real fault would produce. f is checked in
// full before anything changes. An error after the change can only come
// from the KernelLog writer; the fault then stays applied.
func (n *Node) Inject(f Fault) error {
	s, err := f.parse()
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return errClosed
	}
	if err := n.check(s); err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	return n.applyLocked(s, n.clock.Now())
}

// check holds the rules that depend on this node: its GPU count, its
// model's features, whether it has NVSwitches and its fabric. It reads
// only what New fixed, so it needs no lock.
func (n *Node) check(s spec) error {
	m := n.model
	if IsFabricKind(s.Kind) {
		return n.checkFabric(s)
	}
	if !kindInfo[s.Kind].node && s.GPU >= n.opts.GPUs {
		return fmt.Errorf("fault %s: gpu %d out of range (node %s has %d GPUs)",
			s.Kind, s.GPU, n.opts.NodeName, n.opts.GPUs)
	}
	switch s.Kind {
	case KindRowRemapPending, KindRowRemapFailure:
		if !m.rowRemap {
			return fmt.Errorf("fault %s: %s retires pages instead of remapping rows (use retired-pages)", s.Kind, m.key)
		}
	case KindRetiredPages:
		if m.rowRemap {
			return fmt.Errorf("fault %s: %s remaps rows instead of retiring pages (use row-remap-pending)", s.Kind, m.key)
		}
	case KindPCIeDowngrade:
		if s.gen > m.pcieGen {
			return fmt.Errorf("fault %s: param \"gen\": %s links run at most PCIe gen %d", s.Kind, m.key, m.pcieGen)
		}
	case KindNVLinkDown, KindNVLinkErrors:
		if s.link >= m.nvlinks {
			return fmt.Errorf("fault %s: param \"link\": %s has links 0–%d", s.Kind, m.key, m.nvlinks-1)
		}
	case KindFabricManagerStopped:
		if !n.nvswitch {
			return fmt.Errorf("fault %s: node %s has no NVSwitch, so no fabric manager", s.Kind, n.opts.NodeName)
		}
	case KindRecoveryAction:
		if !m.recovery {
			return fmt.Errorf("fault %s: %s does not report a recovery action", s.Kind, m.key)
		}
	}
	return nil
}

// applyLocked changes the state for an already checked fault and logs.
func (n *Node) applyLocked(s spec, now time.Time) error {
	var g *gpuState
	if !kindInfo[s.Kind].node {
		g = n.gpus[s.GPU]
	}
	m := n.model
	var out []line
	xid := func(code, data uint64, msg string) {
		g.recordXid(code, data, now)
		out = append(out, warn(xidLine(g, code, "", "", msg)))
	}
	switch s.Kind {
	case KindXid:
		g.recordXid(s.code, s.data, now)
		msg := s.message
		if s.code == 154 && msg == "" {
			msg = recoveryMsg(g.recovery, gpu.RecoveryAction(s.data))
		}
		out = append(out, warn(xidLine(g, s.code, s.pid, s.name, msg)))
	case KindSBE:
		// Corrected errors are silent in the kernel log; a high rate
		// shows up as Xid 92, which an xid fault can add.
		g.volCorr += s.n
		g.aggCorr += s.n
	case KindDBE:
		g.volUncorr += s.n
		g.aggUncorr += s.n
		h := hash(n.key, g.index, hDBEAddr, g.aggUncorr)
		xid(48, 0, fmt.Sprintf("An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition %d, subpartition %d.", h%8, (h>>8)%2))
	case KindRowRemapPending:
		if s.correctable {
			g.remap.Correctable++
		} else {
			g.remap.Uncorrectable++
		}
		g.remap.Pending = true
		xid(63, 0, "")
	case KindRowRemapFailure:
		g.remap.Failure = true
		addr := hash(n.key, g.index, hRemapAddr, g.remap.Uncorrectable) & 0xfffffffe0
		xid(64, 0, fmt.Sprintf("Row Remapper Error: (0x%016x) - All reserved rows for bank are remapped", addr))
	case KindRetiredPages:
		g.retired.SingleBit += s.sbe
		g.retired.DoubleBit += s.dbe
		g.retired.Pending = g.retired.Pending || s.pending
		xid(63, 0, "ECC page retirement recording event")
	case KindPCIeReplay:
		g.replays += s.n
		for i := range min(s.n, maxAERReports) {
			e := aerRxErr
			if i%2 == 1 {
				e = aerBadTLP
			}
			out = append(out, aerLines(g, m.deviceID, e)...)
		}
	case KindPCIeDowngrade:
		if s.gen != 0 {
			g.linkGen = s.gen
		}
		if s.width != 0 {
			g.linkWid = s.width
		}
		out = append(out, downtrainLine(g, g.linkGen, g.linkWid, m.pcieGen, 16)...)
	case KindNVLinkDown:
		g.links[s.link].down = true
		xid(74, 0, fmt.Sprintf("NVLink: fatal error detected on link %d(0x10000, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)", s.link))
	case KindNVLinkErrors:
		// Counters climb silently until the driver declares the link
		// fatal; pair with nvlink-down or an xid 74 fault for that.
		l := &g.links[s.link]
		l.crcFlit += s.crc
		l.crcData += s.crcData
		l.replay += s.replay
		l.recovery += s.recovery
	case KindThermalSlowdown:
		g.hotTemp = s.temp
		if g.hotTemp == 0 {
			g.hotTemp = m.slowTemp
		}
		g.clockEvents = g.clockEvents&^gpu.ClockEventGPUIdle | gpu.ClockEventHwThermal | gpu.ClockEventHwSlowdown
	case KindPowerBrake:
		g.clockEvents = g.clockEvents&^gpu.ClockEventGPUIdle | gpu.ClockEventHwPowerBrake | gpu.ClockEventHwSlowdown
	case KindFellOffBus:
		g.lost = true
		xid(79, 0, "")
		out = append(out, warn(fellOffBusMsg(g, m.deviceID)))
	case KindGPUMissing:
		// The GPU is simply not enumerated any more; nothing is logged.
		g.gone = true
	case KindDriverVersionChange:
		// User space moves to the new version; the loaded kernel module
		// stays until a reboot or module reload (Clear).
		n.driver = s.version
		n.cuda = s.cuda
		if n.cuda == "" {
			n.cuda = cudaFor(s.version)
		}
		if n.driver != n.kmod {
			out = append(out, warn(apiMismatchMsg(n.driver, n.kmod)))
		}
	case KindFabricManagerStopped:
		// The fabric manager logs to its own file, not the kernel log.
		n.fabric = "stopped"
	case KindRecoveryAction:
		from := g.recovery
		g.recovery = s.action
		xid(154, uint64(s.action), recoveryMsg(from, s.action))
	case KindLatent:
		// Nothing to read or log: the board just carries it (latent.go).
		n.latent[s.GPU] = &latentState{latentSpec: s.latent}
	case KindFabricPortDown, KindFabricLinkFlap, KindFabricSymbolErrors,
		KindFabricDegradedRate, KindFabricDeviceMissing, KindEFAErrors:
		out = append(out, n.fab.apply(s, now)...)
	}
	return n.log.emit(now.Sub(n.boot), out...)
}
