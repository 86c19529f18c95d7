package sim

import (
	"bytes"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gpuheal/gpuheal/internal/fabric"
	"github.com/gpuheal/gpuheal/internal/gpu"
)

var (
	ib8  = Options{Fabric: FabricOptions{Devices: InfiniBandDevices}}
	efa  = Options{Fabric: FabricOptions{Devices: EFADevicesP5, Kind: fabric.KindEFA}}
	noHW = cmp.Options{cmpopts.IgnoreFields(fabric.Port{}, "Counters", "HWCounters"), cmpopts.IgnoreFields(fabric.Device{}, "HWCounters")}
)

// A node without Options.Fabric reads as before the sim had one.
func TestFabricOffByDefault(t *testing.T) {
	n, _ := newTestNode(t, Options{})
	if f := snapshot(t, n).Fabric; f != nil {
		t.Errorf("default node has a fabric: %+v", f)
	}
}

func TestFabricInfiniBand(t *testing.T) {
	n, _ := newTestNode(t, ib8)
	s := snapshot(t, n)
	if s.Fabric.ExpectedDevices != 8 || len(s.Fabric.Devices) != 8 || s.Fabric.Errors != nil {
		t.Fatalf("expected %d, %d devices, errors %v", s.Fabric.ExpectedDevices, len(s.Fabric.Devices), s.Fabric.Errors)
	}
	d := s.Fabric.Devices[3]
	want := fabric.Device{
		Name: "mlx5_3", Driver: "mlx5_core", Kind: fabric.KindInfiniBand, PCIBusID: "0000:5e:00.0",
		BoardID: "MT_0000000838", FirmwareVersion: "28.41.1000", NodeGUID: d.NodeGUID,
		Ports: []fabric.Port{{Num: 1, State: "ACTIVE", PhysState: "LinkUp", RateGbps: gpu.F64(400), LinkLayer: "InfiniBand"}},
	}
	if diff := cmp.Diff(want, d, noHW); diff != "" {
		t.Errorf("mlx5_3 (-want +got):\n%s", diff)
	}
	guidRE := regexp.MustCompile(`^0c42:a103:00[0-9a-f]{2}:[0-9a-f]{4}$`)
	guids, buses := map[string]bool{}, map[string]bool{}
	for i, d := range s.Fabric.Devices {
		p := d.Ports[0]
		if d.Name != "mlx5_"+strconv.Itoa(i) || !guidRE.MatchString(d.NodeGUID) || guids[d.NodeGUID] || buses[d.PCIBusID] {
			t.Errorf("device %d: name %s, GUID %s, bus %s (repeated?)", i, d.Name, d.NodeGUID, d.PCIBusID)
		}
		guids[d.NodeGUID], buses[d.PCIBusID] = true, true
		if slices.Contains(hgxBusIDs, d.PCIBusID) {
			t.Errorf("%s sits at GPU address %s", d.Name, d.PCIBusID)
		}
		if diff := cmp.Diff(ibCounterNames, slices.Sorted(maps.Keys(p.Counters))); diff != "" {
			t.Errorf("%s counters (-want +got):\n%s", d.Name, diff)
		}
		if diff := cmp.Diff(mlx5HWCounterNames, slices.Sorted(maps.Keys(p.HWCounters))); diff != "" {
			t.Errorf("%s hw_counters (-want +got):\n%s", d.Name, diff)
		}
		if got := faultCounts(p); len(got) != 0 {
			t.Errorf("%s: error counters on a healthy port: %v", d.Name, got)
		}
	}
}

