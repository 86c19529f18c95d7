#!/usr/bin/env bash
# Starts and stops a dockerd for `make images` (hack/build-images.sh).
#
#   hack/dockerd.sh start        start dockerd unless one already answers; wait until it does;
#                                it stays up until `stop`
#   hack/dockerd.sh stop         stop the dockerd (and containerd) this script started, if any
#   hack/dockerd.sh acquire PID  start as needed and hold it for process PID
#   hack/dockerd.sh release PID  let go; stop it when it was started here and no live
#                                process (nor a `start`) holds it any more
#   hack/dockerd.sh status       say whether a dockerd answers, and who holds it
#
# hack/build-images.sh acquires and releases, so that of two builds at once
# the first to finish does not stop dockerd under the other, and a dockerd
# started by hand (or running already, not started here) is left alone.
#
# dockerd gets its own containerd (socket under /run/gpuheal-dockerd): left to
# itself, dockerd 20.10 adopts a containerd it finds at /run/containerd/
# containerd.sock, and the one-node cluster of the install test runs one there
# and stops it when done, which would leave dockerd without a runtime.
# dockerd does not touch the host's network (--iptables=false, --bridge=none):
# builds run with --network=host (hack/build-images.sh), test runs with
# --network=none, so nothing here competes with kube-proxy or the CNI plugins.
#
# Data under /var/lib/docker (the build cache lives there, so it survives a
# stop); logs in bin/dockerd/. Needs root. Environment: DOCKERD_TIMEOUT
# (seconds to wait for the daemon, default 60).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
run=/run/gpuheal-dockerd
logs="${GPUHEAL_BIN_DIR:-$root/bin}/dockerd"
sock=/var/run/docker.sock
ctr_sock="$run/containerd.sock"
timeout="${DOCKERD_TIMEOUT:-60}"
# Debian's 20.10 client: BuildKit built in (a newer client on PATH may need
# the buildx plugin for it).
docker="${DOCKER:-$(command -v /usr/bin/docker || command -v docker)}"

holders="$run/holders"

die() { echo "dockerd.sh: $*" >&2; exit 1; }

# One of start, stop, acquire, release at a time.
lock() {
  mkdir -p "$run"
  exec 9>"$run/lock"
  flock 9
}

answers() { "$docker" -H "unix://$sock" info >/dev/null 2>&1; }

alive() { [[ -f "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

# wait_for DESC CMD...: poll CMD until it succeeds or the deadline passes.
wait_for() {
  local desc="$1"; shift
  local deadline=$((SECONDS + timeout))
  until "$@"; do
    ((SECONDS < deadline)) || return 1
    sleep 0.2
  done
}

start() {
  if answers; then
    echo "dockerd.sh: a dockerd already answers on $sock; using it"
    return 0
  fi
  [[ $(id -u) -eq 0 ]] || die "starting dockerd needs root"
  command -v dockerd >/dev/null || die "dockerd not found (Debian package docker.io; make deps installs it)"
  command -v containerd >/dev/null || die "containerd not found (Debian package containerd)"
  alive "$run/dockerd.pid" && die "dockerd $(cat "$run/dockerd.pid") started earlier does not answer; see $logs/dockerd.log, or hack/dockerd.sh stop"
  mkdir -p "$run" "$logs"

  if ! alive "$run/containerd.pid"; then
    cat >"$run/containerd.toml" <<EOF
version = 2
root = "/var/lib/gpuheal-dockerd/containerd"
state = "$run/containerd"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$ctr_sock"
[ttrpc]
  address = "$ctr_sock.ttrpc"
[debug]
  address = "$run/containerd-debug.sock"
EOF
    rm -f "$ctr_sock"
    containerd --config "$run/containerd.toml" >>"$logs/containerd.log" 2>&1 9>&- &
    echo $! >"$run/containerd.pid"
    if ! wait_for containerd test -S "$ctr_sock"; then
      tail -n 20 "$logs/containerd.log" >&2 || true
      die "containerd did not come up within ${timeout}s (log: $logs/containerd.log)"
    fi
  fi

  dockerd \
    --host "unix://$sock" \
    --containerd "$ctr_sock" \
    --data-root /var/lib/docker \
    --exec-root "$run/exec" \
    --pidfile "$run/dockerd.pid.docker" \
    --storage-driver overlay2 \
    --exec-opt native.cgroupdriver=cgroupfs \
    --iptables=false --ip-masq=false --ip-forward=false --bridge=none \
    >>"$logs/dockerd.log" 2>&1 9>&- &
  echo $! >"$run/dockerd.pid"
  if ! wait_for dockerd answers; then
    tail -n 30 "$logs/dockerd.log" >&2 || true
    die "dockerd did not answer within ${timeout}s (log: $logs/dockerd.log)"
  fi
  echo "dockerd.sh: dockerd $(cat "$run/dockerd.pid") answers on $sock (log: $logs/dockerd.log)"
}

# stop_pid NAME PIDFILE: SIGTERM, wait (deadline), then SIGKILL.
stop_pid() {
  local name="$1" pidfile="$2" pid
  [[ -f "$pidfile" ]] || return 0
  pid="$(cat "$pidfile")"
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    local deadline=$((SECONDS + timeout))
    while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
    if kill -0 "$pid" 2>/dev/null; then
      echo "dockerd.sh: $name $pid still running after ${timeout}s; killing it" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
    echo "dockerd.sh: stopped $name $pid"
  fi
  rm -f "$pidfile"
}

stop() {
  if [[ ! -f "$run/dockerd.pid" && ! -f "$run/containerd.pid" ]]; then
    echo "dockerd.sh: no dockerd started by this script"
    return 0
  fi
  rm -rf "$holders"
  stop_pid dockerd "$run/dockerd.pid"
  stop_pid containerd "$run/containerd.pid"
  # containerd-shim processes of stopped containers exit with them; anything
  # left under our exec root is stale.
  rm -f "$ctr_sock" "$ctr_sock.ttrpc" "$run/dockerd.pid.docker"
}

# ours: whether the dockerd that answers is the one this script started.
ours() { alive "$run/dockerd.pid"; }

acquire() {
  local pid="${1:?usage: $0 acquire PID}"
  start
  if ours; then mkdir -p "$holders" && echo "$pid" >"$holders/$pid"; fi
}

release() {
  local pid="${1:?usage: $0 release PID}" h name
  rm -f "$holders/$pid"
  ours || return 0
  for h in "$holders"/*; do
    [[ -e "$h" ]] || continue
    name="$(basename "$h")"
    if [[ "$name" == manual ]] || kill -0 "$name" 2>/dev/null; then
      echo "dockerd.sh: dockerd stays up (held by ${name/manual/hack/dockerd.sh start})"
      return 0
    fi
    rm -f "$h" # a holder that is gone
  done
  stop
}

status() {
  if answers; then echo "dockerd answers on $sock"; else echo "no dockerd answers on $sock"; fi
  if ours; then
    echo "started by hack/dockerd.sh: pid $(cat "$run/dockerd.pid"); held by: $(ls "$holders" 2>/dev/null | tr '\n' ' ')"
  fi
}

case "${1:-}" in
  start)
    lock
    start
    if ours; then mkdir -p "$holders" && : >"$holders/manual"; fi
    ;;
  stop) lock && stop ;;
  acquire) lock && acquire "${2:-}" ;;
  release) lock && release "${2:-}" ;;
  status) status ;;
  *) echo "usage: $0 start|stop|acquire PID|release PID|status" >&2; exit 2 ;;
esac
