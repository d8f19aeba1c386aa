#!/usr/bin/env bash
# The command line as a user meets it: clear errors with non-zero exits, no half-written
# reports, byte-identical reruns, and FASOP's figures from `estimate --json`.
# Usage: cli_test.sh PATH/TO/fasop-cpp
set -uo pipefail
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/test_lib.sh"

expect_error "unknown model" "--model" search --model gpt3 --out-dir "$work/a"
# Mistyped words get the nearest known one, in one line and exit 2 (not CLI11's 105-109).
expect_error "mistyped subcommand" "unknown subcommand 'serch' of fasop-cpp; did you mean search?" serch --model gpt2xl
expect_error "mistyped flag" "unknown flag --modle of fasop-cpp search; did you mean --model?" search --modle gpt2xl
expect_error "mistyped nested subcommand" "did you mean show?" plan shw plan.yaml
expect_error "a flag cut short" "unknown flag --max-step of fasop-cpp search; did you mean --max-step-time?" search --model gpt2xl --max-step 5
expect_error "a word near nothing" "see fasop-cpp presets --help" presets nothing-like-it
expect_error "a flag's value that starts with a dash is a value" "--plan" launch --plan "$work/none.yaml" \
  --container-args --ulimit
# estimate --placement takes the NxTYPE form search prints: the same estimate as the names one by one.
est=(estimate --model gpt2xl --cluster fasop-8nodes-heterogeneous --mbs 1 --tp 4 --dp 1 --pp 8 --placement)
short=$("$bin" "${est[@]}" 1xp4d.24xlarge,7xg5.24xlarge 2>&1)
long=$("$bin" "${est[@]}" p4d.24xlarge,g5.24xlarge,g5.24xlarge,g5.24xlarge,g5.24xlarge,g5.24xlarge,g5.24xlarge,g5.24xlarge 2>&1)
if [ -n "$short" ] && [ "$short" = "$long" ]; then ok; else fail "--placement NxTYPE: '$short' differs from '$long'"; fi
expect_error "--placement of an unknown type" "NxTYPE" "${est[@]}" 8xnope
version=$("$bin" --version 2>&1); rc=$?
if [ "$rc" -eq 0 ] && [[ "$version" =~ ^fasop-cpp\ [0-9]+\.[0-9]+\.[0-9]+$ ]]; then ok; else fail "--version: exit $rc, '$version'"; fi
# An ep that does not divide the experts is named as such, not as a cluster without layouts.
"$bin" presets show dgx-h100 | sed 's/count: 128/count: 2/' > "$work/h100x2.yaml"
expect_error "--ep not dividing the experts" "--ep: 3 does not divide model 'qwen3-30b-a3b''s 128 experts" \
  search --model qwen3-30b-a3b --cluster "$work/h100x2.yaml" --ep 1,3 --out-dir "$work/a"
# NVFP4 only where the GPU has fp4 tensor cores and NVFP4 data: not on H100.
expect_error "--precision nvfp4 on H100" "--precision: no precision given runs on every GPU of cluster" \
  search --model llama2-7b --cluster "$work/h100x2.yaml" --precision nvfp4 --out-dir "$work/a"
# So is a cp the model cannot run on any layout: an uneven sequence split, a sliding window.
expect_error "--cp not splitting the sequence" "--cp: 3 does not split model 'llama3.1-405b''s sequence of 8192 tokens" \
  search --model llama3.1-405b --cluster "$work/h100x2.yaml" --cp 1,3 --out-dir "$work/a"
expect_error "--cp with a sliding window" "--cp: context parallelism with model 'gpt-oss-120b''s sliding-window attention" \
  search --model gpt-oss-120b --cluster "$work/h100x2.yaml" --cp 1,2 --out-dir "$work/a"
# Selective recomputation's modules: one a model has nothing of, and one --recompute leaves out.
expect_error "--recompute-modules without the module in the model" "mla_up_proj needs multi-latent attention" \
  estimate --model llama2-7b --cluster "$work/h100x2.yaml" --policy analytic --mbs 1 --tp 1 --dp 16 --pp 1 \
  --recompute-modules mla_up_proj
expect_error "--recompute-modules beside --recompute full" "pass selective in --recompute" \
  estimate --model llama2-7b --cluster "$work/h100x2.yaml" --policy analytic --mbs 1 --tp 1 --dp 16 --pp 1 \
  --recompute full --recompute-modules mlp
# bf16 gradients for a model trained in fp16, and under FASOP's policy.
expect_error "--grad-reduce-in-bf16 under fp16" "whose gradients have no bf16 to reduce in" \
  estimate --model gpt2xl --cluster "$work/h100x2.yaml" --policy analytic --mbs 1 --tp 1 --dp 16 --pp 1 --grad-reduce-in-bf16
expect_error "--grad-reduce-in-bf16 with the fasop policy" "use --policy analytic" \
  search --model gpt2xl --heterogeneous --grad-reduce-in-bf16 --out-dir "$work/a"
printf 'name: x\nnode_types: [\n' > "$work/bad.yaml"
# The memory model's options: a headroom below zero, at or past the GPU, or a stack it does not know.
mem=(estimate --model llama3-8b --cluster dgx-h100 --nodes dgx-h100=1 --policy analytic --mbs 1 --tp 1 --dp 8 --pp 1)
expect_error "--memory-headroom below 0" "--memory-headroom -1: must be 0 or more" "${mem[@]}" --memory-headroom -1
expect_error "--memory-headroom past the GPU" "--memory-headroom 80: must be below the smallest GPU's memory (80 GiB)" \
  "${mem[@]}" --memory-headroom 80
expect_error "--memory-headroom of 100%" "--memory-headroom 100%: must be under 100%" "${mem[@]}" --memory-headroom 100%
expect_error "--memory-headroom not a number" "expected a share of each GPU's memory such as 5% or GiB such as 4" \
  "${mem[@]}" --memory-headroom lots
expect_error "an unknown --stack" "--stack jax: unknown training stack; use megatron, torchtitan or deepspeed" \
  "${mem[@]}" --stack jax
expect_error "--stack with the fasop policy" "--stack: the fasop policy checks memory as FASOP does" \
  search --model gpt2xl --stack torchtitan --out-dir "$work/a"
expect_error "torchtitan with ZeRO-1" "--zero: torchtitan shards everything with FSDP (ZeRO-3)" \
  search --model llama3-8b --cluster dgx-h100 --policy analytic --stack torchtitan --zero 1 --out-dir "$work/a"
expect_error "torchtitan's tp overlapped eager" "--tp-comm-overlap: torchtitan overlaps tp only with torch.compile" \
  search --model llama3-8b --cluster dgx-h100 --stack torchtitan --tp-comm-overlap --out-dir "$work/a"
# torchtitan's blocks are not fasop-cpp's profiled layers: the GPU's data times them, and the
# report says so; the Megatron stack keeps the measured profile.
"$bin" search --model llama3-8b --cluster dgx-h100 --stack torchtitan --out-dir "$work/a" --quiet > "$work/titan.out" 2>&1 &&
  grep -q "^layers on H100: timed from the GPU's data as torchtitan runs them" "$work/titan.out" && ok ||
  fail "--stack torchtitan: the measured profile's layers not replaced: $(head -5 "$work/titan.out")"
"$bin" search --model llama3-8b --cluster dgx-h100 --out-dir "$work/a" --quiet > "$work/megatron.out" 2>&1 &&
  ! grep -q "^layers on H100" "$work/megatron.out" && ok || fail "the Megatron stack: $(head -5 "$work/megatron.out")"
expect_error "malformed YAML" "$work/bad.yaml" search --model bert --cluster "$work/bad.yaml" --out-dir "$work/a"
sed 's/gpu: A10$/gpu: L4/' "$(dirname "$0")/../clusters/fasop-bert.yaml" > "$work/l4.yaml"
expect_error "GPU type without a profile" "L4" search --model bert --cluster "$work/l4.yaml" --out-dir "$work/a"
# Per-stage tp and uneven dp: a wrong count of degrees, and a batch that does not split without
# the flag that allows it, each name the field and the fix.
expect_error "--stage-tp of the wrong length" "give one tp per stage" estimate --model gpt2xl \
  --cluster fasop-8nodes-heterogeneous --mbs 1 --tp 4 --dp 1 --pp 8 --stage-tp 4,4 --policy analytic
