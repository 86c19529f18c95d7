package sim

import (
	"time"
)

// rdmaDevice is one RDMA device (one port each) and what its faults did
// to it.
type rdmaDevice struct {
	index           int
	name, bus, guid string
	rate            float64 // Gb/s of a healthy link

	down     bool          // fabric-port-down: no link
	downAt   time.Time     // when the link went, or the boot began without it
	idle     time.Duration // linkless time of this boot before downAt
	degraded float64       // > 0: the rate the link trained at
	missing  bool
	risers   []*riser // counters that rise with time
	// extra is what faults added to counters in this boot and add no
	// more: port down's link_downed, risers stopped by a repeat or Clear.
	extra map[string]uint64
}

// riser is a fault that makes one counter rise: rate a second, or, with
// every set, by 1 every `every` (the first at once), times times.
type riser struct {
	kind    Kind
	counter string
	since   time.Time // injected, or the last reboot
	rate    float64
	every   time.Duration
	times   uint64
}

func (r *riser) count(now time.Time) uint64 {
	d := now.Sub(r.since)
	switch {
	case d < 0:
		return 0
	case r.every > 0:
		return min(uint64(d/r.every)+1, r.times)
	}
	return uint64(r.rate * d.Seconds())
}

// The port's counters, in the kernel's names, as a ConnectX-7 in
// InfiniBand mode and an EFA device of a p4d expose them (the fabric
// reader's fixtures). efaCounters adds the five error counters of Nitro v4
// and later that the efa-errors-rising rule watches.
var (
	ibCounterNames = []string{
		"VL15_dropped", "excessive_buffer_overrun_errors", "link_downed", "link_error_recovery",
		"local_link_integrity_errors", "multicast_rcv_packets", "multicast_xmit_packets",
		"port_rcv_constraint_errors", "port_rcv_data", "port_rcv_errors", "port_rcv_packets",
		"port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors", "port_xmit_constraint_errors",
		"port_xmit_data", "port_xmit_discards", "port_xmit_packets", "port_xmit_wait", "symbol_error",
		"unicast_rcv_packets", "unicast_xmit_packets",
	}
	mlx5HWCounterNames = []string{
		"duplicate_request", "implied_nak_seq_err", "local_ack_timeout_err", "out_of_buffer",
		"out_of_sequence", "packet_seq_err", "req_cqe_error", "req_cqe_flush_error",
		"req_remote_access_errors", "req_remote_invalid_request", "resp_cqe_error",
		"resp_cqe_flush_error", "resp_local_length_error", "resp_remote_access_errors",
		"rnr_nak_retry_err", "roce_adp_retrans", "roce_adp_retrans_to", "roce_slow_restart",
		"roce_slow_restart_cnps", "roce_slow_restart_trans", "rx_atomic_requests", "rx_dct_connect",
		"rx_icrc_encapsulated", "rx_read_requests", "rx_write_requests",
	}
	efaCounterNames = []string{
		"impaired_remote_conn_events", "rdma_read_bytes", "rdma_read_resp_bytes", "rdma_read_wr_err",
		"rdma_read_wrs", "rdma_write_bytes", "rdma_write_recv_bytes", "rdma_write_wr_err",
		"rdma_write_wrs", "recv_bytes", "recv_wrs", "retrans_bytes", "retrans_pkts",
		"retrans_timeout_events", "rx_bytes", "rx_drops", "rx_pkts", "send_bytes", "send_wrs",
		"tx_bytes", "tx_pkts", "unresponsive_remote_events",
	}
	// efaDeviceCounterNames are an EFA device's own hw_counters (the efa
	// driver's EFA_DEFINE_DEVICE_STATS): its admin queue and verbs errors.
	efaDeviceCounterNames = []string{
		"submitted_cmds", "completed_cmds", "cmds_err", "no_completion_cmds", "keep_alive_rcvd",
		"alloc_pd_err", "create_qp_err", "create_cq_err", "reg_mr_err", "alloc_ucontext_err",
		"create_ah_err", "mmap_err",
	}
	// efaErrorCounters are the ones an efa-errors fault may raise.
	efaErrorCounters = []string{
		"retrans_timeout_events", "impaired_remote_conn_events", "unresponsive_remote_events",
		"rdma_read_wr_err", "rdma_write_wr_err",
	}
)

