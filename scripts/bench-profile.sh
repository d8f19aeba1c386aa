#!/usr/bin/env bash
# The accuracy loop on this machine's CPU: profile the tiny test model's layers with LibTorch,
# then time whole training steps of it (pp = tp = dp = 1) and compare them with the planner's
# estimate from that profile, for a few micro-batch sizes. Target: within 10%.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/fasop-profile ] || bash scripts/build.sh
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
model=tests/data/profiler/tiny.yaml
threads=${THREADS:-1}
build/fasop-cpp profile layers --model "$model" --device cpu --tp 1 --mbs 1,2,4 --threads "$threads" --repeats 30 \
  --allow-noisy -o "$out/tiny_cpu.yaml" --quiet | tail -2
for mbs in 1 2 4; do
  build/fasop-cpp profile step --model "$model" --profile "$out/tiny_cpu.yaml" --device cpu --mbs "$mbs" \
    --micro-batches 4 --repeats 5 --threads "$threads"
done