expect_error "--stage-tp with the fasop policy" "--policy analytic" estimate --model gpt2xl \
  --cluster fasop-8nodes-heterogeneous --mbs 1 --tp 4 --dp 1 --pp 8 --stage-tp 4,4,4,4,4,4,4,4
expect_error "dp that does not divide the batch" "--uneven-dp" estimate --model gpt2xl \
  --cluster fasop-8nodes-heterogeneous --mbs 1 --tp 1 --dp 3 --pp 8 --policy analytic --nodes A100=1 --nodes A10=5
# The speed split (Metis-style) only under the analytic policy: FASOP's runs a stage at one speed.
expect_error "--speed-split with the fasop policy" "--speed-split" estimate --model gpt2xl \
  --cluster fasop-8nodes-heterogeneous --mbs 1 --tp 4 --dp 1 --pp 8 --speed-split
expect_error "search --speed-split with the fasop policy" "--speed-split" search --model gpt2xl \
  --cluster fasop-8nodes-heterogeneous --speed-split --out-dir "$work/a"
# GEMM sweeps: a file that is not one, a dtype it lacks; the shipped H100 sweeps fit to the numbers
# configs/gpus/h100.yaml carries (scripts/fit-gpu-data.sh).
sweeps="$(cd "$(dirname "$0")/../validation/gemm" && pwd)"
printf 'gpu: H100\npoints: []\n' > "$work/not-sweep.yaml"
expect_error "--gemm-fit on a file that is not a sweep" "gemm_times" validate --gemm-fit "$work/not-sweep.yaml" --fit-precision bf16
expect_error "--gemm-fit of a dtype the sweep lacks" "no fp32 GEMMs" validate --gemm-fit "$sweeps/h100-grid.yaml" --fit-precision fp32
sweep_fit=$("$bin" validate --gemm-fit "$sweeps/h100-grid.yaml,$sweeps/h100-model-shapes.yaml" --fit-precision bf16)
case "$sweep_fit" in *"gemm_half_dim: 106"*"gemm_unaligned_share: 0.153"*) ok ;; *) fail "H100 bf16 GEMM fit: $sweep_fit" ;; esac
expect_error "degrees that do not fit" "--tp/--dp/--pp" estimate --model bert --mbs 4 --tp 1 --dp 2 --pp 4
sed 's/^global_batch: 256/global_batch: 100/' "$(dirname "$0")/../configs/models/bert.yaml" > "$work/bert100.yaml"
expect_error "dp not dividing the batch" "--dp" estimate --model "$work/bert100.yaml" --mbs 1 --tp 1 --dp 8 --pp 2
expect_error "mbs not dividing" "--mbs" estimate --model bert --mbs 3 --tp 1 --dp 2 --pp 8
expect_error "placement too short" "--placement" estimate --model bert --mbs 4 --tp 1 --dp 2 --pp 8 --placement g5.24xlarge
expect_error "unknown node type" "--placement" estimate --model bert --mbs 4 --tp 1 --dp 2 --pp 8 --placement a,b,c,d
expect_error "placement off the inventory" "--placement" estimate --model bert --heterogeneous --mbs 4 --tp 1 --dp 2 --pp 8 \
  --placement p4d.24xlarge,p4d.24xlarge,g5.24xlarge,g5.24xlarge
expect_error "partition off the layer count" "--partition" estimate --model bert --mbs 4 --tp 1 --dp 2 --pp 8 --partition 4,4,4,4,4,4,4,4
expect_error "partition with too few stages" "--partition" estimate --model bert --mbs 4 --tp 1 --dp 2 --pp 8 --partition 13,13
expect_error "partition across encoder and decoder" "--partition" estimate --model t5 --mbs 4 --tp 1 --dp 16 --pp 2 --partition 20,30

# A failed run leaves no report behind, not even a temporary one.
"$bin" search --model bert --cluster "$work/bad.yaml" --out-dir "$work/failed" >/dev/null 2>&1
if [ -z "$(ls -A "$work/failed" 2>/dev/null)" ]; then ok; else fail "failed run left files: $(ls "$work/failed")"; fi
touch "$work/not-a-dir"

# Usage and input errors: one line, exit 2 (CLI11's own errors too); a directory as a file.
expect_error "unknown option" "--bogus" search --model gpt2xl --bogus
expect_error "port out of range" "--master-port" launch --plan x.yaml --master-port 0
expect_error "NaN iterations" "--iterations" search --model gpt2xl --iterations nan --out-dir "$work/a"
expect_error "a degree fixed twice" "tp is fixed twice" search --model gpt2xl --fix tp=1 --fix tp=2 --out-dir "$work/a"
# A --fix no layout has names the rule it breaks, not every rule.
expect_error "--fix tp=3" "--fix: tp 3 does not divide the 8 GPUs a tensor-parallel group may span here (tp takes 1, 2, 4, 8)" \
  search --model llama3-8b --cluster dgx-h100 --fix tp=3 --out-dir "$work/a"
expect_error "--fix tp=8 under FASOP's bound" "--fix: tp 8 is more than the 4 GPUs a tensor-parallel group may span here (tp takes 1, 2, 4)" \
  search --model gpt2xl --fix tp=8 --out-dir "$work/a"
expect_error "--fix mbs=3" "--fix: mbs 3 does not divide the global batch of 512" \
  search --model llama3-8b --cluster dgx-h100 --fix mbs=3 --out-dir "$work/a"
expect_error "--fix pp=40" "--fix: pp 40 is more stages than the 32 layers" \
  search --model llama3-8b --cluster dgx-h100 --fix pp=40 --out-dir "$work/a"
expect_error "--fix of too few GPUs" "--fix: a layout uses all 1024 GPUs, tp x cp x dp x pp of them, and the degrees fixed make 128" \
  search --model llama3-8b --cluster dgx-h100 --fix tp=8,dp=8,pp=2 --out-dir "$work/a"
expect_error "a directory as the model" "--model: '$work/' is a directory" search --model "$work/" --out-dir "$work/a"
expect_error "unwritable --out-dir" "cannot create directory" search --model bert --out-dir "$work/not-a-dir/x"
expect_error "a tolerance of 100% or more" "--tolerance: must be a percentage from 0 to under 100" \
  search --model gpt2xl --pareto --tolerance 100 --out-dir "$work/a"
expect_error "a tolerance without a shape search" "--tolerance needs --pareto or --use-subset" \
  search --model gpt2xl --tolerance 5 --out-dir "$work/a"
# An unknown GPU without specs names the cluster file and the field.
printf 'name: u\nnode_types:\n  - {name: a, gpu: Z900, gpus_per_node: 8, gpu_memory_gib: 16, intra_node_bandwidth_bits_per_s: 1e11,\n     inter_node_bandwidth_bits_per_s: 1e10, price_usd_per_hour: 1}\nnodes: [{type: a, count: 2}]\n' \
  > "$work/z900.yaml"
expect_error "a GPU with neither profile nor specs" "$work/z900.yaml: field 'node_types[0].gpu'" \
  search --model gpt2xl --cluster "$work/z900.yaml" --out-dir "$work/a"
# An unknown GPU with peaks but no shares of them is not planned on guesses: refused, unless
# --assume-defaults, which the report states.
sed 's/gpu: Z900,/gpu: Z900, peak_tflops: {bf16: 100}, memory_bandwidth_bytes_per_s: 1e12,/' "$work/z900.yaml" > "$work/z900-peaks.yaml"
expect_error "a GPU with peaks and no data" "field 'node_types[0].gpu': GPU 'Z900' has no shipped data" \
  search --model llama3-8b --cluster "$work/z900-peaks.yaml" --out-dir "$work/a"
"$bin" search --model llama3-8b --cluster "$work/z900-peaks.yaml" --out-dir "$work/a" --assume-defaults --quiet > "$work/assumed.out" 2>&1 &&
  grep -q "^assumed: GPU 'Z900' (node type a) has no data: GEMMs at 0.75 of peak" "$work/assumed.out" && ok ||
  fail "--assume-defaults: the report does not state the defaults: $(cat "$work/assumed.out")"
