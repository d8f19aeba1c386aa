#!/usr/bin/env bash
# Times each of FASOP's six searches as a whole process (best of N runs, default 5).
# FASOP itself takes 0.3 s to 63 s for them on a 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
[ -x build/fasop-cpp ] || bash scripts/build.sh
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf "%-28s %10s %12s\n" search candidates best_ms
for spec in "bert" "bert --heterogeneous" "gpt2xl" "gpt2xl --heterogeneous" "t5" "t5 --heterogeneous"; do
  best=""
  for _ in $(seq "$runs"); do
    start=$(date +%s%N)
    build/fasop-cpp search --model $spec --out-dir "$out" --quiet > "$out/stdout"
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    if [ -z "$best" ] || [ "$ms" -lt "$best" ]; then best=$ms; fi
  done
  candidates=$(( $(ls -t "$out"/*.csv | head -1 | xargs wc -l | awk '{print $1}') - 1 ))
  printf "%-28s %10s %12s\n" "$spec" "$candidates" "$best"
done
