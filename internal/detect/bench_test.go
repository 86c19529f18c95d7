package detect

import (
	"testing"
	"time"

	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/xid"
)

// noiseLines are ordinary kernel lines of a busy GPU node (from the raw
// capture and typical container hosts); none is a finding.
var noiseLines = []string{
	"IPv6: ADDRCONF(NETDEV_CHANGE): eth0: link becomes ready",
	"IPv6: ADDRCONF(NETDEV_CHANGE): calib317e2eeb40: link becomes ready",
	"nvidia-nvswitch2: open (major=510)",
	"perf: interrupt took too long (2509 > 2500), lowering kernel.perf_event_max_sample_rate to 79500",
	"wireguard: WireGuard 1.0.0 loaded. See www.wireguard.com for information.",
	"Initializing XFRM netlink socket",
	"cni0: port 3(veth8e3b2a1c) entered blocking state",
	"cni0: port 3(veth8e3b2a1c) entered disabled state",
	"device veth8e3b2a1c entered promiscuous mode",
	"eth0: renamed from tmp4c2f1",
	"overlayfs: upperdir is in-use as upperdir/workdir of another mount, accessing files from both mounts will result in undefined behavior.",
	"EXT4-fs (nvme1n1): mounted filesystem with ordered data mode. Opts: (null). Quota mode: none.",
	"audit: type=1400 audit(1700000000.123:456): apparmor=\"STATUS\" operation=\"profile_replace\" info=\"same as current profile, skipping\" profile=\"unconfined\" name=\"cri-containerd.apparmor.d\" pid=12345 comm=\"apparmor_parser\"",
	"TCP: request_sock_TCP: Possible SYN flooding on port 10250. Sending cookies.  Check SNMP counters.",
	"clocksource: Long readout interval, skipping watchdog check: cs_nsec: 1584036171 wd_nsec: 1584036160",
	"xfs filesystem being remounted at /run/containerd/io.containerd.runtime.v2.task/k8s.io/abc/rootfs supports timestamps until 2038 (0x7fffffff)",
}

var xidLines = []string{
	"NVRM: Xid (PCI:0000:05:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
	"NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout after 6s of waiting for RPC response from GPU4 GSP! Expected function 103 (GSP_RM_ALLOC) (0x2081 0x4).",
	"NVRM: Xid (PCI:0000:38:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on (GPC 9, TPC 1, SM 1): Out Of Range Address",
	"NVRM: Xid (PCI:0009:01:00): 149, NETIR_LINK_EVT  Fatal   XC0 i0 Link 01 (0x021425c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)",
	"NVRM: Xid (PCI:0009:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)",
	"NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7194, Contained: CE User Channel (0x9). RST: No, D-RST: No",
	"NVRM: Xid (PCI:0000:01:00): 95, pid=7062, Uncontained: LTC TAG (0x2, 0x1). RST: Yes, D-RST: No",
	"NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, reset gpu to activate.",
}

// The benchmarks report ns/op per line; lines/s = 1e9 / ns/op.

func BenchmarkDetectNoise(b *testing.B) {
	d := New(xid.Default(), Options{})
	var dst []finding.Finding
	t := time.Unix(1_700_000_000, 0)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		dst = d.Append(dst[:0], noiseLines[i%len(noiseLines)], t)
		i++
	}
	if len(dst) != 0 {
		b.Fatal("noise gave findings")
	}
}

func BenchmarkDetectXid(b *testing.B) {
	d := New(xid.Default(), Options{})
	var dst []finding.Finding
	t := time.Unix(1_700_000_000, 0)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		// Time moves so the Xid 13 threshold counter does real work.
		dst = d.Append(dst[:0], xidLines[i%len(xidLines)], t.Add(time.Duration(i)*time.Second))
		i++
	}
	if len(dst) != 1 {
		b.Fatal("an Xid line gave no finding")
	}
}

// BenchmarkDetectXidAlloc is the convenience API, which allocates the
// result slice per finding.
func BenchmarkDetectXidAlloc(b *testing.B) {
	d := New(xid.Default(), Options{})
	t := time.Unix(1_700_000_000, 0)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		_ = d.Detect(xidLines[i%len(xidLines)], t.Add(time.Duration(i)*time.Second))
		i++
	}
}
