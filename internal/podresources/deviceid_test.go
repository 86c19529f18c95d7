package podresources

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The IDs are the forms NVIDIA/k8s-device-plugin hands the kubelet
// (internal/rm/devices.go: AnnotatedID "<id>::<replica>"; MIG indices
// "<gpu>:<mig>"; MIG UUIDs of the R450 "MIG-GPU-<uuid>/<gi>/<ci>" and R470+
// "MIG-<uuid>" forms).
func TestParseDeviceID(t *testing.T) {
	t.Parallel()
	const u = "GPU-3c2a1f9e-7b4d-4e21-9a0c-5d6e7f8a9b0c"
	for _, tc := range []struct {
		res, id string
		want    DeviceID
	}{
		{"nvidia.com/gpu", u, DeviceID{GPU: u, Replica: -1}},
		{"nvidia.com/gpu", u + "::7", DeviceID{GPU: u, Replica: 7}},
		{"nvidia.com/gpu.shared", u + "::0", DeviceID{GPU: u, Replica: 0}},
		{"nvidia.com/gpu", "3", DeviceID{GPU: "3", Replica: -1}},
		{"nvidia.com/gpu", "3::2", DeviceID{GPU: "3", Replica: 2}},
		{"nvidia.com/gpu", "3:1", DeviceID{GPU: "3", Replica: -1, MIG: true}},
		{"nvidia.com/mig-1g.10gb", "MIG-" + u + "/7/0", DeviceID{GPU: u, Replica: -1, MIG: true}},
		{"nvidia.com/mig-1g.10gb", "MIG-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", DeviceID{Replica: -1, MIG: true}},
		{"nvidia.com/mig-1g.10gb.shared", "MIG-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee::1", DeviceID{Replica: 1, MIG: true}},
	} {
		got, err := ParseDeviceID(tc.res, tc.id)
		if err != nil {
			t.Errorf("ParseDeviceID(%q, %q): %v", tc.res, tc.id, err)
			continue
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("ParseDeviceID(%q, %q) (-want +got):\n%s", tc.res, tc.id, d)
		}
	}
}

func TestParseDeviceIDRejects(t *testing.T) {
	t.Parallel()
	for id, want := range map[string]string{
		"GPU-3c2a1f9e::x":        "replica \"x\" is not a number",
		"GPU-3c2a1f9e::1":        "not a GPU UUID",
		"GPU-3c2a::-1":           "replica \"-1\" is not a number",
		"3::01":                  "replica \"01\"",
		"03":                     "not a GPU UUID",
		"3:x":                    "want <gpu index>:<mig index>",
		"MIG-GPU-abc/1/0":        "want MIG-GPU-<uuid>/<gi>/<ci>",
		"":                       "not a GPU UUID",
		strings.Repeat("a", 300): "at most 256",
	} {
		_, err := ParseDeviceID("nvidia.com/gpu", id)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseDeviceID(%.20q) = %v, want an error containing %q", id, err, want)
		}
	}
}

// FuzzParseDeviceID: any ID the socket sends parses or is refused, never
// panics, and a parsed one names a GPU, a MIG device, or both.
func FuzzParseDeviceID(f *testing.F) {
	for _, s := range []string{"GPU-3c2a1f9e-7b4d-4e21-9a0c-5d6e7f8a9b0c::3", "3:1", "MIG-GPU-3c2a1f9e-7b4d-4e21-9a0c-5d6e7f8a9b0c/1/0", "7", "::", "MIG-"} {
		f.Add("nvidia.com/gpu", s)
	}
	f.Fuzz(func(t *testing.T, res, id string) {
		d, err := ParseDeviceID(res, id)
		if err != nil {
			return
		}
		if d.GPU == "" && !d.MIG {
			t.Fatalf("ParseDeviceID(%q, %q) = %+v: neither a GPU nor a MIG device", res, id, d)
		}
		if d.Replica >= 0 && !strings.Contains(id, "::") {
			t.Fatalf("ParseDeviceID(%q, %q) = %+v: a replica the ID does not carry", res, id, d)
		}
	})
}
