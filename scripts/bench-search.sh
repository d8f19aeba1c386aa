#!/usr/bin/env bash
# Times searches as whole processes (best of N runs, default 5): FASOP's six searches, the
# pareto search over FASOP's 0..8 A100 x 0..8 A10 inventory on 1 thread and on every core, and
# LLaMA-2 70B on a 1,024-GPU cluster of four GPU types (with its peak memory), and mixtures of
# experts (tp, pp, dp and ep) on 1,024 GPUs of two types.
# FASOP itself takes 2.4 s to 62 s for the six and 577-630 s for the pareto search on a
# 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
[ -x build/fasop-cpp ] || bash scripts/build.sh planner
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# best_ms ARGS...: the fastest of $runs runs of `fasop-cpp search ARGS`, in milliseconds.
best_ms() {
  local best="" start ms
  for _ in $(seq "$runs"); do
    start=$(date +%s%N)
    build/fasop-cpp search "$@" --out-dir "$out" --quiet > "$out/stdout"
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    if [ -z "$best" ] || [ "$ms" -lt "$best" ]; then best=$ms; fi
  done
  echo "$best"
}

printf "%-44s %10s %10s\n" search candidates best_ms
for spec in "bert" "bert --heterogeneous" "gpt2xl" "gpt2xl --heterogeneous" "t5" "t5 --heterogeneous"; do
  ms=$(best_ms --model $spec)
  candidates=$(( $(ls -t "$out"/*.csv | head -1 | xargs wc -l | awk '{print $1}') - 1 ))
  printf "%-44s %10s %10s\n" "$spec" "$candidates" "$ms"
done
pareto="gpt2xl --heterogeneous --pareto"
one=$(best_ms --model $pareto --threads 1)
all=$(best_ms --model $pareto)
candidates=$(( $(wc -l < "$out/gpt2_heterogeneous_pareto.csv") - 1 ))
printf "%-44s %10s %10s\n" "$pareto --threads 1" "$candidates" "$one"
printf "%-44s %10s %10s\n" "$pareto ($(nproc) threads)" "$candidates" "$all"
awk -v a="$one" -v b="$all" 'BEGIN { printf "pareto speed-up from 1 to %d threads: %.2fx\n", '"$(nproc)"', a / b }'

# Beyond FASOP: LLaMA-2 70B on 1,024 GPUs of four types (clusters/mixed-1024gpu.yaml), the
# analytic policy's whole space (tp up to 8, ZeRO 0-3, recomputation, type-block placements).
big="llama2-70b --cluster mixed-1024gpu"
ms=$(best_ms --model $big)
candidates=$(( $(wc -l < "$out/llama2-70b_heterogeneous.csv") - 1 ))
printf "%-44s %10s %10s\n" "$big" "$candidates" "$ms"
printf "%s: " "$big"
bash scripts/peak-memory.sh build/fasop-cpp search --model $big --out-dir "$out" --quiet 2>&1 >/dev/null


# Mixtures of experts on 1,024 GPUs of two types (clusters/dgx-h100-b200-1024gpu.yaml): tp, dp,
# pp, ep (1 and the powers of two dividing the experts, up to 64), ZeRO 0-3, recomputation.
for moe in qwen3-30b-a3b deepseek-v3; do
  spec="$moe --cluster dgx-h100-b200-1024gpu"
  ms=$(best_ms --model $spec)
  candidates=$(( $(wc -l < "$out/${moe}_heterogeneous.csv") - 1 ))
  printf "%-44s %10s %10s\n" "$spec" "$candidates" "$ms"
done
# The same with every token dispatcher (alltoall, DeepEP, HybridEP) tried where ep > 1.
spec="deepseek-v3 --cluster dgx-h100-b200-1024gpu --moe-dispatcher alltoall,deepep,hybridep"
ms=$(best_ms --model $spec)
candidates=$(( $(wc -l < "$out/deepseek-v3_heterogeneous.csv") - 1 ))
printf "%-44s %10s %10s\n" "deepseek-v3 ... --moe-dispatcher (all three)" "$candidates" "$ms"