sed 's/gpu: Z900,/gpu: Z900, peak_tflops: {bf16: 100}, memory_bandwidth_bytes_per_s: 1e12, compute_efficiency: 0.6, memory_efficiency: 0.8,/' \
  "$work/z900.yaml" > "$work/z900-data.yaml"
"$bin" search --model llama3-8b --cluster "$work/z900-data.yaml" --out-dir "$work/a" --quiet > "$work/given.out" 2>&1 &&
  ! grep -q "^assumed:" "$work/given.out" && ok || fail "a GPU whose shares are given: $(cat "$work/given.out")"
# A cluster larger than any layout is refused at once with the bound (100,000 nodes of 8 GPUs).
sed 's/gpu: Z900/gpu: A100/; s/count: 2/count: 100000/' "$work/z900.yaml" > "$work/huge.yaml"
expect_error "100,000 nodes" "(800000 GPUs): a layout uses every GPU" search --model gpt2xl --cluster "$work/huge.yaml" --out-dir "$work/a"
expect_error "more nodes than the bound" "more than 100000 nodes" search --model gpt2xl \
  --cluster <(sed 's/count: 100000/count: 100001/' "$work/huge.yaml") --out-dir "$work/a"

# --pareto over the 100,000-node inventory: shapes with more GPUs than any layout are skipped
# unbuilt, so it plans (seconds, not hours); an inventory of more shapes than a search can plan
# is refused, naming --max-nodes.
"$bin" search --model gpt2xl --cluster "$work/huge.yaml" --pareto --out-dir "$work/huge" --quiet > /dev/null 2>&1 &&
  [ "$(wc -l < "$work/huge/gpt2_pareto_front.csv")" -gt 1 ] && ok || fail "--pareto over 100,000 nodes"
printf 'name: three\nnode_types:\n' > "$work/three.yaml"
for t in a b c; do
  printf '  - {name: %s, gpu: A100, gpus_per_node: 8, gpu_memory_gib: 80, intra_node_bandwidth_bits_per_s: 1e12,\n     inter_node_bandwidth_bits_per_s: 1e11, price_usd_per_hour: 1}\n' $t >> "$work/three.yaml"
done
printf 'nodes: [{type: a, count: 1000}, {type: b, count: 1000}, {type: c, count: 1000}]\n' >> "$work/three.yaml"
expect_error "too many cluster shapes" "1003003000 cluster shapes" search --model gpt2xl --cluster "$work/three.yaml" --pareto --out-dir "$work/a"

# Interrupted: SIGINT or SIGTERM while the pareto table streams to its temporary file removes
# it, and the exit is the signal's (130, 143). Python starts the search with SIGINT at its
# default (a shell's background job ignores it) and signals it once the temporary file exists.
# The search is the exhaustive one over llama2-70b's 375,840 candidates (about a minute), which
# streams its table from the start: a search that ends before the poll sees the file would
# test nothing (gpt2xl's, under a second on a fast machine, did exactly that).
mixed_cluster="$(cd "$(dirname "$0")/../clusters" && pwd)/mixed-h100-a100-l4.yaml"
for signal in INT TERM; do
  rm -rf "$work/sig"
  mkdir -p "$work/sig"
  rc=$(cd "$work/sig" && python3 - "$bin" "$signal" "$mixed_cluster" <<'PY'
import glob, os, signal, subprocess, sys, time
search = subprocess.Popen([sys.argv[1], "search", "--model", "llama2-70b", "--cluster", sys.argv[3], "--pareto",
                           "--exhaustive", "--hold-limit", "1", "--quiet"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
deadline = time.time() + 60
while not glob.glob("main_logs/*.tmp.*") and search.poll() is None and time.time() < deadline:
    time.sleep(0.005)
search.send_signal(getattr(signal, "SIG" + sys.argv[2]))
code = search.wait()
print(128 - code if code < 0 else code)  # Popen gives -N for death by signal N
PY
)
  expected=$([ $signal = INT ] && echo 130 || echo 143)
  [ "$rc" = "$expected" ] && [ -z "$(ls "$work/sig/main_logs" 2>/dev/null | grep -F .tmp.)" ] && ok ||
    fail "SIG$signal during a pareto search: exit $rc (expected $expected), left: $(ls "$work/sig/main_logs" 2>&1)"
done

# Determinism: two runs, and one and two threads, give byte-identical tables.
for model in bert gpt2xl t5; do
  "$bin" search --model "$model" --heterogeneous --out-dir "$work/r1" --quiet >/dev/null &&
  "$bin" search --model "$model" --heterogeneous --out-dir "$work/r2" --quiet --threads 1 >/dev/null &&
  "$bin" search --model "$model" --heterogeneous --out-dir "$work/r3" --quiet --threads 2 >/dev/null || fail "search $model"
done
for f in bert_heterogeneous gpt2_heterogeneous T5_heterogeneous; do
  if cmp -s "$work/r1/$f.csv" "$work/r2/$f.csv" && cmp -s "$work/r1/$f.csv" "$work/r3/$f.csv"; then ok; else fail "$f.csv differs between runs"; fi
done
head -1 "$work/r1/gpt2_heterogeneous.csv" | grep -qx 'mbs,tp,dp,pp,node placement,num_a100,num_a10,partition,estimated time (s/step),pipeline time,DP all-reduce time,embedding layer all-reduce time,price_per_step,is_oom,oom_gpumem,is_fsdp_oom,fsdpoom_gpumem,train_cost' && ok || fail "CSV header"
[ "$(wc -l < "$work/r1/gpt2_heterogeneous.csv")" -eq 593 ] && ok || fail "gpt2_heterogeneous.csv rows"

# estimate --json at a FASOP plan (gpt2_heterogeneous.csv, its first row).
json=$("$bin" estimate --model gpt2XL --heterogeneous --mbs 1 --tp 1 --dp 2 --pp 16 \
  --placement g5.24xlarge,g5.24xlarge,g5.24xlarge,g5.24xlarge,g5.24xlarge,g5.24xlarge,g5.24xlarge,p4d.24xlarge \
  --partition 4,3,3,3,2,3,3,3,3,3,3,3,3,3,4,4 --json)
# search --json's schema: one plan, ranked 1, with the estimate's detail.
for key in model cluster plans rank step_time_s pipeline_time_s dp_allreduce_s embedding_allreduce_s price_per_step_usd \
           oom peak_memory_gib zero3_peak_memory_gib train_cost_usd partition terms_s stages; do
  case "$json" in *"\"$key\": "*) ok ;; *) fail "JSON lacks $key" ;; esac
done
step=$(printf '%s' "$json" | grep -o '"step_time_s": [0-9.e+-]*' | head -1 | cut -d' ' -f2)
awk -v s="$step" 'BEGIN { d = s - 1.0682228803634644; if (d < 0) d = -d; exit !(d < 1e-5 * 1.0682228803634644) }' && ok ||
  fail "step_time $step is not FASOP's 1.0682228803634644"

# --pareto: FASOP's cluster shapes, the front, constraints, errors.
expect_error "negative budget" "--max-cost" search --model gpt2xl --pareto --max-cost -1 --out-dir "$work/p"
expect_error "node type the cluster lacks" "H100" search --model gpt2xl --pareto --max-nodes H100=2 --out-dir "$work/p"
expect_error "node count that is not a number" "--max-nodes" search --model gpt2xl --pareto --max-nodes A100=two --out-dir "$work/p"
expect_error "pareto options without --pareto" "needs --pareto or --use-subset" search --model gpt2xl --max-nodes A100=2 --out-dir "$work/p"
expect_error "pareto-only flags without --pareto" "need --pareto" search --model gpt2xl --front-only --out-dir "$work/p"
expect_error "a budget no plan meets" "meets the budget" search --model gpt2xl --min-throughput 100 --out-dir "$work/p"
expect_error "--use-subset with --pareto" "keep one" search --model gpt2xl --pareto --use-subset --out-dir "$work/p"
expect_error "constraints nothing meets" "relax them" search --model gpt2xl --pareto --max-step-time 0.01 --out-dir "$work/none"
# --use-subset: the cheapest plan of at least 0.5 iterations/s on any subset of the 8 nodes
# (the full cluster's best takes 1.056 s a step; 5 A10 nodes make 0.647 it/s for $0.0175 a step).
if "$bin" search --model gpt2xl --heterogeneous --use-subset --min-throughput 0.5 --out-dir "$work/subset" --quiet \
     > "$work/subset.out" && grep -q "objective: the cheapest plan" "$work/subset.out" &&
   grep -q "uses 5xA10 of 1xA100+7xA10" "$work/subset.out" && [ -f "$work/subset/gpt2_heterogeneous_subset.csv" ]; then ok
