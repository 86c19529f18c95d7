#!/usr/bin/env bash
# Process-level measurement of gpuheal-agent on the sim backend: 8 GPUs, the
# default 10 s interval, scraped every 10 s like Prometheus would. Prints RSS
# (peak and at the end) and CPU averaged over the run, for docs/benchmarks.md.
#   usage: hack/bench-agent.sh [DURATION_SECONDS]   (default 300)
# AGENT_ARGS adds flags, e.g. AGENT_ARGS="--sysfs=DIR" to read a fabric
# tree made by hack/fabric-tree.sh; NO_BUILD=1 reuses bin/gpuheal-agent
# (two configurations alternated in one sitting); AGENT_BIN runs another
# build instead (two builds side by side).
set -euo pipefail
duration="${1:-300}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="$root/bin"
mkdir -p "$bin"
# Same link flags as `make build` (see AGENT_LINK in the Makefile).
agent="${AGENT_BIN:-$bin/gpuheal-agent}"
if [[ -z "${NO_BUILD:-}" && -z "${AGENT_BIN:-}" ]]; then
  (cd "$root" && go build -trimpath -ldflags "-s -w -linkmode=internal" -o "$bin/gpuheal-agent" ./cmd/gpuheal-agent)
fi

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
state="$(mktemp -d)"
# The kernel-log monitor follows this machine's /dev/kmsg when readable (root), as on a node.
"$agent" --standalone --gpu-backend=sim --sim-gpus=8 --interval=10s --state-dir="$state" \
  --metrics-address="127.0.0.1:$port" --log-level=warn ${AGENT_ARGS:-} &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -rf "$state"' EXIT

until curl -sf "http://127.0.0.1:$port/healthz" >/dev/null; do sleep 0.1; done
curl -sf "http://127.0.0.1:$port/metrics" >/dev/null    # the first Update has happened

ticks=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$pid/status"; }

start_ticks=$(cpu_ticks); start_ns=$(date +%s%N)
peak=0; scrapes=0; scrape_ms=()
end=$((SECONDS + duration))
while ((SECONDS < end)); do
  t=$(curl -s -o /dev/null -H 'Accept-Encoding: gzip' -w '%{time_total}' "http://127.0.0.1:$port/metrics")
  scrape_ms+=("$(awk -v t="$t" 'BEGIN{printf "%.3f", t*1000}')")
  scrapes=$((scrapes + 1))
  r=$(rss_kib); ((r > peak)) && peak=$r
  sleep 10
done
end_ticks=$(cpu_ticks); end_ns=$(date +%s%N)
rss_end=$(rss_kib)
hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status")

cpu_pct=$(awk -v d="$((end_ticks - start_ticks))" -v hz="$ticks" -v ns="$((end_ns - start_ns))" \
  'BEGIN{printf "%.3f", 100 * (d / hz) / (ns / 1e9)}')
median=$(printf '%s\n' "${scrape_ms[@]}" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')
echo "gpuheal-agent sim 8 GPUs ${AGENT_ARGS:-}, interval 10s, ${duration}s, ${scrapes} scrapes (gzip, curl over loopback)"
echo "  CPU:  ${cpu_pct}% of one core (utime+stime over wall time)"
mib() { awk -v k="$1" 'BEGIN{printf "%.1f", k / 1024}'; }
echo "  RSS:  end $(mib "$rss_end") MiB, peak sampled $(mib "$peak") MiB, VmHWM $(mib "$hwm") MiB"
echo "  scrape wall time (curl, incl. connect): median ${median} ms"
