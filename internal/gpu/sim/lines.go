package sim

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

// The kernel-log texts below follow lines seen in the wild (see
// NVIDIA's Xid catalog (internal/xid) and the fixtures); parsers are tested
// against what the sim writes, so keep them byte-exact.

// whoStyle is how an Xid line names the process: most codes print
// "pid=…, name=…, ", row-remap and contained/uncontained ECC codes print
// only "pid=…, ", and recovery-action and NVLink5 codes print neither.
type whoStyle int

const (
	whoPidName whoStyle = iota
	whoPid
	whoNone
)

type xidTemplate struct {
	who whoStyle
	msg string // {gpu} is replaced by the GPU index
}

var xidTemplates = map[uint64]xidTemplate{
	13:  {whoPidName, "Graphics SM Warp Exception on (GPC 0, TPC 0, SM 0): Out Of Range Address"},
	31:  {whoPidName, "Ch 00000008, intr 10000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f2a_3c000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ"},
	43:  {whoPidName, "Ch 00000008"},
	45:  {whoPidName, "Ch 00000008"},
	48:  {whoPidName, "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 0, subpartition 0."},
	63:  {whoPid, "Row Remapper: New row marked for remapping, reset gpu to activate."},
	64:  {whoPid, "Row Remapper Error: (0x00000005d28c03a0) - All reserved rows for bank are remapped"},
	74:  {whoPidName, "NVLink: fatal error detected on link 0(0x10000, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)"},
	79:  {whoPidName, "GPU has fallen off the bus."},
	92:  {whoPidName, "High single-bit ECC error rate"},
	94:  {whoPid, "Contained: CE User Channel (0x9). RST: No, D-RST: No"},
	95:  {whoPid, "Uncontained: LTC TAG (0x2, 0x1). RST: Yes, D-RST: No"},
	119: {whoPidName, "Timeout after 6s of waiting for RPC response from GPU{gpu} GSP! Expected function 76 (GSP_RM_CONTROL) (0x20801813 0x4c)."},
	149: {whoNone, "NETIR_LINK_EVT  Fatal   XC0 i0 Link 01 (0x021425c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)"},
	154: {whoNone, ""}, // built from the actions, see recoveryMsg
}

// xidLine renders "NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>',
// name=<unknown>, GPU has fallen off the bus.". An empty msg takes the
// code's template; empty pid and name print as the driver's <unknown>.
func xidLine(g *gpuState, code uint64, pid, name, msg string) string {
	t, known := xidTemplates[code]
	if !known {
		t = xidTemplate{whoPidName, "simulated Xid"}
	}
	if msg == "" {
		msg = strings.ReplaceAll(t.msg, "{gpu}", strconv.Itoa(g.index))
	}
	if pid == "" {
		pid = "'<unknown>'"
	}
	if name == "" {
		name = "<unknown>"
	}
	var who string
	switch t.who {
	case whoPidName:
		who = "pid=" + pid + ", name=" + name + ", "
	case whoPid:
		who = "pid=" + pid + ", "
	}
	return fmt.Sprintf("NVRM: Xid (PCI:%s): %d, %s%s", g.kernelBus(), code, who, msg)
}

func recoveryMsg(from, to gpu.RecoveryAction) string {
	return fmt.Sprintf("GPU recovery action changed from %#x (%s) to %#x (%s)",
		uint64(from), from, uint64(to), to)
}

// fellOffBusMsg is the driver's multi-line report, one printk.
func fellOffBusMsg(g *gpuState, deviceID uint16) string {
	return fmt.Sprintf("NVRM: The NVIDIA GPU %s\n"+
		"NVRM: (PCI ID: 10de:%04x) installed in this system has\n"+
		"NVRM: fallen off the bus and is not responding to commands.", g.bus, deviceID)
}

// apiMismatchMsg is what the kernel module prints when user space of one
// driver version talks to a kernel module of another; one printk.
func apiMismatchMsg(client, module string) string {
	return fmt.Sprintf("NVRM: API mismatch: the client has the version %s, but\n"+
		"NVRM: this kernel module has the version %s.  Please\n"+
		"NVRM: make sure that this kernel module and all NVIDIA driver\n"+
		"NVRM: components have the same version.", client, module)
}

// aerError is one correctable AER status bit as Linux names it.
type aerError struct {
	bit   int
	name  string
	layer string
}

var (
	aerRxErr  = aerError{0, "RxErr", "Physical Layer"}
	aerBadTLP = aerError{6, "BadTLP", "Data Link Layer"}
)

// aerLines renders one corrected-error report the way Linux 5.x/6.x
// aer.c prints it: the root port's notice, then the device's decode.
func aerLines(g *gpuState, deviceID uint16, e aerError) []line {
	dev := "nvidia " + g.bus + ": "
	return []line{
		info(fmt.Sprintf("pcieport %s: AER: Corrected error received: %s", g.upstreamPort(), g.bus)),
		warn(dev + "PCIe Bus Error: severity=Corrected, type=" + e.layer + ", (Receiver ID)"),
		warn(fmt.Sprintf("%s  device [10de:%04x] error status/mask=%08x/00002000", dev, deviceID, 1<<e.bit)),
		warn(fmt.Sprintf("%s   [%2d] %-22s (First)", dev, e.bit, e.name)),
	}
}

// pcieLaneMbps is Linux's PCIE_SPEED2MBS_ENC: usable Mb/s per lane after
// encoding overhead (8b/10b, then 128b/130b), by generation 1–5.
var pcieLaneMbps = [...]uint64{0, 2000, 4000, 7876, 15753, 31507}

var pcieSpeed = [...]string{"", "2.5 GT/s", "5.0 GT/s", "8.0 GT/s", "16.0 GT/s", "32.0 GT/s"}

// downtrainLine is the PCI core's report of a link running below its
// capability; nil when the link is not slower (the kernel says nothing).
func downtrainLine(g *gpuState, gen, width, maxGen, maxWidth uint64) []line {
	avail, capab := pcieLaneMbps[gen]*width, pcieLaneMbps[maxGen]*maxWidth
	if avail >= capab {
		return nil
	}
	return []line{info(fmt.Sprintf(
		"pci %s: %d.%03d Gb/s available PCIe bandwidth, limited by %s PCIe x%d link at %s (capable of %d.%03d Gb/s with %s PCIe x%d link)",
		g.bus, avail/1000, avail%1000, pcieSpeed[gen], width, g.upstreamPort(),
		capab/1000, capab%1000, pcieSpeed[maxGen], maxWidth))}
}
