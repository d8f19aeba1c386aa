#!/usr/bin/env bash
# Which GPUs to rent, at scale: whole-process wall time and peak memory (scripts/peak-memory.sh)
# of the shape searches of issue 18, each under a time limit (LIMIT_S, default 120 s; a case
# that hits it prints "no answer in LIMIT_S s" with its last progress line):
#   1. gpt2xl on FASOP's inventory (8 A100 + 8 A10 nodes: 80 shapes), --pareto;
#   2. llama2-70b on mixed-h100-a100-l4 (0..4 nodes of 3 types: 124 shapes), --pareto;
#   3. llama2-70b on mixed-1024gpu (0..32 nodes of 4 types: 1,185,920 shapes), --pareto --front-only:
#      the exact front, and the fronts within --tolerance 10 and 20 (a stated bound);
#   4. Sailor's budget problem (a), OPT-350M on sailor-budget: the cheapest plan of at least
#      0.2 iterations/s on any subset (--use-subset --min-throughput 0.2);
#   5. Sailor's budget problem (b): the fastest plan under 1.2 USD per iteration
#      (--use-subset --max-cost-per-step 1.2).
#   6. llama2-70b on 8 nodes of each of mixed-1024gpu's 4 types (6,560 shapes), --pareto --front-only:
#      the exact front, and the front within --tolerance 5 (scale between cases 2 and 3);
#   7. Metis-style per-type dp: a plain search with --stage-dp, llama2-7b on 2 nodes of each
#      mixed-1024gpu type (1.26 million layouts), with the CSV's size;
#   8. threads: case 3 within 20% on 1 and on 2 threads, and the speed-up.
# LOADED=1 runs each case beside one busy loop (a user's busy machine); each case prints wall
# and CPU seconds, so a loaded run's CPU can be set against a quiet one's.
# For 4 and 5, Sailor's own plan (reference/sailor/budget-plans.yaml: 16 A100 nodes of one zone,
# tp 4 dp 16 mbs 8; and all 64 A100 nodes of both zones, tp 4 dp 64 mbs 8) is estimated beside ours.
# Usage: scripts/bench-pareto-scale.sh [CASE...]   (default: all eight)
set -uo pipefail
cd "$(dirname "$0")/.."
limit=${LIMIT_S:-120}
[ -x build/fasop-cpp ] || bash scripts/build.sh planner
out=$(mktemp -d)
bin=build/fasop-cpp

busy=""
if [ "${LOADED:-0}" = 1 ]; then
  ( while :; do :; done ) &
  busy=$!
  echo "(LOADED=1: one busy loop beside every case)"
fi
trap 'rm -rf "$out"; [ -n "$busy" ] && kill "$busy" 2>/dev/null' EXIT

run_case() {  # run_case NAME ARGS...: the summary lines, wall and CPU time, peak memory
  local name=$1; shift
  echo "== $name"
  local TIMEFORMAT="cpu %U s user + %S s system" rc
  { time bash scripts/peak-memory.sh timeout "$limit" "$bin" "$@" --out-dir "$out/$name" > "$out/$name.out" 2> "$out/$name.err"; rc=$?; } 2> "$out/$name.time"
  if [ "$rc" -eq 124 ]; then
    echo "no answer in $limit s; last progress: $(grep '^search:' "$out/$name.err" | tail -n 1)"
  elif [ "$rc" -ne 0 ]; then
    echo "failed (exit $rc): $(tail -n 2 "$out/$name.err")"
  else
    grep -E "^model|^constraints|^pareto front|^budget|^best|^  uses|fastest:|cheapest:" "$out/$name.out"
  fi
  grep '^wall' "$out/$name.err"
  cat "$out/$name.time"
}

sailor_plan() {  # sailor_plan NODES_A NODES_B DP: Sailor's A100 plan on that many nodes of zones a and b
  local a=$1 b=$2 dp=$3
  local cluster="$out/sailor-$a-$b.yaml"  # a second `local`: one expands its words before assigning
  # The sailor-budget inventory with only Sailor's A100 nodes.
  awk -v a="$a" -v b="$b" '
    /^nodes:/ { print; if (a > 0) print "  - {type: a2-highgpu-4g-us-central1-a, count: " a "}"; if (b > 0) print "  - {type: a2-highgpu-4g-us-central1-b, count: " b "}"; skip = 1; next }
    skip && /^  - / { next }
    { skip = 0; print }' clusters/sailor-budget.yaml > "$cluster"
  "$bin" estimate --model opt-350m --cluster "$cluster" --tp 4 --dp "$dp" --pp 1 --mbs 8 2>&1 | grep -E "step|cost|\\$" | head -n 4
}