else fail "--use-subset --min-throughput: $(cat "$work/subset.out")"; fi
# A budget on a plain search ranks only the plans within it.
if "$bin" search --model gpt2xl --heterogeneous --max-cost-per-step 0.0265 --out-dir "$work/budget" --quiet \
     > "$work/budget.out" && awk '$1 ~ /^[0-9]+$/ && $8 > 0.0265 { bad = 1 } END { exit bad }' "$work/budget.out"; then ok
else fail "--max-cost-per-step kept a dearer plan: $(cat "$work/budget.out")"; fi
if [ -z "$(ls -A "$work/none" 2>/dev/null)" ]; then ok; else fail "unmet constraints left files: $(ls "$work/none")"; fi
"$bin" search --model gpt2xl --heterogeneous --pareto --max-nodes A100=3 --max-nodes A10=3 --out-dir "$work/p1" --quiet --threads 1 > "$work/p1.out" &&
"$bin" search --model gpt2xl --heterogeneous --pareto --max-nodes A100=3 --max-nodes A10=3 --out-dir "$work/p2" --quiet --threads 2 >/dev/null &&
"$bin" search --model gpt2xl --heterogeneous --pareto --max-nodes A100=3 --max-nodes A10=3 --out-dir "$work/p3" --quiet --hold-limit 100 \
  --exhaustive 2> "$work/p3.err" >/dev/null &&
"$bin" search --model gpt2xl --heterogeneous --pareto --max-nodes A100=3 --max-nodes A10=3 --out-dir "$work/p4" --quiet \
  --front-only > "$work/p4.out" || fail "pareto search"
# --front-only searches by bounds: the same front, fewer candidates estimated.
cmp -s "$work/p1/gpt2_heterogeneous_pareto_front.csv" "$work/p4/gpt2_heterogeneous_pareto_front.csv" && ok ||
  fail "the bounded search's front differs from the exhaustive one"
grep -q "searched by bounds" "$work/p4.out" && ok || fail "--front-only did not search by bounds: $(head -n 1 "$work/p4.out")"
for f in gpt2_heterogeneous_pareto.csv gpt2_heterogeneous_pareto_front.csv gpt2_heterogeneous_pareto_front.svg; do
  if cmp -s "$work/p1/$f" "$work/p2/$f"; then ok; else fail "$f differs between 1 and 2 threads"; fi
done
[ "$(wc -l < "$work/p1/gpt2_heterogeneous_pareto.csv")" -eq 2599 ] && ok || fail "pareto table rows (2,598 candidates)"
cmp -s "$work/p1/gpt2_heterogeneous_pareto_front.csv" "$work/p3/gpt2_heterogeneous_pareto_front.csv" && ok || fail "streamed front differs"
grep -q "streamed in enumeration order" "$work/p3.err" && ok || fail "streaming not said on stderr"
[ "$(sort "$work/p1/gpt2_heterogeneous_pareto.csv" | md5sum)" = "$(sort "$work/p3/gpt2_heterogeneous_pareto.csv" | md5sum)" ] && ok ||
  fail "streamed table holds other rows"
grep -q "fastest:" "$work/p1.out" && grep -q "cheapest:" "$work/p1.out" && ok || fail "best plans not printed"
grep -q "<svg" "$work/p1/gpt2_heterogeneous_pareto_front.svg" && ok || fail "front SVG"
"$bin" search --model gpt2xl --heterogeneous --pareto --max-nodes A100=3 --max-nodes A10=3 --refine-all --front-only \
  --out-dir "$work/p4" --quiet >/dev/null || fail "pareto --refine-all"
cmp -s "$work/p1/gpt2_heterogeneous_pareto_front.csv" "$work/p4/gpt2_heterogeneous_pareto_front.csv" && ok ||
  fail "--refine-all changes the front"
# Constraints: every front plan respects them.
"$bin" search --model gpt2xl --pareto --max-nodes A100=3 --max-nodes A10=3 --max-cost 150000 --exclude-oom \
  --front-only --out-dir "$work/c" --quiet >/dev/null || fail "constrained pareto search"
[ ! -e "$work/c/gpt2_pareto.csv" ] && ok || fail "--front-only wrote the full table"
awk -F, 'NR > 1 && ($NF > 150000 || $(NF-4) != "False") { bad = 1 } END { exit bad }' "$work/c/gpt2_pareto_front.csv" && ok ||
  fail "front plan breaks the constraints"
[ "$(wc -l < "$work/c/gpt2_pareto_front.csv")" -gt 1 ] && ok || fail "constrained front is empty"
# estimate --nodes reproduces a row of FASOP's pareto table (2 A100 + 4 A10 nodes, pp < nodes).
out=$("$bin" estimate --model gpt2xl --cluster fasop-pareto --nodes A100=2 --nodes A10=4 --mbs 1 --tp 1 --dp 16 --pp 3 \
  --partition 22,14,14 --json)
step=$(printf '%s' "$out" | grep -o '"step_time_s": [0-9.e+-]*' | head -1 | cut -d' ' -f2)
awk -v s="$step" 'BEGIN { d = s - 0.77894526720047; if (d < 0) d = -d; exit !(d < 1e-5 * 0.77894526720047) }' && ok ||
  fail "pareto row: step_time $step is not FASOP's 0.77894526720047"

# Beyond FASOP: LLaMA on the analytic policy, a front on a mixed inventory, plans that cannot fit.
"$bin" search --model llama2-7b --pareto --max-nodes H100=1 --max-nodes A100-80G=1 --max-nodes L4=1 \
  --out-dir "$work/l" --quiet > "$work/l.out" || fail "llama2-7b pareto on a mixed inventory"
[ "$(wc -l < "$work/l/llama2-7b_pareto_front.csv")" -gt 1 ] && ok || fail "llama2-7b front is empty"
head -1 "$work/l/llama2-7b_pareto_front.csv" | grep -q "zero_stage,recompute,stage_dp,cp,ep,precision$" && ok || fail "analytic CSV lacks zero_stage,recompute,...,precision"
awk -F, 'NR > 1 && $(NF-10) != "False" { bad = 1 } END { exit bad }' "$work/l/llama2-7b_pareto_front.csv" && ok ||
  fail "analytic front holds a plan that does not fit"
# The shape search tries expert parallelism and the experts' FSDP too: Qwen3 30B-A3B on up to 2
# DGX H100 takes 13.4 s a step at ep 1 and 11.7 s at ep 2 (both ZeRO-3 with full recomputation
# at pp 1; --ep 1, --ep 2), slower and dearer than ep 8 at pp 2 with ZeRO-2 (10.4 s), the layout
# of NeMo's recipe for it on DGX H100: the front is that plan, its ep and ZeRO stage in the CSV's
# columns.
"$bin" search --model qwen3-30b-a3b --cluster dgx-h100 --pareto --max-nodes H100=2 --quiet --out-dir "$work/q" > /dev/null &&
  awk -F, 'NR > 1 { n++; if ($(NF-1) != 8 || $(NF-2) != 1 || $NF != "bf16" || $(NF-5) != 2 || $4 != 2) bad = 1 } END { exit bad || n < 1 }' \
    "$work/q/qwen3-30b-a3b_pareto_front.csv" && ok || fail "qwen3 pareto front without ep 8, pp 2 and ZeRO-2 in the CSV"
# --ep-comm-overlap keeps only the layouts Megatron-Core runs the EP all-to-all overlap in: ep 8
# at pp 2 only with virtual stages (the CSV's recompute column "none+v2"); an estimate of one
# without them is refused, naming the fix.
"$bin" search --model qwen3-30b-a3b --cluster "$work/h100x2.yaml" --ep 1,8 --virtual-stages 1,2 --ep-comm-overlap \
  --quiet --out-dir "$work/ov" > /dev/null &&
  awk -F, 'NR > 1 && $(NF-1) > 1 && $4 > 1 { n++; if ($(NF-4) !~ /[+]v2$/) bad = 1 } END { exit bad || n < 1 }' \
    "$work/ov/qwen3-30b-a3b.csv" && ok || fail "--ep-comm-overlap kept an ep 8 layout at pp 2 without virtual stages"
