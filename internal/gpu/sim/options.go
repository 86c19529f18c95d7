package sim

import (
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"time"

	"k8s.io/utils/clock"
)

// Options configures a simulated node. The zero value is usable: an 8-GPU
// H100 HGX node named "sim-0" on the real clock.
type Options struct {
	// NodeName is the Kubernetes node name; it selects schedule entries and,
	// with Seed, derives UUIDs and serials. Default "sim-0".
	NodeName string
	// GPUs is the number of GPUs, 1–8; 0 means 8.
	GPUs int
	// Model is one of Models(); default "H100-80GB-HBM3".
	Model string
	// Seed makes every generated value reproducible.
	Seed int64
	// Clock drives snapshot times, Xid event times and kernel-log
	// timestamps. A clock.Clock (not only PassiveClock) is needed by Run.
	// Default clock.RealClock{}.
	Clock clock.PassiveClock
	// DriverVersion defaults to "570.133.20". The kernel module starts at
	// the same version.
	DriverVersion string
	// CUDAVersion defaults to the CUDA version that ships with the
	// driver's branch, or "" for a branch the sim does not know.
	CUDAVersion string
	// KernelRelease defaults to "5.15.0-112-generic".
	KernelRelease string
	// NVSwitch says whether the node has NVSwitches and so needs
	// nvidia-fabricmanager. nil means true for 8 GPUs of an SXM model that
	// ships on NVSwitch boards (A100, H100, H200), false otherwise.
	NVSwitch *bool
	// Uptime is how long the simulated kernel has been up when New runs;
	// kernel-log timestamps count from boot. Default 10m.
	Uptime time.Duration
	// KernelLog, when set, receives every kernel-log record as one raw
	// /dev/kmsg line ("prio,seq,usec,-;message\n") in one Write. It is
	// written while the node is locked, so it must not block for long.
	KernelLog io.Writer
	// KernelLogSize is how many records the node keeps for KernelLog(),
	// like the kernel's ring buffer; older ones are dropped. Default 4096.
	KernelLogSize int
	// Fabric is the node's RDMA network (fabric.go); the zero value is
	// none, so Snapshot.Fabric is nil.
	Fabric FabricOptions
	// Schedule holds timed faults; entries for NodeName (or "*") are
	// applied by Snapshot, ApplyDue and Run once their time has come,
	// counted from New.
	Schedule Schedule
}

// model is what the sim knows about one GPU product.
type model struct {
	key        string
	name       string // as NVML / nvidia-smi print it
	deviceID   uint16 // PCI device id (vendor 10de)
	vbios      string
	memMiB     uint64
	powerLimit float64
	idlePower  float64
	maxSM      float64
	idleSM     float64
	memClock   float64
	slowTemp   float64 // default temperature of a thermal-slowdown fault
	pcieGen    uint64
	nvlinks    int
	rowRemap   bool // Ampere and later remap rows; older GPUs retire pages
	recovery   bool // NVML field 230 and gpu_reset_status are reported
	fabric     bool // nvidia-smi's <fabric> block (Hopper and later)
	nvswitch   bool // the 8-GPU board of this model has NVSwitches
}

var models = map[string]model{
	"H100-80GB-HBM3": {
		key: "H100-80GB-HBM3", name: "NVIDIA H100 80GB HBM3", deviceID: 0x2330,
		vbios: "96.00.74.00.1A", memMiB: 81559, powerLimit: 700, idlePower: 70,
		maxSM: 1980, idleSM: 345, memClock: 2619, slowTemp: 90, pcieGen: 5,
		nvlinks: 18, rowRemap: true, recovery: true, fabric: true, nvswitch: true,
	},
	"H200": {
		key: "H200", name: "NVIDIA H200", deviceID: 0x2335,
		vbios: "96.00.A5.00.01", memMiB: 143771, powerLimit: 700, idlePower: 75,
		maxSM: 1980, idleSM: 345, memClock: 3201, slowTemp: 90, pcieGen: 5,
		nvlinks: 18, rowRemap: true, recovery: true, fabric: true, nvswitch: true,
	},
	"A100-SXM4-80GB": {
		key: "A100-SXM4-80GB", name: "NVIDIA A100-SXM4-80GB", deviceID: 0x20b2,
		vbios: "92.00.45.00.06", memMiB: 81920, powerLimit: 400, idlePower: 60,
		maxSM: 1410, idleSM: 210, memClock: 1593, slowTemp: 88, pcieGen: 4,
		nvlinks: 12, rowRemap: true, recovery: true, nvswitch: true,
	},
	// V100 is the one pre-Ampere model: it retires pages instead of
	// remapping rows, so the retired-pages fault has a realistic home.
	"V100-SXM2-32GB": {
		key: "V100-SXM2-32GB", name: "Tesla V100-SXM2-32GB", deviceID: 0x1db5,
		vbios: "88.00.80.00.01", memMiB: 32768, powerLimit: 300, idlePower: 42,
		maxSM: 1530, idleSM: 135, memClock: 877, slowTemp: 87, pcieGen: 3,
		nvlinks: 6,
	},
}

