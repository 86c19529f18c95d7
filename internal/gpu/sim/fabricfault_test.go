package sim

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuheal/gpuheal/internal/fabric"
	"github.com/gpuheal/gpuheal/internal/gpu"
)

// trafficNames are the counters that move with traffic; every other
// counter counts errors or events.
var trafficNames = []string{
	"port_rcv_data", "port_xmit_data", "port_rcv_packets", "port_xmit_packets",
	"unicast_rcv_packets", "unicast_xmit_packets", "rx_write_requests", "rx_read_requests",
	"rx_bytes", "tx_bytes", "rx_pkts", "tx_pkts", "rdma_read_bytes", "rdma_read_resp_bytes",
	"rdma_read_wrs", "send_bytes", "recv_bytes", "send_wrs", "recv_wrs",
}

// faultCounts are the port's non-zero error and event counters, from
// counters and hw_counters both.
func faultCounts(p fabric.Port) map[string]uint64 {
	out := map[string]uint64{}
	for _, m := range []map[string]uint64{p.Counters, p.HWCounters} {
		for k, v := range m {
			if v != 0 && !slices.Contains(trafficNames, k) {
				out[k] = v
			}
		}
	}
	return out
}

// rdmaDev is the listed device of that name, or nil.
func rdmaDev(s *gpu.NodeSnapshot, name string) *fabric.Device {
	for i := range s.Fabric.Devices {
		if s.Fabric.Devices[i].Name == name {
			return &s.Fabric.Devices[i]
		}
	}
	return nil
}

func upPort(rate float64, layer string) fabric.Port {
	return fabric.Port{Num: 1, State: "ACTIVE", PhysState: "LinkUp", RateGbps: gpu.F64(rate), LinkLayer: layer}
}