expect_error "--ep-comm-overlap at pp 2 without virtual stages" "pass --virtual-stages 2 or more" estimate \
  --model qwen3-30b-a3b --cluster "$work/h100x2.yaml" --mbs 2 --tp 1 --dp 8 --pp 2 --ep 8 --ep-comm-overlap
# --moe-dispatcher: HybridEP saved in the plan and emitted as Megatron's flex dispatcher; a
# dispatcher Megatron-Core or DeepEP refuses, or a misspelt one, is one line and exit 2.
"$bin" search --model qwen3-30b-a3b --cluster "$work/h100x2.yaml" --ep 8 --moe-dispatcher hybridep --quiet \
  --out-dir "$work/hep" --save-plan "$work/hep/plan.yaml" > "$work/hep.out" &&
  grep -q '^moe_token_dispatcher: hybridep$' "$work/hep/plan.yaml" &&
  grep -q '^MoE: tokens dispatched by hybridep' "$work/hep.out" &&
  "$bin" schedule --plan "$work/hep/plan.yaml" --format megatron > "$work/hep/args" &&
  grep -q -- '^--moe-token-dispatcher-type flex \\$' "$work/hep/args" &&
  grep -q -- '^--moe-flex-dispatcher-backend hybridep \\$' "$work/hep/args" &&
  ok || fail "--moe-dispatcher hybridep: not in the plan, the output or Megatron's arguments"
# Two dispatchers searched: every ep 8 layout once with each (the CSV's ep column "8+hybridep");
# estimate prices one.
"$bin" search --model qwen3-30b-a3b --cluster "$work/h100x2.yaml" --ep 8 --moe-dispatcher alltoall,hybridep --quiet \
  --out-dir "$work/hep2" > /dev/null &&
  [ "$(awk -F, 'NR > 1 && $(NF-1) == "8+hybridep"' "$work/hep2/qwen3-30b-a3b.csv" | wc -l)" -gt 0 ] &&
  [ "$(awk -F, 'NR > 1 && $(NF-1) == "8+hybridep"' "$work/hep2/qwen3-30b-a3b.csv" | wc -l)" -eq \
    "$(awk -F, 'NR > 1 && $(NF-1) == "8"' "$work/hep2/qwen3-30b-a3b.csv" | wc -l)" ] &&
  ok || fail "--moe-dispatcher alltoall,hybridep: not every ep 8 layout tried with both"
expect_error "estimate with two dispatchers" "give one name" estimate --model qwen3-30b-a3b \
  --cluster "$work/h100x2.yaml" --mbs 1 --tp 1 --dp 16 --pp 1 --ep 8 --moe-dispatcher alltoall,hybridep
expect_error "--cuda-graphs with dropless experts" "drop-padding" estimate --model qwen3-30b-a3b \
  --cluster "$work/h100x2.yaml" --mbs 1 --tp 1 --dp 16 --pp 1 --ep 8 --cuda-graphs
expect_error "--moe-dispatcher on a dense model" "has no experts to dispatch to" estimate --model llama2-7b \
  --cluster "$work/h100x2.yaml" --mbs 1 --tp 1 --dp 16 --pp 1 --moe-dispatcher deepep
expect_error "--moe-dispatcher flex without tp x ep" "needs tp x ep > 1" estimate --model qwen3-30b-a3b \
  --cluster "$work/h100x2.yaml" --mbs 1 --tp 1 --dp 16 --pp 1 --moe-dispatcher hybridep
expect_error "--moe-dispatcher misspelt" "--moe-dispatcher" estimate --model qwen3-30b-a3b \
  --cluster "$work/h100x2.yaml" --mbs 1 --tp 1 --dp 16 --pp 1 --moe-dispatcher flex
printf 'name: one-l4\nnode_types:\n  - {name: g6.48xlarge, gpu: L4, gpus_per_node: 8, gpu_memory_gib: 24, peak_tflops: {bf16: 121}, memory_bandwidth_bytes_per_s: 3.0e11, intra_node_bandwidth_bits_per_s: 2.56e11, inter_node_bandwidth_bits_per_s: 1.0e11, price_usd_per_hour: 13.35}\nnodes:\n  - {type: g6.48xlarge, count: 1}\n' > "$work/one-l4.yaml"
expect_error "a model that fits nowhere" "no plan of model 'llama2-70b' fits" search --model llama2-70b --cluster "$work/one-l4.yaml" --out-dir "$work/nofit"
[ ! -e "$work/nofit" ] && ok || fail "a search that fits nothing wrote files"
sed 's/inter_node_bandwidth_bits_per_s: 1.0e11/inter_node_bandwidth_bits_per_s: 0/' "$work/one-l4.yaml" > "$work/zero-bw.yaml"
expect_error "zero bandwidth" "inter_node_bandwidth_bits_per_s" search --model llama2-7b --cluster "$work/zero-bw.yaml" --out-dir "$work/z"
expect_error "tp splitting heads" "--tp" estimate --model llama2-70b --cluster mixed-h100-a100-l4 --mbs 1 --tp 3 --dp 32 --pp 1

# calibrate: FASOP's measured A100 profile (renamed to the node type's GPU) fits an efficiency.
sed 's/^gpu: A100$/gpu: A100-80G/' "$(dirname "$0")/../configs/profiles/gpt2xl_a100.yaml" > "$work/gpt2xl_a100-80g.yaml"
"$bin" calibrate --model gpt2xl --cluster aws-a100-80g --profile "$work/gpt2xl_a100-80g.yaml" > "$work/cal.out" &&
  grep -q "compute_efficiency 0\.0[0-9]" "$work/cal.out" && ok || fail "calibrate: $(cat "$work/cal.out")"
expect_error "calibrate on a GPU the cluster lacks" "--node-type" calibrate --model gpt2xl --cluster aws-h100 \
  --profile "$work/gpt2xl_a100-80g.yaml"

# calibrate names the preset's file and how to get a copy to edit (a preset is compiled in).
grep -q "in clusters/aws-a100-80g.yaml (compiled in: save a copy with \`fasop-cpp presets show clusters/aws-a100-80g.yaml > my.yaml\`" "$work/cal.out" && ok ||
  fail "calibrate does not say how to edit the preset: $(tail -1 "$work/cal.out")"

# presets: every shipped file listed by kind; `show` prints one byte for byte, and the saved copy
# is a cluster that plans like the preset.
root=$(cd "$(dirname "$0")/.." && pwd)
"$bin" presets list > "$work/presets.out" && ok || fail "presets list failed"
[ "$(grep -c '^model ' "$work/presets.out")" -eq "$(ls "$root"/configs/models/*.yaml | wc -l)" ] && ok ||
  fail "presets list: $(grep -c '^model ' "$work/presets.out") models, configs/models has $(ls "$root"/configs/models/*.yaml | wc -l)"
grep -q '^cluster *aws-h100 *clusters/aws-h100.yaml$' "$work/presets.out" && ok || fail "presets list lacks aws-h100: $(head -3 "$work/presets.out")"
[ "$("$bin" presets list gpu | wc -l)" -eq "$(ls "$root"/configs/gpus/*.yaml | wc -l)" ] && ok || fail "presets list gpu"
"$bin" presets show aws-h100 > "$work/my-h100.yaml" && cmp -s "$work/my-h100.yaml" "$root/clusters/aws-h100.yaml" && ok ||
  fail "presets show aws-h100 differs from clusters/aws-h100.yaml"
"$bin" presets show gpt2xl --kind model | cmp -s - "$root/configs/models/gpt2xl.yaml" && ok || fail "presets show gpt2xl --kind model"
"$bin" estimate --model llama3-8b --cluster aws-h100 --mbs 1 --tp 8 --dp 4 --pp 4 --json > "$work/preset.json" &&
  "$bin" estimate --model llama3-8b --cluster "$work/my-h100.yaml" --mbs 1 --tp 8 --dp 4 --pp 4 --json > "$work/copy.json" &&
  grep -o '"step_time_s": [0-9.e+-]*' "$work/preset.json" | cmp -s - <(grep -o '"step_time_s": [0-9.e+-]*' "$work/copy.json") && ok ||
  fail "the saved copy of aws-h100 plans differently: $(head -c 300 "$work/copy.json")"
