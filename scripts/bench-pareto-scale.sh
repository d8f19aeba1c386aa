#!/usr/bin/env bash
# The pareto search over a large inventory: 0..N nodes of each of FASOP's two node types
# (default N = 64: 4,224 cluster shapes, 2.77 million candidates). Holding every candidate
# would take gigabytes; --front-only keeps the front alone, and memory stays bounded.
# Prints the search's summary, the wall time and the peak resident memory (VmHWM, read from
# /proc while it runs).
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-64}
[ -x build/fasop-cpp ] || bash scripts/build.sh
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
start=$(date +%s%N)
build/fasop-cpp search --model gpt2xl --pareto --max-nodes A100="$n" --max-nodes A10="$n" --front-only \
  --out-dir "$out" --quiet > "$out/stdout" &
pid=$!
peak=0
while kill -0 "$pid" 2>/dev/null; do
  hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true)
  [ -n "$hwm" ] && [ "$hwm" -gt "$peak" ] && peak=$hwm
  sleep 0.2
done
wait "$pid"
ms=$(( ($(date +%s%N) - start) / 1000000 ))
head -3 "$out/stdout"
echo "wall $ms ms, peak memory $peak KiB"
