#!/usr/bin/env bash
# The accuracy loop on this machine's CPU: time whole training steps of the tiny test model
# (pp = tp = dp = 1) and compare them with the planner's estimate from a LibTorch profile of
# its layers, for a few micro-batch sizes. Target: within 10%.
#  1. `profile step --measure-profile`: the layers are profiled in the same rounds as the steps,
#     so that a slow spell of this (shared, virtual) machine touches both alike: the accuracy
#     of the estimate itself.
#  2. `profile layers`, then `profile step --profile`: the profile measured first, as a user
#     makes one; this also carries the machine's drift between the two runs.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/fasop-profile ] || bash scripts/build.sh profiler
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
model=tests/data/profiler/tiny.yaml
threads=${THREADS:-1}
echo "== 1. profiled alongside the steps"
for mbs in 1 2 4; do
  build/fasop-cpp profile step --model "$model" --measure-profile "$out/tiny_mbs$mbs.yaml" --device cpu \
    --mbs "$mbs" --micro-batches 4 --repeats 30 --threads "$threads" | tail -1
done
echo "== 2. profiled first"
build/fasop-cpp profile layers --model "$model" --device cpu --tp 1 --mbs 1,2,4 --threads "$threads" --repeats 30 \
  --allow-noisy -o "$out/tiny_cpu.yaml" --quiet | tail -2
for mbs in 1 2 4; do
  build/fasop-cpp profile step --model "$model" --profile "$out/tiny_cpu.yaml" --device cpu --mbs "$mbs" \
    --micro-batches 4 --repeats 30 --threads "$threads"
done
