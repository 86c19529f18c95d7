#!/usr/bin/env bash
# Real-GPU validation, for a machine with an NVIDIA GPU (see
# docs/hardware-validation.md). Writes everything under $OUT (default ./out).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-$PWD/out}"; mkdir -p "$out"; export OUT="$out"
nvidia-smi -q -x > "$out/nvidia-smi.xml" 2> "$out/nvidia-smi.err"; echo "nvidia-smi rc=$?"
go build -o "$out/gpuheal-agent" ./cmd/gpuheal-agent || exit 1
for b in nvml smi; do
  "$out/gpuheal-agent" --standalone --once --gpu-backend=$b -o json > "$out/agent-$b.json" 2> "$out/agent-$b.err"
  echo "agent --gpu-backend=$b rc=$?"
done
go test -tags gpu -count=1 -v ./test/hardware/ 2>&1 | tee "$out/hardware-test.log" | tail -20
go test -count=1 -run TestParse ./internal/gpu/smi/ >/dev/null 2>&1 && echo "smi parser tests ok"
