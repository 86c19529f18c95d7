package remediation

import (
	"testing"

	resourcev1 "k8s.io/api/resource/v1"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// A DRA device is the GPU by its UUID, in the driver's domain or not, else
// by its PCI bus id whatever the width of its domain; a UUID that differs
// decides against it even when the bus id matches.
func TestDeviceIsGPU(t *testing.T) {
	str := func(s string) resourcev1.DeviceAttribute { return resourcev1.DeviceAttribute{StringValue: &s} }
	gpu := v1alpha1.GPURef{Index: 3, UUID: "GPU-abc", BusID: "00000000:1B:00.0"}
	cases := []struct {
		name  string
		attrs map[resourcev1.QualifiedName]resourcev1.DeviceAttribute
		want  bool
	}{
		{"uuid", map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"uuid": str("gpu-ABC")}, true},
		{"qualified uuid", map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"gpu.nvidia.com/uuid": str("GPU-abc")}, true},
		{"other uuid, same bus", map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"uuid": str("GPU-def"), "pcieBusID": str("0000:1b:00.0")}, false},
		{"bus id only", map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"pcieBusID": str("0000:1b:00.0")}, true},
		{"other bus", map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"pcieBusID": str("0000:2b:00.0")}, false},
		{"nothing", nil, false},
	}
	for _, c := range cases {
		if got := deviceIsGPU("gpu.nvidia.com", c.attrs, gpu); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// A device taint's value keeps a label value's alphabet and length.
func TestTaintValue(t *testing.T) {
	if got := taintValue("Nvidia XID 95: uncontained!"); got != "NvidiaXID95uncontained" {
		t.Errorf("taintValue = %q", got)
	}
	long := ""
	for range 70 {
		long += "a"
	}
	if got := taintValue(long + "-"); len(got) != 63 {
		t.Errorf("taintValue of 71 characters has %d, want 63", len(got))
	}
}
