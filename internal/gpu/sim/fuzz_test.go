package sim

import (
	"bytes"
	"testing"
	"time"
)

// FuzzLoadSchedule feeds arbitrary bytes to the schedule parser: it must
// never panic, and whatever it accepts must hold the invariants the
// runner relies on.
func FuzzLoadSchedule(f *testing.F) {
	for _, seed := range []string{
		demoSchedule,
		"",
		"[]",
		"- at: 1s\n  fault: sbe",
		"- after: 1m\n  node: '*'\n  gpu: 7\n  fault: nvlink-errors\n  params: {link: 17, crc: 5, replay: 2}",
		"- at: 0s\n  fault: recovery-action\n  params: {action: node-reboot}",
		"- at: 2000000h\n  fault: sbe\n- after: 2000000h\n  fault: sbe",
		"- at: 1s\n  fault: xid\n  params: {code: 79, message: \"a\\nb\", pid: 12, name: python3}",
		"a: &a [*a, *a]",
		"- {at: 1s, fault: sbe, params: {on: yes}}",
		"- at: 1m\n  gpu: 3\n  fault: latent\n  params: {mode: nccl-bandwidth, factor: 0.6, surface-after: 30m, surface: dbe}",
		fabricSchedule,
		"- at: 0s\n  fault: fabric-port-down\n  params: {device: 31}",
		"- at: 0s\n  fault: fabric-link-flap\n  params: {device: 1, every: 999ms, times: 1001}",
		"- at: 0s\n  fault: fabric-symbol-errors\n  params: {rate: 1e6}",
		"- at: 0s\n  fault: fabric-degraded-rate\n  params: {device: 5, rate: 0.5}",
		"- at: 0s\n  fault: fabric-device-missing\n  params: {device: -1}",
		"- at: 0s\n  fault: efa-errors\n  params: {counter: rdma_read_wr_err, rate: NaN}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := LoadSchedule(bytes.NewReader(data))
		if err != nil {
			return
		}
		for i, e := range s {
			if e.At < 0 || e.Node == "" {
				t.Fatalf("entry %d: at %v, node %q", i, e.At, e.Node)
			}
			if err := e.Fault.Validate(); err != nil {
				t.Fatalf("entry %d accepted but invalid: %v", i, err)
			}
		}
	})
}

// FuzzFabricFault injects a fabric fault with arbitrary params into an
// InfiniBand or EFA node and reads it over time: a fault is refused or
// applied, never a panic, and what the node then reads holds the fabric's
// invariants (never more devices than expected, counters held at their
// width, time not running counters backwards).
func FuzzFabricFault(f *testing.F) {
	f.Add(uint8(0), false, "3", "", "", "", "")
	f.Add(uint8(1), false, "1", "", "1s", "1000", "")
	f.Add(uint8(2), false, "7", "1e6", "", "", "")
	f.Add(uint8(3), false, "5", "399.9", "", "", "")
	f.Add(uint8(4), true, "31", "", "", "", "")
	f.Add(uint8(5), true, "0", "0.001", "", "", "rdma_write_wr_err")
	f.Fuzz(func(t *testing.T, kind uint8, onEFA bool, device, rate, every, times, counter string) {
		opts := ib8
		if onEFA {
			opts = efa
		}
		n, clk := newTestNode(t, opts)
		p := params{}
		for k, v := range map[string]string{"device": device, "rate": rate, "every": every, "times": times, "counter": counter} {
			if v != "" {
				p[k] = v
			}
		}
		k := fabricKinds[int(kind)%len(fabricKinds)]
		if err := n.Inject(Fault{Kind: k, Params: p}); err != nil {
			return
		}
		last := map[string]uint64{}
		for _, step := range []time.Duration{0, time.Second, time.Hour, 1000 * time.Hour} {
			clk.Step(step)
			s := snapshot(t, n)
			if len(s.Fabric.Devices) > s.Fabric.ExpectedDevices || s.Fabric.ExpectedDevices != opts.Fabric.Devices {
				t.Fatalf("%s %v: %d devices of %d", k, p, len(s.Fabric.Devices), s.Fabric.ExpectedDevices)
			}
			for _, d := range s.Fabric.Devices {
				for _, m := range []map[string]uint64{d.Ports[0].Counters, d.Ports[0].HWCounters} {
					for name, v := range m {
						if limit, ok := counterMax[name]; ok && v > limit {
							t.Fatalf("%s %v: %s/%s = %d over %d", k, p, d.Name, name, v, limit)
						}
						if v < last[d.Name+"/"+name] {
							t.Fatalf("%s %v: %s/%s went back to %d", k, p, d.Name, name, v)
						}
						last[d.Name+"/"+name] = v
					}
				}
			}
		}
	})
}
