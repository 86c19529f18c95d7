#!/usr/bin/env bash
# Whole-process run of `gpuheal diagnose` on a generated kernel log (default
# 1,000,000 lines of dmesg text: ordinary kernel noise with a share of Xid
# lines), reporting lines/s and peak RSS, for docs/benchmarks.md.
#   usage: hack/bench-diagnose.sh [LINES] [XID_PERCENT]
set -euo pipefail
lines="${1:-1000000}"
xid_pct="${2:-1}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
(cd "$root" && go build -trimpath -o "$work/gpuheal" ./cmd/gpuheal)

awk -v n="$lines" -v pct="$xid_pct" 'BEGIN {
  srand(42)
  noise[0] = "IPv6: ADDRCONF(NETDEV_CHANGE): cali817bc444564: link becomes ready"
  noise[1] = "audit: type=1400 audit(1700000000.123:456): apparmor=\"DENIED\" operation=\"open\" profile=\"cri-containerd.apparmor.d\""
  noise[2] = "EXT4-fs (nvme0n1p1): mounted filesystem with ordered data mode. Quota mode: none."
  noise[3] = "nvidia-nvswitch2: open (major=510)"
  noise[4] = "IPVS: rr: TCP 10.96.0.1:443 - no destination available"
  noise[5] = "eth0: renamed from tmp8a1e2"
  noise[6] = "cni0: port 3(veth1a2b3c4d) entered forwarding state"
  noise[7] = "systemd[1]: Started cri-containerd-4f7a.scope - libcontainer container 4f7a."
  xid[0] = "NVRM: Xid (PCI:0000:38:00): 13, pid=2924364, name=pt_main_thread, Graphics SM Warp Exception on (GPC 9, TPC 1, SM 1): Out Of Range Address"
  xid[1] = "NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout after 6s of waiting for RPC response from GPU4 GSP! Expected function 103 (GSP_RM_ALLOC) (0x2081 0x4)."
  xid[2] = "NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7194, Contained: CE User Channel (0x9). RST: No, D-RST: No"
  xid[3] = "NVRM: Xid (PCI:0009:01:00): 149, NETIR_LINK_EVT  Fatal   XC0 i0 Link 01 (0x021425c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)"
  for (i = 0; i < n; i++) {
    ts = 100 + i * 0.001
    if (rand() * 100 < pct) msg = xid[int(rand() * 4)]; else msg = noise[int(rand() * 8)]
    printf "[%12.6f] %s\n", ts, msg
  }
}' > "$work/kern.log"
size=$(stat -c %s "$work/kern.log")

runs="${RUNS:-5}"
for r in $(seq 1 "$runs"); do
  rc=0
  /usr/bin/time -f '%e %M %U %S' -o "$work/time" "$work/gpuheal" diagnose --kmsg "$work/kern.log" -o json > "$work/out.json" || rc=$?
  tail -n 1 "$work/time" >> "$work/times"
done
echo "gpuheal diagnose: ${lines} lines ($((size / 1048576)) MiB), ${xid_pct}% Xid lines, exit ${rc}, ${runs} runs"
# Per run: wall, peak RSS (KiB), user, sys. Report the median and best run by CPU time.
awk '{ print $3 + $4, $1, $2 }' "$work/times" | sort -n | awk -v n="$lines" '{ cpu[NR] = $1; wall[NR] = $2; rss[NR] = $3 }
  END { m = int((NR + 1) / 2)
    printf "  CPU per run: best %.2f s (%.0f lines/s, %.2f us/line), median %.2f s (%.0f lines/s); wall median %.2f s; peak RSS max %.1f MiB\n",
      cpu[1], n / cpu[1], cpu[1] * 1e6 / n, cpu[m], n / cpu[m], wall[m], maxr() / 1024 }
  function maxr(  i, x) { for (i = 1; i <= NR; i++) if (rss[i] > x) x = rss[i]; return x }'
grep -o '"count": [0-9]*' "$work/out.json" | awk '{s += $2} END {print "  findings grouped from " s+0 " lines"}'
