package sim

import (
	"bytes"
	"testing"
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
