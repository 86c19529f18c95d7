package podresources

import (
	"fmt"
	"strconv"
	"strings"
)

// NVIDIA's device-plugin resources. Time-slicing with renameByDefault
// appends ".shared" to the name; the mixed MIG strategy names one resource
// per profile (nvidia.com/mig-1g.10gb).
const (
	ResourceGPU       = "nvidia.com/gpu"
	resourceMIGPrefix = "nvidia.com/mig-"
	sharedSuffix      = ".shared"
	// replicaSep joins a device ID and its replica number: the device
	// plugin's AnnotatedID ("GPU-…::3") for time-slicing and MPS.
	replicaSep = "::"
)

// maxDeviceIDLen bounds an ID from the socket; real ones are under 60
// characters (a MIG UUID of the old form is the longest).
const maxDeviceIDLen = 256

// DeviceID is one device ID the kubelet reported, taken apart.
type DeviceID struct {
	// GPU names the physical GPU: a UUID ("GPU-…") or an index ("3"); ""
	// for a MIG device whose UUID does not name its parent (the form of
	// R470 drivers and later, "MIG-<uuid>").
	GPU string
	// Replica is the time-slicing or MPS replica number, -1 for none.
	Replica int
	// MIG is set for a MIG instance (the pod holds a slice of GPU).
	MIG bool
}

// IsNVIDIAResource says whether a device-plugin resource is one of
// NVIDIA's GPU resources (whole, shared or MIG).
func IsNVIDIAResource(name string) bool {
	base := strings.TrimSuffix(name, sharedSuffix)
	return base == ResourceGPU || strings.HasPrefix(base, resourceMIGPrefix)
}

// ParseDeviceID takes apart id, a device ID the kubelet reported under the
// NVIDIA resource resource.
func ParseDeviceID(resource, id string) (DeviceID, error) {
	if len(id) > maxDeviceIDLen {
		return DeviceID{}, fmt.Errorf("device ID of %s: %d bytes, want at most %d", resource, len(id), maxDeviceIDLen)
	}
	d := DeviceID{Replica: -1, MIG: strings.HasPrefix(strings.TrimSuffix(resource, sharedSuffix), resourceMIGPrefix)}
	base := id
	if b, r, ok := strings.Cut(id, replicaSep); ok {
		n, err := strconv.Atoi(r)
		if err != nil || n < 0 || r != strconv.Itoa(n) {
			return DeviceID{}, fmt.Errorf("device ID %q of %s: replica %q is not a number", id, resource, r)
		}
		base, d.Replica = b, n
	}
	switch {
	case strings.HasPrefix(base, "GPU-") && isUUIDTail(base[len("GPU-"):]):
		d.GPU = base
	case strings.HasPrefix(base, "MIG-GPU-"):
		// Before R470: MIG-GPU-<parent uuid>/<gpu instance>/<compute instance>.
		parent, rest, ok := strings.Cut(base[len("MIG-"):], "/")
		gi, ci, ok2 := strings.Cut(rest, "/")
		if !ok || !ok2 || !isUUIDTail(parent[len("GPU-"):]) || !isIndex(gi) || !isIndex(ci) {
			return DeviceID{}, fmt.Errorf("device ID %q of %s: want MIG-GPU-<uuid>/<gi>/<ci>", id, resource)
		}
		d.GPU, d.MIG = parent, true
	case strings.HasPrefix(base, "MIG-") && isUUIDTail(base[len("MIG-"):]):
		d.MIG = true // the parent is not in the name
	case isIndex(base):
		d.GPU = base
	case strings.Contains(base, ":"):
		// The index strategy's MIG device: <gpu index>:<mig index>.
		gpu, mig, _ := strings.Cut(base, ":")
		if !isIndex(gpu) || !isIndex(mig) {
			return DeviceID{}, fmt.Errorf("device ID %q of %s: want <gpu index>:<mig index>", id, resource)
		}
		d.GPU, d.MIG = gpu, true
	default:
		return DeviceID{}, fmt.Errorf("device ID %q of %s: not a GPU UUID, MIG UUID or GPU index", id, resource)
	}
	return d, nil
}

// isIndex accepts a decimal index without sign or leading zeros.
func isIndex(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n >= 0 && s == strconv.Itoa(n)
}

// isUUIDTail accepts the 8-4-4-4-12 hex form NVML prints after "GPU-" or
// "MIG-".
func isUUIDTail(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
				return false
			}
		}
	}
	return true
}
