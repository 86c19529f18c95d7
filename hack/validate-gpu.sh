#!/usr/bin/env bash
# Real-GPU validation, for a machine with an NVIDIA GPU (see
# docs/hardware-validation.md). Writes everything under $OUT (default ./out).
# With GPUHEAL_PREBUILT=DIR it runs DIR/gpuheal-agent and DIR/hardware.test
# (built by `make gpu-prebuilt` on a machine with Go) instead of building:
# GPU machines often have no Go toolchain.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-$PWD/out}"; mkdir -p "$out"; export OUT="$out"
nvidia-smi -q -x > "$out/nvidia-smi.xml" 2> "$out/nvidia-smi.err"; echo "nvidia-smi rc=$?"
nvidia-smi -q > "$out/nvidia-smi-q.txt" 2>&1
if [ -n "${GPUHEAL_PREBUILT:-}" ]; then
  agent="$GPUHEAL_PREBUILT/gpuheal-agent"
  hwtest() { (cd test/hardware && "$OLDPWD/$GPUHEAL_PREBUILT/hardware.test" -test.count=1 -test.v "$@"); }
else
  go build -o "$out/gpuheal-agent" ./cmd/gpuheal-agent || exit 1
  agent="$out/gpuheal-agent"
  hwtest() { go test -tags gpu -count=1 -v ./test/hardware/ "$@"; }
fi
for b in nvml smi; do
  "$agent" --standalone --once --gpu-backend=$b -o json > "$out/agent-$b.json" 2> "$out/agent-$b.err"
  echo "agent --gpu-backend=$b rc=$?"
done
hwtest 2>&1 | tee "$out/hardware-test.log" | tail -40