var modelAliases = map[string]string{
	"h100": "H100-80GB-HBM3", "a100": "A100-SXM4-80GB", "v100": "V100-SXM2-32GB",
}

// Models lists the model names Options.Model accepts (short aliases H100,
// A100 and V100 are accepted too).
func Models() []string {
	out := make([]string, 0, len(models))
	for k := range models {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func lookupModel(name string) (model, error) {
	if name == "" {
		name = "H100-80GB-HBM3"
	}
	for k, m := range models {
		if strings.EqualFold(k, name) {
			return m, nil
		}
	}
	if k, ok := modelAliases[strings.ToLower(name)]; ok {
		return models[k], nil
	}
	return model{}, fmt.Errorf("unknown model %q (known: %s)", name, strings.Join(Models(), ", "))
}

// cudaByBranch maps a driver branch to the CUDA version it ships with.
var cudaByBranch = map[string]string{
	"535": "12.2", "550": "12.4", "560": "12.6", "565": "12.7",
	"570": "12.8", "575": "12.9", "580": "13.0",
}

func cudaFor(driver string) string {
	branch, _, _ := strings.Cut(driver, ".")
	return cudaByBranch[branch]
}

var driverVersionRE = regexp.MustCompile(`^[0-9]{2,4}(\.[0-9]{1,4}){1,2}$`)

// withDefaults fills defaults and validates once, so the rest of the
// package can trust the options.
func (o Options) withDefaults() (Options, model, error) {
	if o.NodeName == "" {
		o.NodeName = "sim-0"
	}
	if o.GPUs == 0 {
		o.GPUs = 8
	}
	if o.GPUs < 1 || o.GPUs > len(hgxBusIDs) {
		return o, model{}, fmt.Errorf("GPUs %d out of range 1–%d", o.GPUs, len(hgxBusIDs))
	}
	m, err := lookupModel(o.Model)
	if err != nil {
		return o, model{}, err
	}
	o.Model = m.key
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.DriverVersion == "" {
		o.DriverVersion = "570.133.20"
	}
	if !driverVersionRE.MatchString(o.DriverVersion) {
		return o, model{}, fmt.Errorf("driver version %q: want a form like 570.133.20", o.DriverVersion)
	}
	if o.CUDAVersion == "" {
		o.CUDAVersion = cudaFor(o.DriverVersion)
	}
	if o.KernelRelease == "" {
		o.KernelRelease = "5.15.0-112-generic"
	}
	if o.NVSwitch == nil {
		v := o.GPUs == 8 && m.nvswitch
		o.NVSwitch = &v
	}
	if o.Uptime == 0 {
		o.Uptime = 10 * time.Minute
	}
	if o.Uptime < 0 {
		return o, model{}, fmt.Errorf("uptime %v is negative", o.Uptime)
	}
	if o.KernelLogSize == 0 {
		o.KernelLogSize = 4096
	}
	if o.KernelLogSize < 0 {
		return o, model{}, fmt.Errorf("kernel log size %d is negative", o.KernelLogSize)
	}
	if o.Fabric, err = o.Fabric.withDefaults(); err != nil {
		return o, model{}, err
	}
	return o, m, nil
}