expect_error "presets show of an unknown name" "presets list" presets show aws-h200
expect_error "presets list of an unknown kind" "model, cluster, gpu" presets list clusters

# Zones: node types in two zones need zones:, and then the estimate prices the egress: GPT-2 XL,
# tp 4, dp 2, pp 2 over the zones: the sends, both ways, 2 x 64 x 1024 x 1600 x 2 bytes (the
# global batch's activations), the tied embedding's 8 rank pairs 2 x 4 x 1600 x 50257 / 4 each:
# 1,706,009,600 bytes a step at $0.01 / GB = $0.017060096.
printf 'name: zoned\nnode_types:\n' > "$work/zoned.yaml"
for z in a b; do
  printf '  - {name: n%s, gpu: A100, gpus_per_node: 8, gpu_memory_gib: 80, intra_node_bandwidth_bits_per_s: 1e12,\n     inter_node_bandwidth_bits_per_s: 1e11, price_usd_per_hour: 1, zone: zone-%s}\n' $z $z >> "$work/zoned.yaml"
done
printf 'nodes: [{type: na, count: 1}, {type: nb, count: 1}]\n' >> "$work/zoned.yaml"
zoned_plan=(--model gpt2xl --policy analytic --cluster "$work/zoned.yaml" --mbs 1 --tp 4 --dp 2 --pp 2 --partition 25,25)
expect_error "two zones without zones:" "$work/zoned.yaml: field 'zones': missing" estimate "${zoned_plan[@]}"
printf 'zones: {inter_zone_bandwidth_bits_per_s: 1e10, inter_zone_latency_s: 1e-3, egress_usd_per_gb: 0.01}\n' >> "$work/zoned.yaml"
"$bin" estimate "${zoned_plan[@]}" --json > "$work/zoned.json" && grep -q '"egress_usd_per_step": 0\.017060096,' "$work/zoned.json" && ok ||
  fail "zoned estimate: $(head -c 600 "$work/zoned.json")"

# search --json: the ranked plans as one JSON document, numbered as the text table numbers them;
# the first is the CSV's first row.
"$bin" search --model gpt2xl --heterogeneous --json --top 3 --out-dir "$work/json" --quiet > "$work/search.json" &&
  /usr/bin/env python3 - "$work/search.json" "$work/json/gpt2_heterogeneous.csv" <<'PY' && ok || fail "search --json: $(head -c 400 "$work/search.json")"
import csv, json, sys
doc = json.load(open(sys.argv[1]))
rows = list(csv.DictReader(open(sys.argv[2])))
plans = doc["plans"]
assert doc["ranking"] == "fastest first" and len(plans) == 3, doc
assert [p["rank"] for p in plans] == [1, 2, 3]
assert plans[0]["step_time_s"] == float(rows[0]["estimated time (s/step)"]), (plans[0], rows[0])
assert plans[0]["partition"] == json.loads(rows[0]["partition"])
assert sys.argv[2] in doc["files"] and doc["candidates"] == len(rows)
PY
# search --pareto --json: the front, cheapest first, as its CSV; --rank K saves the plan numbered K there.
"$bin" search --model gpt2xl --heterogeneous --pareto --front-only --json --save-plan "$work/rank2.yaml" --rank 2 \
  --out-dir "$work/pjson" --quiet > "$work/pareto.json" &&
  /usr/bin/env python3 - "$work/pareto.json" "$work/pjson/gpt2_heterogeneous_pareto_front.csv" "$work/rank2.yaml" <<'PY' && ok || fail "search --pareto --json / --rank: $(head -c 400 "$work/pareto.json")"
import csv, json, re, sys
doc = json.load(open(sys.argv[1]))
rows = list(csv.DictReader(open(sys.argv[2])))
plans = doc["plans"]
assert doc["ranking"] == "cheapest first" and len(plans) == len(rows) > 2, (len(plans), len(rows))
costs = [p["train_cost_usd"] for p in plans]
assert costs == sorted(costs), costs
assert [p["step_time_s"] for p in plans] == [float(r["estimated time (s/step)"]) for r in rows]
saved = open(sys.argv[3]).read()
saved_step_s = float(re.search(r"step_time_s: (\S+)", saved).group(1))
assert saved_step_s == plans[1]["step_time_s"], (saved_step_s, plans[1])
PY
expect_error "--top below zero" "--top: must be a whole number of plans, 0 or more, got '-1'" search --model gpt2xl --top -1 --out-dir "$work/neg"
expect_error "--threads not a number" "--threads: must be a whole number of threads, 0 or more, got 'x'" search --model gpt2xl --threads x

# FASOP's cells: oom_gpumem and fsdpoom_gpumem as torch prints them, as FASOP's tables hold them
# (FASOP's own gpt2_heterogeneous.csv, row 1: tensor([10.3802]) and tensor([9.6936]), for the
# same layout on the same node types); --csv-style plain gives the numbers.
row=$(sed -n 2p "$work/json/gpt2_heterogeneous.csv")
case "$row" in *,False,tensor\(\[10.3802\]\),False,tensor\(\[9.6936\]\),*) ok ;; *) fail "FASOP cells: $row" ;; esac
"$bin" search --model gpt2xl --heterogeneous --csv-style plain --out-dir "$work/plain" --quiet > /dev/null &&
  sed -n 2p "$work/plain/gpt2_heterogeneous.csv" | grep -qE ',False,[0-9]+\.[0-9]+,False,[0-9]+\.[0-9]+,' && ok ||
  fail "--csv-style plain: $(sed -n 2p "$work/plain/gpt2_heterogeneous.csv")"
# FASOP's flags: --iter prices the run, --add_exp_name names the report, --gpu_per_node and
# --precision are FASOP's (16 its default).
"$bin" search --type gpt2XL --heterogeneous --iter 1000 --gpu_per_node 4 --precision 16 --add_exp_name _try \
  --out-dir "$work/fasopflags" --quiet > /dev/null && /usr/bin/env python3 - "$work/fasopflags/gpt2_heterogeneous_try.csv" <<'PY' && ok || fail "FASOP flags: $(ls "$work/fasopflags" 2>&1)"
import csv, sys
row = next(csv.DictReader(open(sys.argv[1])))
assert abs(float(row["train_cost"]) - 1000 * float(row["price_per_step"])) < 1e-9 * float(row["train_cost"]), row
PY
"$bin" search --model gpt2xl --heterogeneous --gpu_per_node 8 --out-dir "$work/gpn8" --quiet > /dev/null &&
  awk -F, 'NR > 1 { if ($2 * $3 * $4 != 64) bad = 1 } END { exit bad }' "$work/gpn8/gpt2_heterogeneous.csv" && ok ||
  fail "--gpu_per_node 8: layouts not of 64 GPUs"
expect_error "--precision 24" "--precision" search --model gpt2xl --precision 24
# A measured profile without tp 4: layouts with tp 4 are left out, and stderr says so.
mkdir -p "$work/notp4"
for g in a100 a10; do "$bin" presets show "gpt2xl_$g" --kind profile | grep -vE '^    4: \{' > "$work/notp4/gpt2xl_$g.yaml"; done
"$bin" search --model gpt2xl --heterogeneous --profile-dir "$work/notp4" --out-dir "$work/notp4/out" > /dev/null 2> "$work/notp4.err" &&
  grep -q "has no times for layer type 'embedding' at tp 4: layouts with tp 4 are left out" "$work/notp4.err" &&
  awk -F, 'NR > 1 && $2 == 4 { bad = 1 } END { exit bad }' "$work/notp4/out/gpt2_heterogeneous.csv" && ok ||
  fail "profile without tp 4: $(cat "$work/notp4.err")"