// counterMax is the width of the InfiniBand PortCounters attribute a
// counter comes from: the port stops counting at its maximum (the
// fixture's link_downed of 255). Data and packet counters come from the
// 64-bit PortCountersExtended.
var counterMax = map[string]uint64{
	"symbol_error": 0xffff, "link_error_recovery": 0xff, "link_downed": 0xff,
	"port_rcv_errors": 0xffff, "port_rcv_remote_physical_errors": 0xffff,
	"port_rcv_switch_relay_errors": 0xffff, "port_xmit_discards": 0xffff,
	"port_xmit_constraint_errors": 0xff, "port_rcv_constraint_errors": 0xff,
	"local_link_integrity_errors": 0xf, "excessive_buffer_overrun_errors": 0xf, "VL15_dropped": 0xffff,
}

// trafficSecs is how many whole seconds the port has had a link in this
// boot: traffic stops while it is down.
func (f *fabricState) trafficSecs(d *rdmaDevice, now time.Time) uint64 {
	up := now.Sub(f.epoch) - d.idle
	if d.down {
		up -= now.Sub(d.downAt)
	}
	return uint64(max(up, 0) / time.Second)
}

// traffic is the bytes the port moved in one direction (0 in, 1 out) in
// secs: a seeded steady rate of 0.5–2.5 GB/s (data loading, checkpoints,
// collectives on this rail) and up to half a second of it as jitter, so
// the sum never goes backwards.
func (f *fabricState) traffic(d *rdmaDevice, dir, secs uint64) uint64 {
	rate := 5e8 + 2e9*unit(hash(f.key, d.index, hRDMARate+dir, 0))
	return uint64(rate*float64(secs) + rate/2*unit(hash(f.key, d.index, hRDMAJitter+dir, secs)))
}

func zeroed(names []string) map[string]uint64 {
	m := make(map[string]uint64, len(names))
	for _, name := range names {
		m[name] = 0
	}
	return m
}

func (f *fabricState) ibCounters(d *rdmaDevice, now time.Time) (c, hw map[string]uint64) {
	secs := f.trafficSecs(d, now)
	rx, tx := f.traffic(d, 0, secs), f.traffic(d, 1, secs)
	c = zeroed(ibCounterNames)
	// PortRcvData and PortXmitData count 4-octet words; packets fill the
	// 4 KiB InfiniBand MTU.
	c["port_rcv_data"], c["port_xmit_data"] = rx/4, tx/4
	c["port_rcv_packets"], c["port_xmit_packets"] = rx/4096, tx/4096
	c["unicast_rcv_packets"], c["unicast_xmit_packets"] = rx/4096, tx/4096
	d.addFaults(c, now)
	hw = zeroed(mlx5HWCounterNames)
	hw["rx_write_requests"], hw["rx_read_requests"] = rx/(64<<10), tx/(1<<20)
	return c, hw
}

// efaCounters keeps the proportions of the p4d capture: RDMA reads carry
// almost all the bytes, in ~300 KiB work requests; sends are small.
func (f *fabricState) efaCounters(d *rdmaDevice, now time.Time) map[string]uint64 {
	secs := f.trafficSecs(d, now)
	rx, tx := f.traffic(d, 0, secs), f.traffic(d, 1, secs)
	c := zeroed(efaCounterNames)
	c["rx_bytes"], c["tx_bytes"] = rx, tx
	c["rx_pkts"], c["tx_pkts"] = rx/8192, tx/8192
	c["rdma_read_bytes"], c["rdma_read_resp_bytes"] = tx-tx/1000, rx-rx/100
	c["rdma_read_wrs"] = c["rdma_read_bytes"] / (300 << 10)
	c["send_bytes"], c["recv_bytes"] = tx/150, rx/150
	c["send_wrs"], c["recv_wrs"] = c["send_bytes"]/2048, c["recv_bytes"]/2048
	d.addFaults(c, now)
	return c
}

// efaDeviceCounters are the device's own: the keep-alive events its
// firmware sends about once a second since the adapters' boot, nothing
// else moving on a device whose admin queue is well.
func (f *fabricState) efaDeviceCounters(now time.Time) map[string]uint64 {
	c := zeroed(efaDeviceCounterNames)
	c["keep_alive_rcvd"] = uint64(max(now.Sub(f.epoch), 0) / time.Second)
	return c
}

// addFaults adds what the device's faults counted in this boot, each
// counter held at its width.
func (d *rdmaDevice) addFaults(c map[string]uint64, now time.Time) {
	for name, v := range d.extra {
		c[name] += v
	}
	for _, r := range d.risers {
		c[r.counter] += r.count(now)
	}
	for name, limit := range counterMax {
		if v, ok := c[name]; ok && v > limit {
			c[name] = limit
		}
	}
}
