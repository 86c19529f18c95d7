// Package host reads node-level NVIDIA facts that no GPU library reports:
// the loaded kernel module, the kernel release, /dev/nvidia* nodes, NVSwitch
// presence and the fabric manager. Every path is resolved under a root (like
// node_exporter's --path.rootfs) so a container that mounts the host at
// /host, and tests with fixture trees, read the same way.
package host

import (
	"path/filepath"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

// Fabric manager states, as gpu.NodeSnapshot.FabricManager spells them.
const (
	FabricManagerRunning      = "running"
	FabricManagerStopped      = "stopped"
	FabricManagerNotInstalled = "not-installed"
)

// DefaultFabricManagerPaths are where distribution packages and NVIDIA's
// .run installer put the binary.
var DefaultFabricManagerPaths = []string{
	"/usr/bin/nv-fabricmanager",
	"/usr/sbin/nv-fabricmanager",
	"/usr/local/bin/nv-fabricmanager",
}

// Options say where the host's file systems are.
type Options struct {
	// Root is the host's / as this process sees it; "" means "/".
	Root string
	// ProcFS and DevFS override Root+"/proc" and Root+"/dev", for
	// deployments that mount only those (hostPath /proc at /host/proc).
	ProcFS string
	DevFS  string
	// FabricManagerPaths are host paths (under Root) where an installed
	// nv-fabricmanager binary may be; nil means DefaultFabricManagerPaths.
	FabricManagerPaths []string
	// FabricManagerState replaces the procfs scan; it is the seam for
	// hosts where the fabric manager runs out of sight (another PID
	// namespace) and for tests.
	FabricManagerState func() (string, error)
}

func (o Options) root() string {
	if o.Root == "" {
		return "/"
	}
	return o.Root
}

func (o Options) procFS() string {
	if o.ProcFS != "" {
		return o.ProcFS
	}
	return filepath.Join(o.root(), "proc")
}

func (o Options) devFS() string {
	if o.DevFS != "" {
		return o.DevFS
	}
	return filepath.Join(o.root(), "dev")
}

// Facts are what Probe found.
type Facts struct {
	// KernelModuleVersion is nvidia.ko's version ("535.54.03"); "" when
	// the module is not loaded.
	KernelModuleVersion string
	// KernelModuleOpen is true for the open GPU kernel modules.
	KernelModuleOpen bool
	KernelRelease    string
	// DeviceNodes are host paths ("/dev/nvidia0"), in natural order.
	DeviceNodes []string
	NVSwitch    bool
	// FabricManager is one of the FabricManager* states, or "" when the
	// node has no NVSwitch and so needs no fabric manager.
	FabricManager string
}

// Probe reads every fact it can; a fact it cannot read stays zero and
// yields a QueryError, so one unreadable file never hides the others.
func Probe(opts Options) (Facts, []gpu.QueryError) {
	var f Facts
	var errs []gpu.QueryError
	fail := func(query string, err error) {
		errs = append(errs, gpu.QueryError{Query: query, Message: err.Error()})
	}

	if v, open, err := readModuleVersion(opts.procFS()); err != nil {
		fail("kernel-module-version", err)
	} else {
		f.KernelModuleVersion, f.KernelModuleOpen = v, open
	}
	if r, err := readKernelRelease(opts.procFS()); err != nil {
		fail("kernel-release", err)
	} else {
		f.KernelRelease = r
	}
	nodes, err := deviceNodes(opts.devFS())
	if err != nil {
		fail("device-nodes", err)
	}
	f.DeviceNodes = nodes

	sw, err := hasNVSwitch(nodes, opts.procFS())
	if err != nil {
		fail("nvswitch", err)
	}
	f.NVSwitch = sw
	if sw {
		state, err := fabricManagerState(opts)
		if err != nil {
			fail("fabric-manager", err)
		}
		f.FabricManager = state
	}
	return f, errs
}

// Fill copies the facts and probe errors into s. Fields Probe could not
// read are left as the GPU backend set them.
func Fill(s *gpu.NodeSnapshot, f Facts, errs []gpu.QueryError) {
	if f.KernelModuleVersion != "" {
		s.KernelModuleVersion = f.KernelModuleVersion
	}
	if f.KernelRelease != "" {
		s.KernelRelease = f.KernelRelease
	}
	if f.DeviceNodes != nil {
		s.DeviceNodes = append([]string(nil), f.DeviceNodes...)
	}
	s.NVSwitch = s.NVSwitch || f.NVSwitch
	if f.FabricManager != "" {
		s.FabricManager = f.FabricManager
	}
	s.Errors = append(s.Errors, errs...)
}
