package diagnose

import (
	"slices"
	"testing"
	"time"

	"github.com/gpuheal/gpuheal/internal/fabric"
	"github.com/gpuheal/gpuheal/internal/finding"
)

func rate(v float64) *float64 { return &v }

func TestFabricFindings(t *testing.T) {
	port := func(state string, gbps float64, counters map[string]uint64) []fabric.Port {
		return []fabric.Port{{Num: 1, State: state, PhysState: "LinkUp", RateGbps: rate(gbps), LinkLayer: "InfiniBand", Counters: counters}}
	}
	s := &fabric.Snapshot{ExpectedDevices: 4, Devices: []fabric.Device{
		{Name: "mlx5_0", Kind: fabric.KindInfiniBand, Ports: port("ACTIVE", 400, map[string]uint64{"symbol_error": 0})},
		{Name: "mlx5_1", Kind: fabric.KindInfiniBand, Ports: port("ACTIVE", 200, nil)},
		{Name: "mlx5_2", Kind: fabric.KindInfiniBand, Ports: port("DOWN", 400, map[string]uint64{"link_downed": 7})},
	}}
	var got []string
	for _, f := range FabricFindings(s, "sysfs", time.Time{}) {
		got = append(got, f.Code+" "+f.Device+" "+string(f.Severity)+" "+f.Message)
	}
	want := []string{
		"FABRIC_DEVICE_MISSING  fatal 3 of 4 RDMA devices present",
		"FABRIC_PORT_DEGRADED_RATE mlx5_1 fatal infiniband port mlx5_1/1 runs at 200 Gb/s, its peers at 400",
		"FABRIC_PORT_DOWN mlx5_2 fatal infiniband port mlx5_2/1 is DOWN/LinkUp",
		"FABRIC_PORT_ERRORS mlx5_2 warning infiniband port mlx5_2/1: link_downed 7",
	}
	if !slices.Equal(got, want) {
		t.Errorf("findings\n%q\nwant\n%q", got, want)
	}
	// Without an expected count a port down may be an unused one.
	s.ExpectedDevices = 0
	for _, f := range FabricFindings(s, "sysfs", time.Time{}) {
		if f.Code == "FABRIC_PORT_DOWN" && f.Severity != finding.Warning {
			t.Errorf("%+v: want a warning without an expected count", f)
		}
	}
}