func TestFabricEFA(t *testing.T) {
	tests := []struct {
		devices int
		first   []string // the first names, in name order as sysfs lists them
	}{
		{32, []string{"rdmap112s0", "rdmap113s0", "rdmap114s0"}},
		{16, []string{"rdmap112s0", "rdmap114s0", "rdmap128s0"}},
		{4, []string{"rdmap112s0", "rdmap147s0", "rdmap180s0", "rdmap79s0"}},
	}
	for _, tc := range tests {
		n, _ := newTestNode(t, Options{Fabric: FabricOptions{Devices: tc.devices, Kind: fabric.KindEFA}})
		f := snapshot(t, n).Fabric
		var names []string
		for _, d := range f.Devices {
			names = append(names, d.Name)
			want := fabric.Device{Name: d.Name, Driver: "efa", Kind: fabric.KindEFA, PCIBusID: d.PCIBusID,
				Ports: []fabric.Port{{Num: 1, State: "ACTIVE", PhysState: "LinkUp", RateGbps: gpu.F64(100), LinkLayer: "Unknown"}}}
			if diff := cmp.Diff(want, d, noHW); diff != "" {
				t.Errorf("%d devices: %s (-want +got):\n%s", tc.devices, d.Name, diff)
			}
			p := d.Ports[0]
			if p.Counters != nil || !slices.Equal(efaCounterNames, slices.Sorted(maps.Keys(p.HWCounters))) {
				t.Errorf("%s: counters %v, hw_counters %v", d.Name, p.Counters, slices.Sorted(maps.Keys(p.HWCounters)))
			}
			// Up 10m: 600 keep-alives, no admin queue errors.
			if len(d.HWCounters) != len(efaDeviceCounterNames) || d.HWCounters["keep_alive_rcvd"] != 600 || d.HWCounters["no_completion_cmds"] != 0 {
				t.Errorf("%s: device hw_counters %v", d.Name, d.HWCounters)
			}
		}
		if f.ExpectedDevices != tc.devices || len(names) != tc.devices || !slices.IsSorted(names) ||
			!slices.Equal(tc.first, names[:len(tc.first)]) {
			t.Errorf("%d devices: expected %d, names %v", tc.devices, f.ExpectedDevices, names)
		}
	}
}

// Byte and packet counters advance every second, never back, the same
// for the same seed and name; other seeds move other amounts.
func TestFabricTraffic(t *testing.T) {
	read := func(opts Options, name string) []uint64 {
		n, clk := newTestNode(t, opts)
		var out []uint64
		for range 30 {
			clk.Step(time.Second)
			for _, d := range snapshot(t, n).Fabric.Devices {
				if p := d.Ports[0]; p.Counters != nil {
					out = append(out, p.Counters[name])
				} else {
					out = append(out, p.HWCounters[name])
				}
			}
		}
		return out
	}
	for _, tc := range []struct {
		opts    Options
		name    string
		devices int
	}{{ib8, "port_xmit_data", 8}, {efa, "rx_bytes", 32}} {
		a := read(tc.opts, tc.name)
		for i := tc.devices; i < len(a); i++ {
			if a[i] <= a[i-tc.devices] {
				t.Fatalf("%s of device %d went from %d to %d in a second", tc.name, i%tc.devices, a[i-tc.devices], a[i])
			}
		}
		if per := a[len(a)-1] - a[len(a)-1-tc.devices]; per < 1e8 {
			t.Errorf("%s rose %d in a second", tc.name, per)
		}
		if b := read(tc.opts, tc.name); !slices.Equal(a, b) {
			t.Errorf("%s differs between runs of one seed", tc.name)
		}
		other := tc.opts
		other.Seed = 9
		if slices.Equal(a, read(other, tc.name)) {
			t.Errorf("%s is the same for another seed", tc.name)
		}
	}
}

func TestFabricOptionsRejected(t *testing.T) {
	for _, tc := range []struct {
		f    FabricOptions
		want string
	}{
		{FabricOptions{Devices: 9}, "sim: fabric: 9 infiniband devices out of range 0–8"},
		{FabricOptions{Devices: 33, Kind: fabric.KindEFA}, "sim: fabric: 33 efa devices out of range 0–32"},
		{FabricOptions{Devices: -1}, "sim: fabric: -1 infiniband devices out of range 0–8"},
		{FabricOptions{Devices: 2, Kind: "omnipath"}, `sim: fabric kind "omnipath": want infiniband or efa`},
	} {
		if _, err := New(Options{Fabric: tc.f}); err == nil || err.Error() != tc.want {
			t.Errorf("New(%+v) = %v, want %s", tc.f, err, tc.want)
		}
	}
}

// Faults and all, two runs give the same bytes.
func TestFabricDeterminism(t *testing.T) {
	run := func() []byte {
		n, clk := newTestNode(t, ib8)
		var out []byte
		for _, f := range []Fault{
			{Kind: KindFabricLinkFlap, Params: params{"device": "1", "every": "7s"}},
			{Kind: KindFabricPortDown, Params: params{"device": "6"}},
			{Kind: KindFabricSymbolErrors, Params: params{"device": "2", "rate": "0.5"}},
		} {
			clk.Step(1300 * time.Millisecond)
			if err := n.Inject(f); err != nil {
				t.Fatal(err)
			}
			out = append(out, snapshotJSON(t, n)...)
		}
		clk.Step(time.Hour)
		return append(append(out, snapshotJSON(t, n)...), FormatRaw(n.KernelLog(0))...)
	}
	if a, b := run(), run(); !bytes.Equal(a, b) {
		t.Error("two runs differ")
	}
}