# Bash completion from the command tree: subcommands, flags, a flag's choices, presets.
"$bin" completion bash > "$work/completion.bash" && complete_words() {
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _fasop_cpp; printf "%s\n" "${COMPREPLY[@]}"' _ "$work/completion.bash" "$@"
}
[ "$(complete_words fasop-cpp sch)" = schedule ] && ok || fail "completion of 'sch': $(complete_words fasop-cpp sch)"
[ "$(complete_words fasop-cpp search --mode)" = --model ] && ok || fail "completion of --mode: $(complete_words fasop-cpp search --mode)"
[ "$(complete_words fasop-cpp schedule --format "" | sort | tr '\n' ' ')" = "atorch deepspeed deepspeed-pipeline megatron megatron-bridge slapo torchtitan " ] && ok ||
  fail "completion of --format: $(complete_words fasop-cpp schedule --format "")"
complete_words fasop-cpp search --model gpt2 | grep -qx gpt2xl && ok || fail "completion of --model gpt2: $(complete_words fasop-cpp search --model gpt2)"
[ "$(complete_words fasop-cpp launch st)" = status ] && ok || fail "completion of 'launch st': $(complete_words fasop-cpp launch st)"
# DeepSpeed: the config carries no partition (DeepSpeed reads none from it); the pipeline module
# does, and loads without DeepSpeed (scripts/check-deepspeed-emit.py runs it with DeepSpeed).
mkdir -p "$work/ds"
"$bin" search --model bert --cluster fasop-bert --fix tp=2,pp=2,recompute=full,zero=1 --out-dir "$work/ds" --quiet \
  --save-plan "$work/ds/bert.yaml" > /dev/null || fail "search for a DeepSpeed plan"
"$bin" schedule --plan "$work/ds/bert.yaml" --format deepspeed -o "$work/ds/ds_config.json" > /dev/null &&
  grep -q '"activation_checkpoint_interval": 1' "$work/ds/ds_config.json" && ! grep -q '"parts"\|"stages"' "$work/ds/ds_config.json" &&
  ok || fail "deepspeed config: $(cat "$work/ds/ds_config.json")"
