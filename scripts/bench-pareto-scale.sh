#!/usr/bin/env bash
# The pareto search over a large inventory: 0..N nodes of each of FASOP's two node types
# (default N = 64: 4,224 cluster shapes, 2.77 million candidates). Holding every candidate
# would take gigabytes; --front-only keeps the front alone, and memory stays bounded.
# Prints the search's summary, the wall time and the peak resident memory (scripts/peak-memory.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-64}
[ -x build/fasop-cpp ] || bash scripts/build.sh
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
bash scripts/peak-memory.sh build/fasop-cpp search --model gpt2xl --pareto --max-nodes A100="$n" --max-nodes A10="$n" \
  --front-only --out-dir "$out" --quiet | head -3