func TestFabricFaults(t *testing.T) {
	ibUp := upPort(400, "InfiniBand")
	tests := []struct {
		name   string
		opts   Options
		fault  Fault
		after  time.Duration // read this long after the injection
		dev    string
		port   *fabric.Port // nil: the device is not listed
		counts map[string]uint64
		log    []logLine
	}{
		{name: "port down", opts: ib8, fault: Fault{Kind: KindFabricPortDown, Params: params{"device": "3"}}, after: 30 * time.Second,
			dev: "mlx5_3", port: &fabric.Port{Num: 1, State: "DOWN", PhysState: "Polling", RateGbps: gpu.F64(10), LinkLayer: "InfiniBand"},
			counts: map[string]uint64{"link_downed": 1},
			log:    []logLine{li("mlx5_core 0000:5e:00.0: mlx5_port_module_event:1131:(pid 0): Port module event: module 0, Cable unplugged")}},
		{name: "flap at once", opts: ib8, fault: Fault{Kind: KindFabricLinkFlap, Params: params{"device": "1"}},
			dev: "mlx5_1", port: &ibUp, counts: map[string]uint64{"link_downed": 1}},
		{name: "flap after 2m30s", opts: ib8, fault: Fault{Kind: KindFabricLinkFlap, Params: params{"device": "1"}}, after: 150 * time.Second,
			dev: "mlx5_1", port: &ibUp, counts: map[string]uint64{"link_downed": 3}},
		{name: "flap ends after its times", opts: ib8, fault: Fault{Kind: KindFabricLinkFlap, Params: params{"device": "1"}}, after: time.Hour,
			dev: "mlx5_1", port: &ibUp, counts: map[string]uint64{"link_downed": 5}},
		{name: "flap every 10s twice", opts: ib8, fault: Fault{Kind: KindFabricLinkFlap, Params: params{"every": "10s", "times": "2"}}, after: time.Minute,
			dev: "mlx5_0", port: &ibUp, counts: map[string]uint64{"link_downed": 2}},
		{name: "link_downed holds at 255", opts: ib8, fault: Fault{Kind: KindFabricLinkFlap, Params: params{"every": "1s", "times": "1000"}}, after: time.Hour,
			dev: "mlx5_0", port: &ibUp, counts: map[string]uint64{"link_downed": 255}},
		{name: "symbol errors", opts: ib8, fault: Fault{Kind: KindFabricSymbolErrors, Params: params{"device": "2"}}, after: 10 * time.Second,
			dev: "mlx5_2", port: &ibUp, counts: map[string]uint64{"symbol_error": 50}},
		{name: "slow symbol errors", opts: ib8, fault: Fault{Kind: KindFabricSymbolErrors, Params: params{"device": "7", "rate": "0.5"}}, after: time.Minute,
			dev: "mlx5_7", port: &ibUp, counts: map[string]uint64{"symbol_error": 30}},
		{name: "symbol_error holds at 65535", opts: ib8, fault: Fault{Kind: KindFabricSymbolErrors, Params: params{"rate": "1000"}}, after: 2 * time.Minute,
			dev: "mlx5_0", port: &ibUp, counts: map[string]uint64{"symbol_error": 65535}},
		{name: "degraded rate", opts: ib8, fault: Fault{Kind: KindFabricDegradedRate, Params: params{"device": "5"}}, after: 10 * time.Second,
			dev: "mlx5_5", port: ptr(upPort(200, "InfiniBand")), counts: map[string]uint64{}},
		{name: "degraded to 100", opts: ib8, fault: Fault{Kind: KindFabricDegradedRate, Params: params{"device": "5", "rate": "100"}},
			dev: "mlx5_5", port: ptr(upPort(100, "InfiniBand")), counts: map[string]uint64{}},
		{name: "device missing", opts: ib8, fault: Fault{Kind: KindFabricDeviceMissing, Params: params{"device": "4"}}, dev: "mlx5_4"},
		{name: "efa device missing", opts: efa, fault: Fault{Kind: KindFabricDeviceMissing}, dev: "rdmap79s0"},
		{name: "efa errors", opts: efa, fault: Fault{Kind: KindEFAErrors}, after: 10 * time.Second,
			dev: "rdmap79s0", port: ptr(upPort(100, "Unknown")), counts: map[string]uint64{"retrans_timeout_events": 10}},
		{name: "efa impaired connections", opts: efa, fault: Fault{Kind: KindEFAErrors, Params: params{"device": "31", "counter": "impaired_remote_conn_events", "rate": "2"}},
			after: 5 * time.Second, dev: "rdmap200s0", port: ptr(upPort(100, "Unknown")), counts: map[string]uint64{"impaired_remote_conn_events": 10}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, clk := newTestNode(t, tc.opts)
			clean := snapshot(t, n)
			if err := n.Inject(tc.fault); err != nil {
				t.Fatal(err)
			}
			clk.Step(tc.after)
			s := snapshot(t, n)
			if s.Fabric.ExpectedDevices != tc.opts.Fabric.Devices {
				t.Errorf("expected devices %d", s.Fabric.ExpectedDevices)
			}
			d := rdmaDev(s, tc.dev)
			switch {
			case tc.port == nil && d != nil:
				t.Errorf("%s still listed", tc.dev)
			case tc.port == nil && len(s.Fabric.Devices) != tc.opts.Fabric.Devices-1:
				t.Errorf("%d devices listed", len(s.Fabric.Devices))
			case tc.port != nil:
				if diff := cmp.Diff(*tc.port, d.Ports[0], noHW); diff != "" {
					t.Errorf("%s port (-want +got):\n%s", tc.dev, diff)
				}
				if diff := cmp.Diff(tc.counts, faultCounts(d.Ports[0])); diff != "" {
					t.Errorf("%s error counters (-want +got):\n%s", tc.dev, diff)
				}
			}
			// Every other device reads as healthy as before.
			for _, o := range s.Fabric.Devices {
				if o.Name == tc.dev {
					continue
				}
				if diff := cmp.Diff(rdmaDev(clean, o.Name), &o, noHW); diff != "" || len(faultCounts(o.Ports[0])) != 0 {
					t.Errorf("%s changed too (-clean +got):\n%s%v", o.Name, diff, faultCounts(o.Ports[0]))
				}
			}
			if diff := cmp.Diff(tc.log, logLines(n.KernelLog(0))); diff != "" {
				t.Errorf("kernel log (-want +got):\n%s", diff)
			}
			if s.FoundGPUs != 8 || len(s.Errors) != 0 {
				t.Errorf("the GPUs were touched: found %d, errors %v", s.FoundGPUs, s.Errors)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestFabricFaultsRejected(t *testing.T) {
	tests := []struct {
		name  string
		opts  Options
		fault Fault
		want  string
	}{
		{"no fabric", Options{}, Fault{Kind: KindFabricPortDown}, "sim: fault fabric-port-down: node sim-0 has no RDMA fabric"},
		{"device beyond node", ib8, Fault{Kind: KindFabricSymbolErrors, Params: params{"device": "8"}}, `sim: fault fabric-symbol-errors: param "device": node sim-0 has RDMA devices 0–7`},
		{"device beyond any node", efa, Fault{Kind: KindEFAErrors, Params: params{"device": "32"}}, `sim: fault efa-errors: param "device": bad value "32": want 0–31`},
		{"efa errors on InfiniBand", ib8, Fault{Kind: KindEFAErrors}, "sim: fault efa-errors: node sim-0 has InfiniBand devices, not EFA"},
		{"port down on EFA", efa, Fault{Kind: KindFabricPortDown}, "sim: fault fabric-port-down: EFA devices report a fixed port state and rate and no port counters (use efa-errors or fabric-device-missing)"},
		{"flap on EFA", efa, Fault{Kind: KindFabricLinkFlap}, "sim: fault fabric-link-flap: EFA devices report a fixed port state and rate and no port counters (use efa-errors or fabric-device-missing)"},
		{"rate not lower", ib8, Fault{Kind: KindFabricDegradedRate, Params: params{"rate": "400"}}, `sim: fault fabric-degraded-rate: param "rate": 400 Gb/s is not below the port's 400`},
		{"rate out of range", ib8, Fault{Kind: KindFabricDegradedRate, Params: params{"rate": "0"}}, `sim: fault fabric-degraded-rate: param "rate": bad value "0": want 1–800`},
		{"flap too often", ib8, Fault{Kind: KindFabricLinkFlap, Params: params{"every": "100ms"}}, `sim: fault fabric-link-flap: param "every": bad value "100ms": want at least 1s`},
		{"flap every forever", ib8, Fault{Kind: KindFabricLinkFlap, Params: params{"every": "soon"}}, `sim: fault fabric-link-flap: param "every": bad value "soon": want a duration like "30m"`},
		{"no flaps", ib8, Fault{Kind: KindFabricLinkFlap, Params: params{"times": "0"}}, `sim: fault fabric-link-flap: param "times": bad value "0": want 1–1000`},
		{"unknown EFA counter", efa, Fault{Kind: KindEFAErrors, Params: params{"counter": "rx_drops"}}, `sim: fault efa-errors: param "counter": bad value "rx_drops": want one of retrans_timeout_events, impaired_remote_conn_events, unresponsive_remote_events, rdma_read_wr_err, rdma_write_wr_err`},
		{"unknown param", ib8, Fault{Kind: KindFabricDeviceMissing, Params: params{"gpu": "1"}}, `sim: fault fabric-device-missing: unknown param "gpu" (allowed: device)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, _ := newTestNode(t, tc.opts)
			before := snapshotJSON(t, n)
			if err := n.Inject(tc.fault); err == nil || err.Error() != tc.want {
				t.Fatalf("Inject error = %v\nwant %s", err, tc.want)
			}
			if after := snapshotJSON(t, n); string(after) != string(before) || len(n.KernelLog(0)) != 0 {
				t.Error("a rejected fault changed the node")
			}
		})
	}
}