within_check() {  # within_check EXACT_DIR APPROX_DIR PCT: every exact front plan's nearest on the approximate front
  local exact=$1/llama2-70b_pareto_front.csv approx=$2/llama2-70b_pareto_front.csv
  [ -f "$exact" ] && [ -f "$approx" ] || return 0
  command -v python3 > /dev/null || { echo "(python3 missing: the fronts were not compared)"; return 0; }
  python3 - "$exact" "$approx" "$3" <<'PY'
import csv, sys
load = lambda p: [(float(r["estimated time (s/step)"]), float(r["train_cost"])) for r in csv.DictReader(open(p))]
exact, approx, pct = load(sys.argv[1]), load(sys.argv[2]), float(sys.argv[3])
worst = max(min(max(t2 / t, c2 / c) for t2, c2 in approx) - 1 for t, c in exact)
print(f"checked against the exact front: every exact plan has one at most {100 * worst:.1f}% slower and dearer"
      f" ({'within' if worst <= pct / 100 + 1e-9 else 'OUTSIDE'} the stated {pct:g}%)")
PY
}

wall_ms() { sed -n 's/^wall \([0-9]*\) ms.*/\1/p' "$out/$1.err"; }

# peer CASE WHO MS NOTE: a peer's figure on the same problem (measured by issue 50 on this kind
# of 2-core machine) beside ours, and the ratio.
peer() {
  local ours
  ours=$(wall_ms "$1")
  [ -n "$ours" ] && awk -v o="$ours" -v p="$3" -v who="$2" -v note="$4" \
    'BEGIN { printf "%s: %.1f s (%s); ours %.1f s, %.2fx its time\n", who, p / 1000, note, o / 1000, o / p }'
}

cases=("$@")
[ ${#cases[@]} -eq 0 ] && cases=(1 2 3 4 5 6 7 8)
for c in "${cases[@]}"; do
  case $c in
    1) run_case fasop-gpt2xl search --model gpt2xl --heterogeneous --pareto ;;
    2) run_case llama2-70b-3x4 search --model llama2-70b --pareto ;;
    3) run_case llama2-70b-4x32 search --model llama2-70b --pareto --cluster mixed-1024gpu --front-only
       for pct in 10 20; do
         run_case "llama2-70b-4x32-within-${pct}pct" search --model llama2-70b --pareto --cluster mixed-1024gpu \
           --front-only --tolerance "$pct"
         within_check "$out/llama2-70b-4x32" "$out/llama2-70b-4x32-within-${pct}pct" "$pct"
       done ;;
    4) run_case sailor-a search --model opt-350m --cluster sailor-budget --use-subset --min-throughput 0.2
       echo "Sailor's plan (a) under our estimate: 16 A100 nodes of us-central1-b, tp 4 dp 16 pp 1 mbs 8"
       sailor_plan 0 16 16 ;;
    5) run_case sailor-b search --model opt-350m --cluster sailor-budget --use-subset --max-cost-per-step 1.2
       peer sailor-b "Sailor's whole process" 40000 "its search alone 4.7-5.0 s"
       echo "Sailor's plan (b) under our estimate: 32 + 32 A100 nodes of both zones, tp 4 dp 64 pp 1 mbs 8"
       sailor_plan 32 32 64 ;;
    6) eights=(--max-nodes H100=8 --max-nodes A100-80G=8 --max-nodes L40S=8 --max-nodes L4=8)
       run_case llama2-70b-4x8 search --model llama2-70b --pareto --cluster mixed-1024gpu "${eights[@]}" --front-only
       run_case llama2-70b-4x8-within-5pct search --model llama2-70b --pareto --cluster mixed-1024gpu "${eights[@]}" \
         --front-only --tolerance 5
       within_check "$out/llama2-70b-4x8" "$out/llama2-70b-4x8-within-5pct" 5 ;;
    7) twos=(--nodes H100=2 --nodes A100-80G=2 --nodes L40S=2 --nodes L4=2)
       run_case metis-stage-dp search --model llama2-7b --cluster mixed-1024gpu "${twos[@]}" --stage-dp
       ls -l "$out"/metis-stage-dp/*.csv 2>/dev/null | awk '{ printf "CSV: %.1f MB\n", $5 / 1e6 }'
       peer metis-stage-dp "Metis's search" 17900 "41 MB" ;;
    8) for threads in 1 2; do
         run_case "threads-$threads" search --model llama2-70b --pareto --cluster mixed-1024gpu --front-only \
           --tolerance 20 --threads "$threads"
       done
       one=$(wall_ms threads-1) two=$(wall_ms threads-2)
       [ -n "$one" ] && [ -n "$two" ] && awk -v a="$one" -v b="$two" 'BEGIN { printf "2 threads: %.2fx the speed of 1\n", a / b }' ;;
    *) echo "unknown case $c (1-8)"; exit 2 ;;
  esac
done