out=$("$bin" schedule --plan "$work/ds/bert.yaml" --format deepspeed-pipeline -o "$work/ds/pipeline_module.py")
[ "$out" = "wrote $work/ds/pipeline_module.py (deepspeed-pipeline)" ] && ok || fail "schedule deepspeed-pipeline said '$out'"
# UNIT_PARTS: the running sums of the plan's partition ([14, 12] -> [0, 14, 26]).
parts=$(sed -n 's/^partition: \[\(.*\)\].*/\1/p' "$work/ds/bert.yaml" | awk -F', ' '{ s = 0; t = "0"; for (i = 1; i <= NF; i++) { s += $i; t = t ", " s } print "[" t "]" }')
grep -qxF "UNIT_PARTS = $parts" "$work/ds/pipeline_module.py" && ok || fail "UNIT_PARTS is not $parts: $(grep UNIT_PARTS "$work/ds/pipeline_module.py")"
# Loaded without DeepSpeed: the plan's degrees and units; a unit given as two entries moves the
# later stage boundaries by one; a wrong count of entries is named.
(cd "$work/ds" && python3 -c '
import pipeline_module as m
assert (m.TP, m.PP, m.DP, m.ACTIVATION_CHECKPOINT_INTERVAL) == (2, 2, 4, 1), (m.TP, m.PP, m.DP)
assert len(m.UNITS) == 26 and m.UNITS[:2] == ["embedding", "transformer 0"] and m.UNITS[-1] == "post_process", m.UNITS
flat, parts = m.flatten_units([["a", "b"]] + ["u"] * 25)
assert len(flat) == 27 and parts == [0] + [p + 1 for p in m.UNIT_PARTS[1:]], parts
try:
    m.flatten_units(["u"] * 25)
    raise SystemExit("25 entries accepted")
except ValueError as e:
    assert "25 layer entries for the plan'"'"'s 26 units" in str(e), e
') && ok || fail "pipeline_module.py does not load as planned"
"$bin" search --model bert --cluster fasop-bert --fix pp=1,zero=3 --out-dir "$work/ds" --quiet --save-plan "$work/ds/zero3.yaml" > /dev/null ||
  fail "search for a ZeRO-3 plan"
"$bin" schedule --plan "$work/ds/zero3.yaml" --format deepspeed > /dev/null && ok || fail "deepspeed config of a ZeRO-3 plan without pipelining"
expect_error "a PipelineModule under ZeRO 3" "allows ZeRO 0 or 1" schedule --plan "$work/ds/zero3.yaml" --format deepspeed-pipeline

# What-ifs as flags: batch, sequence, nodes, run length and deadline, echoed in the header.
# 1e11 tokens at 1024 x 4096 tokens a step: 23,841.86 steps; 14 days = 1,209,600 s over them
# is 50.73 s a step.
"$bin" search --model llama3-8b --cluster dgx-h100 --nodes H100=2 --global-batch 1024 --seq-length 4096 \
  --train-tokens 1e11 --deadline 14d --out-dir "$work/a" --quiet > "$work/whatif.out" 2>&1 || fail "what-if search: $(cat "$work/whatif.out")"
grep -q "^model llama3-8b: 8.03B parameters, 32 layers, sequence 4096, global batch 1024, bf16 " "$work/whatif.out" &&
  grep -q "^cluster dgx-h100\[2xH100\]: 16 GPUs on 2 x dgx-h100 (8 x H100), \$48.00/h " "$work/whatif.out" &&
  grep -q "^run: 100B tokens = 23.8k steps of 1024 x 4096 tokens (--train-tokens); deadline 14 days: steps of at most 50.73 s$" "$work/whatif.out" &&
  grep -q "^layers on H100: timed from the GPU's data at sequence 4096, as the measured profile is at 8192" "$work/whatif.out" &&
  ok || fail "what-if search header: $(head -5 "$work/whatif.out")"
awk '$1 ~ /^[0-9]+$/ && $2 + 0 > 50.7343 { bad = 1 } END { exit bad }' "$work/whatif.out" && ok ||
  fail "a plan slower than the deadline's 50.73 s a step: $(cat "$work/whatif.out")"
expect_error "a deadline no plan meets" "meets the budget (step <= " \
  search --model llama3-8b --cluster dgx-h100 --nodes H100=2 --deadline 14d --out-dir "$work/a"
expect_error "a deadline that is no duration" "--deadline: '14days' is not a duration" \
  search --model llama3-8b --cluster dgx-h100 --deadline 14days --out-dir "$work/a"
expect_error "--nodes with --pareto" "bound them with --max-nodes" \
  search --model llama3-8b --cluster dgx-h100 --nodes H100=2 --pareto --out-dir "$work/a"
expect_error "--seq-length on a measured profile" "times layers at sequence 1024; pass --analytic-profiles" \
  search --model gpt2xl --seq-length 2048 --out-dir "$work/a"
# estimate: whether the run meets the deadline (1.79M steps of 15T tokens at 1024 x 8192).
"$bin" estimate --model llama3-8b --cluster dgx-h100 --nodes H100=2 --mbs 1 --tp 1 --dp 16 --pp 1 --zero 1 \
  --global-batch 1024 --deadline 2w > "$work/deadline.out" 2>&1 &&
  grep -q "^run: 15T tokens = 1.79M steps of 1024 x 8192 tokens (the model's train_tokens; " "$work/deadline.out" &&
  grep -q "^deadline             14 days: the run takes [0-9.e+]* days, past it" "$work/deadline.out" && ok ||
  fail "estimate --deadline: $(cat "$work/deadline.out")"
"$bin" search --model llama3-8b --cluster dgx-h100 --nodes H100=1 --out-dir "$work/a" --quiet --save-plan "$work/whatif-plan.yaml" > /dev/null 2>&1 ||
  fail "search --save-plan for the what-if refusal"
expect_error "--plan with --global-batch" "--plan re-estimates the saved plan as it was made, without --global-batch" \
  estimate --plan "$work/whatif-plan.yaml" --global-batch 64

# A front that uses every node the inventory holds says so, and how to widen it: of 1 A100 and
# 1 A10 node, plan 1 runs on the A10 node alone, plan 2 on both.
"$bin" search --model gpt2xl --pareto --max-nodes A100=1 --max-nodes A10=1 --out-dir "$work/a" --quiet > "$work/ceiling.out" 2>&1 &&
  grep -qx "inventory ceiling: plan 2 uses all 1 p4d.24xlarge nodes (A100) the search may rent; more might be faster or cheaper: widen it, e.g. --max-nodes p4d.24xlarge=2" "$work/ceiling.out" &&
  grep -q "^inventory ceiling: every plan shown uses all 1 g5.24xlarge nodes (A10) " "$work/ceiling.out" && ok ||
  fail "inventory ceiling: $(cat "$work/ceiling.out")"
"$bin" search --model gpt2xl --pareto --out-dir "$work/a" --quiet --max-nodes A100=8 --max-nodes A10=0 > "$work/ceiling8.out" 2>&1 &&
  grep -q "^inventory ceiling: plan [0-9]* uses all 8 p4d.24xlarge nodes (A100)" "$work/ceiling8.out" && ok ||
  fail "inventory ceiling of 8 A100 nodes: $(cat "$work/ceiling8.out")"

# --explain: the best plan with --fix's degrees against the best without, term by term; the
# terms add up to each plan's step, and the difference is the steps'.
"$bin" search --model llama3-8b --cluster dgx-h100 --nodes H100=4 --fix tp=8 --explain --out-dir "$work/a" --quiet \
  > "$work/explain.out" 2>&1 || fail "search --explain: $(cat "$work/explain.out")"
grep -q "^explain: the best plan with --fix tp=8 against the best without it, term by term$" "$work/explain.out" &&
  grep -q "^  fixed: .*tp 8 " "$work/explain.out" && grep -q "^  free: .*tp 1 " "$work/explain.out" &&
  awk '/^  term \(s\)/ { on = 1; next } on && $1 == "step" { step_a = $2; step_b = $3; diff = $4; on = 0 }
       on { a += $2; b += $3 }
       END { d = step_a - step_b - diff; if (d < 0) d = -d
             ea = a - step_a; if (ea < 0) ea = -ea; eb = b - step_b; if (eb < 0) eb = -eb
             exit !(step_a > step_b && d < 1e-3 && ea < 1e-3 && eb < 1e-3) }' "$work/explain.out" && ok ||
  fail "--explain's terms: $(cat "$work/explain.out")"
grep -q "^left off: --sequence-parallel: plan 1 with it takes [0-9.]* s a step" "$work/explain.out" && ok ||
  fail "no 'left off: --sequence-parallel' line above a tp 8 plan: $(cat "$work/explain.out")"
"$bin" search --model llama3-8b --cluster dgx-h100 --nodes H100=4 --fix tp=8 --sequence-parallel --out-dir "$work/a" --quiet \
  > "$work/sp.out" 2>&1 && ! grep -q "^left off: --sequence-parallel" "$work/sp.out" && ok ||
  fail "left off: printed though --sequence-parallel was searched"
# The parameter all-gather overlap on the best (ZeRO-2, dp 32) plan: a little faster, the same memory.
grep -q "^left off: --overlap-param-gather: plan 1 with it takes [0-9.]* s a step (-[0-9.]*%), [0-9.]* GiB/GPU (+0.0)" \
  "$work/explain.out" && ok || fail "no 'left off: --overlap-param-gather' line: $(cat "$work/explain.out")"
"$bin" search --model llama3-8b --cluster dgx-h100 --nodes H100=4 --fix tp=8 --overlap-param-gather --out-dir "$work/a" --quiet \
  > "$work/pg.out" 2>&1 && ! grep -q "^left off: --overlap-param-gather" "$work/pg.out" && ok ||
  fail "left off: printed though --overlap-param-gather was given"
# --tp-comm-overlap changes the layers' times: priced where the GPUs' data time them (it hides
# most of tp 8's all-reduces behind the GEMMs), named unpriced over a measured profile.
grep -q "^left off: --tp-comm-overlap: not priced, as a measured profile times the layers without it" "$work/explain.out" && ok ||
  fail "no unpriced 'left off: --tp-comm-overlap' line over the measured H100 profile: $(cat "$work/explain.out")"
"$bin" search --model llama3-8b --cluster dgx-h100 --nodes H100=4 --fix tp=8 --analytic-profiles --out-dir "$work/a" --quiet \
  > "$work/tpo.out" 2>&1 &&
  grep -q "^left off: --tp-comm-overlap --sequence-parallel: plan 1 with it takes [0-9.]* s a step (-[0-9.]*%)" "$work/tpo.out" && ok ||
  fail "no priced 'left off: --tp-comm-overlap' line: $(cat "$work/tpo.out")"
"$bin" search --model llama3-8b --cluster dgx-h100 --nodes H100=4 --fix tp=8 --analytic-profiles --tp-comm-overlap --sequence-parallel \
  --out-dir "$work/a" --quiet > "$work/tpo2.out" 2>&1 && ! grep -q "^left off: --tp-comm-overlap" "$work/tpo2.out" && ok ||
  fail "left off: --tp-comm-overlap printed though it was given"
# A batch the GPUs barely divide: the search says dp's cap, the stages it forces and the way out.
"$bin" search --model llama3-8b --cluster dgx-h100 --nodes H100=4 --global-batch 1001 --out-dir "$work/a" --quiet \
  > "$work/b1001.out" 2>&1 &&
  grep -q "^batch: the global batch of 1001 and the 32 GPUs share no factor above 1, so dp is at most 1 and every plan runs at least 4 pipeline stages; --global-batch 992" "$work/b1001.out" &&
  ! grep -q "^batch:" "$work/explain.out" && ok || fail "no batch line for a batch of 1001 on 32 GPUs: $(cat "$work/b1001.out")"
# The run's wall time: plan 1's step x the run's steps (15T tokens / (512 x 8192) = 3.576M steps).
awk '$1 == "1" && !t { t = $2 } /^run: plan 1 trains the 3.58M steps in / { d = $9 }
     END { want = t * 15e12 / (512 * 8192) / 86400; exit !(d != "" && (d - want < 1 && want - d < 1)) }' "$work/explain.out" && ok ||
  fail "run: line's days are not plan 1's step x 3.576M steps: $(grep '^run:\|^   1 ' "$work/explain.out")"
# --table-rows: the plain search's CSV holds the fastest N rows and says how big all would be.
"$bin" search --model llama3-8b --cluster dgx-h100 --nodes H100=4 --table-rows 10 --out-dir "$work/rows" --quiet \
  > "$work/rows.out" 2>&1 && [ "$(wc -l < "$work/rows/llama3-8b.csv")" -eq 11 ] &&
  grep -q "^wrote $work/rows/llama3-8b.csv (the fastest 10 of 928 plans; --table-rows 0 writes all, about 0.0 GB)$" "$work/rows.out" &&
  "$bin" search --model llama3-8b --cluster dgx-h100 --nodes H100=4 --table-rows 0 --out-dir "$work/rows" --quiet > /dev/null 2>&1 &&
  [ "$(wc -l < "$work/rows/llama3-8b.csv")" -eq 929 ] && ok || fail "--table-rows: $(cat "$work/rows.out")"
expect_error "--explain with --pareto" "--explain compares the plans of a plain search" \
  search --model gpt2xl --pareto --explain --out-dir "$work/a"

# The manual page holds every command and every flag --help shows, and reads as roff.
"$bin" man > "$work/fasop-cpp.1" || fail "fasop-cpp man"
for cmd in search estimate "plan show" schedule "launch report" calibrate validate presets; do
  grep -qF ".SS \"fasop\\-cpp $cmd\"" "$work/fasop-cpp.1" && ok || fail "man page lacks 'fasop-cpp $cmd'"
done
missing=$("$bin" search --help | grep -E '^  +-' | sed 's/  \{2,\}.*//' | grep -o -- '--[a-z][a-z0-9_-]*' | sort -u | grep -vx -- --help | while read -r flag; do
  grep -qF "\fB${flag//-/\\-}\fR" "$work/fasop-cpp.1" || echo "$flag"; done)
[ -z "$missing" ] && ok || fail "man page lacks search's flags: $missing"
if command -v groff > /dev/null; then
  groff -man -Tutf8 -ww -z "$work/fasop-cpp.1" 2> "$work/groff.err" && [ ! -s "$work/groff.err" ] && ok ||
    fail "groff warns on the man page: $(head -3 "$work/groff.err")"
fi

finish
