#!/usr/bin/env bash
# The pareto search over a large inventory: 0..N nodes of each of FASOP's two node types
# (default N = 64: 4,224 cluster shapes, 2.77 million candidates). Holding every candidate
# would take gigabytes; --front-only keeps the front alone, and memory stays bounded.
# Prints the wall time and the peak resident memory.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-64}
[ -x build/fasop-cpp ] || bash scripts/build.sh
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
/usr/bin/time -f "wall %e s, peak memory %M KiB" build/fasop-cpp search --model gpt2xl --pareto \
  --max-nodes A100="$n" --max-nodes A10="$n" --front-only --out-dir "$out" --quiet 2> "$out/time" | head -3
cat "$out/time"
