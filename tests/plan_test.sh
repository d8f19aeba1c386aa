#!/usr/bin/env bash
# Plans as a user meets them: search --save-plan, estimate --plan (identical numbers after the
# round trip), plan show and its timeline, search --fix, schedule, and plans their specs can no
# longer hold. Usage: plan_test.sh PATH/TO/fasop-cpp
set -uo pipefail
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
source "$root/tests/test_lib.sh"
# FASOP's policy: the best heterogeneous gpt2xl plan, saved, re-estimated: the same numbers.
"$bin" search --model gpt2xl --heterogeneous --out-dir logs --save-plan plans/best.yaml --quiet > search.out ||
  fail "search --save-plan: $(tail -3 search.out)"
grep -q "^tp: 1$" plans/best.yaml && grep -q "^pp: 16$" plans/best.yaml && ok || fail "saved plan is not FASOP's best (tp 1, pp 16)"
"$bin" estimate --plan plans/best.yaml --json > again.json || fail "estimate --plan"
"$bin" estimate --model gpt2xl --heterogeneous --mbs 1 --tp 1 --dp 2 --pp 16 \
  --placement "$(sed -n 's/^node_order: \[\(.*\)\].*/\1/p' plans/best.yaml | tr -d '" ')" \
  --partition "$(sed -n 's/^partition: \[\(.*\)\].*/\1/p' plans/best.yaml | tr -d ' ')" --json > direct.json
# The same figures (the plan's cluster is named with its shape, the direct one without).
cmp -s <(sed 's/"cluster": "[^"]*"//' again.json) <(sed 's/"cluster": "[^"]*"//' direct.json) && ok ||
  fail "estimate --plan differs from the same plan given by hand"
# The plan file keeps 17 digits: the estimate made again equals the saved one bit for bit
# (estimate --plan says when any saved figure differs at all).
"$bin" estimate --plan plans/best.yaml | grep -q "note: the estimate differs" && fail "round trip reports a change" || ok

# The analytic policy and --fix: the best plan of a search restricted to tp 2, pp 4, micro-batch 2,
# no recomputation, ZeRO-1 (32 micro-batches of 1,024 over dp 16): partition [9, 8, 8, 9].
"$bin" search --model llama2-7b --cluster aws-h100 --fix tp=2,pp=4,mbs=2,recompute=none,zero=1 --out-dir logs \
  --save-plan plans/llama.yaml --rank 1 --quiet > fix.out || fail "search --fix: $(tail -3 fix.out)"
grep -q "^tp: 2$" plans/llama.yaml && grep -q "^pp: 4$" plans/llama.yaml && grep -q "^recompute: none$" plans/llama.yaml &&
  ok || fail "--fix tp=2,pp=4: $(grep -E '^(tp|pp|recompute):' plans/llama.yaml | tr '\n' ' ')"
awk -F, 'NR > 1 && ($2 != 2 || $4 != "4.0" || $(NF-4) != "none") { bad = 1 } END { exit bad || NR < 2 }' logs/llama2-7b.csv &&
  ok || fail "--fix: the table holds other layouts"
"$bin" estimate --plan plans/llama.yaml | grep -q "note: the estimate differs" && fail "analytic round trip changed" || ok
"$bin" plan show plans/llama.yaml --timeline llama.svg > show.out || fail "plan show: $(cat show.out)"
grep -q "embedding, transformer 0-" show.out && grep -q "post_process" show.out && ok || fail "plan show lacks the layers: $(cat show.out)"
# 4 stages x 32 micro-batches x (forward + backward) compute boxes, and sends.
boxes=$(grep -c 'fill="#4c78a8"\|fill="#54a24b"' llama.svg)
[ "$boxes" -eq 256 ] && ok || fail "timeline has $boxes compute boxes, expected 4 x 32 x 2 = 256"
sends=$(grep -c 'fill="#f58518"\|fill="#b279a2"' llama.svg)
[ "$sends" -eq 192 ] && ok || fail "timeline has $sends sends, expected 3 x 32 x 2 = 192"
# plan show prints the step's terms; the timeline's caption is them, adding up to the step time
# plan show prints (3 digits).
grep -q "^  as terms: compute [0-9.]*, bubble" show.out && ok || fail "plan show lacks the step's terms: $(cat show.out)"
caption=$(grep -o 'step [0-9.]* s = compute [^<]*' llama.svg)
shown=$(awk '/^step time/ { printf "%.3g", $3 }' show.out)
[ -n "$caption" ] && [ "$(echo "$caption" | awk '{ print $2 }')" = "$shown" ] && ok ||
  fail "timeline caption '$caption' against plan show's step $shown"

# Schedules of the llama plan (partition [9, 8, 8, 9]: embedding + layers 0-7 | 8-15 | 16-23 |
# 24-31 + head).
grep -q "^micro_batch: 2$" plans/llama.yaml && grep -q "^partition: \[9, 8, 8, 9\]" plans/llama.yaml && ok ||
  fail "the llama plan is not mbs 2 with [9, 8, 8, 9]"
"$bin" schedule --plan plans/llama.yaml --format megatron -o megatron.sh > /dev/null || fail "schedule megatron"
grep -qx -- "--pipeline-model-parallel-layout 'Et\*8|t\*8|t\*8|t\*8L'" megatron.sh && ok || fail "megatron layout: $(tail -1 megatron.sh)"
grep -q -- "--tensor-model-parallel-size 2 " megatron.sh && grep -q -- "--use-distributed-optimizer" megatron.sh && ok ||
  fail "megatron arguments: $(cat megatron.sh)"
# --overlap-param-gather: kept in the plan file, re-estimated alike, and written for Megatron-LM
# (with the distributed optimizer and the overlapped gradient reduction it needs).
"$bin" search --model llama2-7b --cluster aws-h100 --fix tp=2,pp=4,mbs=2,recompute=none,zero=1 --overlap-param-gather \
  --out-dir logs --save-plan plans/llama-gather.yaml --quiet > gather.out || fail "search --overlap-param-gather: $(tail -3 gather.out)"
grep -q "^overlap_param_gather: true$" plans/llama-gather.yaml && ok || fail "plan file lacks overlap_param_gather"
"$bin" estimate --plan plans/llama-gather.yaml | grep -q "note: the estimate differs" && fail "overlap_param_gather round trip changed" || ok
"$bin" schedule --plan plans/llama-gather.yaml --format megatron | grep -q -- "--overlap-param-gather" && ok ||
  fail "megatron arguments lack --overlap-param-gather"
"$bin" schedule --plan plans/llama.yaml --format megatron | grep -q -- "--overlap-param-gather" &&
  fail "--overlap-param-gather written for a plan without it" || ok
# --grad-reduce-in-bf16: kept in the plan file, re-estimated alike (its gradients at 2 bytes, the
# plan's memory below the fp32-gradient plan's), and written for Megatron-LM.
"$bin" search --model llama2-7b --cluster aws-h100 --fix tp=2,pp=4,mbs=2,recompute=none,zero=1 --grad-reduce-in-bf16 \
  --out-dir logs --save-plan plans/llama-bf16-grads.yaml --quiet > bf16.out || fail "search --grad-reduce-in-bf16: $(tail -3 bf16.out)"
grep -q "^grad_reduce_in_bf16: true" plans/llama-bf16-grads.yaml && ok || fail "plan file lacks grad_reduce_in_bf16"
"$bin" estimate --plan plans/llama-bf16-grads.yaml | grep -q "note: the estimate differs" && fail "grad_reduce_in_bf16 round trip changed" || ok
"$bin" schedule --plan plans/llama-bf16-grads.yaml --format megatron | grep -q -- "--grad-reduce-in-bf16" && ok ||
  fail "megatron arguments lack --grad-reduce-in-bf16"
"$bin" schedule --plan plans/llama-gather.yaml --format megatron | grep -q -- "--grad-reduce-in-bf16" &&
  fail "--grad-reduce-in-bf16 written for a plan without it" || ok
peak() { "$bin" estimate --plan "$1" --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["plans"][0]["peak_memory_gib"])'; }
python3 -c "import sys; sys.exit(not float(sys.argv[1]) < float(sys.argv[2]))" "$(peak plans/llama-bf16-grads.yaml)" \
  "$(peak plans/llama-gather.yaml)" && ok || fail "bf16 gradients did not lower the plan's peak memory"
"$bin" schedule --plan plans/llama.yaml --format deepspeed -o ds.json > /dev/null || fail "schedule deepspeed"
python3 -c 'import json, sys; c = json.load(open("ds.json")); sys.exit(not (c["gradient_accumulation_steps"] == 32 and c["pipeline"] == {"activation_checkpoint_interval": 0}))' &&
  ok || fail "deepspeed config: $(cat ds.json)"
"$bin" schedule --plan plans/llama.yaml --format deepspeed-pipeline -o pipeline_module.py > /dev/null &&
  grep -qx "UNIT_PARTS = \[0, 9, 17, 25, 34\]" pipeline_module.py && ok || fail "deepspeed-pipeline parts: $(grep UNIT_PARTS pipeline_module.py)"
for format in slapo atorch; do
  "$bin" schedule --plan plans/llama.yaml --format $format -o $format.py > /dev/null && python3 -m py_compile $format.py && ok ||
    fail "schedule $format is not valid Python"
done
grep -q 'PIPELINE_CUTS = \["model.layers.7", "model.layers.15", "model.layers.23"\]' slapo.py && ok || fail "slapo cuts: $(grep PIPELINE_CUTS slapo.py)"
"$bin" schedule --plan plans/llama.yaml --format slapo > stdout.py && cmp -s stdout.py slapo.py && ok || fail "schedule to stdout differs"
expect_error "flavor without megatron" "--megatron-flavor" schedule --plan plans/llama.yaml --format slapo --megatron-flavor fasop
expect_error "FASOP's fork cannot run LLaMA" "swiglu" schedule --plan plans/llama.yaml --format megatron --megatron-flavor fasop
# ZeRO-3 runs as Megatron-FSDP by default, as PyTorch's FSDP2 with --fsdp torch (no distributed
# optimizer, no gradient accumulation fusion, a torch_dist checkpoint); FSDP2 wants pp 1.
"$bin" search --model llama2-7b --cluster aws-h100 --fix tp=2,pp=1,zero=3 --out-dir logs --save-plan plans/fsdp.yaml \
  --quiet > /dev/null || fail "search a ZeRO-3 plan"
"$bin" schedule --plan plans/fsdp.yaml --format megatron > fsdp-megatron.sh || fail "schedule ZeRO-3"
"$bin" schedule --plan plans/fsdp.yaml --format megatron --fsdp torch > fsdp-torch.sh || fail "schedule ZeRO-3 --fsdp torch"
grep -qxF -- "--use-megatron-fsdp \\" fsdp-megatron.sh && ! grep -q -- "--use-torch-fsdp2" fsdp-megatron.sh &&
  grep -qxF -- "--use-torch-fsdp2 \\" fsdp-torch.sh && grep -qxF -- "--no-gradient-accumulation-fusion \\" fsdp-torch.sh &&
  grep -qx -- "--ckpt-format torch_dist" fsdp-torch.sh && ! grep -q -- "--use-distributed-optimizer" fsdp-torch.sh && ok ||
  fail "ZeRO-3's flags: $(tail -4 fsdp-megatron.sh) / $(tail -4 fsdp-torch.sh)"
"$bin" search --model llama2-7b --cluster aws-h100 --fix tp=2,pp=2,zero=3 --out-dir logs --save-plan plans/fsdp-pp2.yaml \
  --quiet > /dev/null || fail "search a ZeRO-3 plan at pp 2"
expect_error "FSDP2 without pipelines" "without pipeline parallelism" schedule --plan plans/fsdp-pp2.yaml --format megatron --fsdp torch
expect_error "--fsdp without megatron" "--fsdp needs --format megatron" schedule --plan plans/fsdp.yaml --format slapo --fsdp torch
# The launch runs the same arguments (captured first: grep -q would close the pipe early).
"$bin" launch --plan plans/fsdp.yaml --backend local --dry-run --fsdp torch > launch-fsdp.txt
grep -q -- "--use-torch-fsdp2" launch-fsdp.txt && ! grep -q -- "--use-megatron-fsdp" launch-fsdp.txt &&
  ! grep -q "CUDA_DEVICE_MAX_CONNECTIONS" launch-fsdp.txt && ok || fail "launch --fsdp torch: $(grep -o -- '--use-[a-z-]*fsdp[0-9]*' launch-fsdp.txt)"
expect_error "--fsdp with another trainer" "--trainer-cmd" launch --plan plans/fsdp.yaml --backend local --dry-run --fsdp torch --trainer-cmd true
# T5, uneven {4, 21, 13, 12}: the fork takes the split rank and every rank's layers (embedding +
# 3 | 21 | embedding + 12 | 12); upstream cannot pipeline T5 and says so.
"$bin" search --model t5 --heterogeneous --fix tp=2,pp=4 --out-dir logs --save-plan plans/t5.yaml --quiet > /dev/null ||
  fail "search t5"
"$bin" schedule --plan plans/t5.yaml --format megatron --megatron-flavor fasop > t5.sh || fail "schedule t5 for the fork"
grep -qxF -- "--pipeline-model-parallel-split-rank 2 \\" t5.sh && grep -qx -- "--balance 3-21-12-12" t5.sh && ok ||
  fail "the fork's T5 partition: $(tail -2 t5.sh)"
expect_error "upstream cannot pipeline T5" "not supported for T5" schedule --plan plans/t5.yaml --format megatron
expect_error "unknown format" "--format" schedule --plan plans/llama.yaml --format jax

# Megatron-LM's own dimensions, fixed: selective recomputation, sequence parallelism and two
# virtual stages a rank. The plan keeps them, re-estimates to the same numbers, and only the
# Megatron-LM emitter writes them (the even partition [9, 8, 8, 9]: 8 layers a stage).
"$bin" search --model llama2-7b --cluster aws-h100 --fix tp=2,pp=4,sp=on,recompute=selective,vpp=2,zero=1 --out-dir logs \
  --save-plan plans/megatron.yaml --quiet > /dev/null || fail "search with Megatron's dimensions"
grep -q "^recompute: selective$" plans/megatron.yaml && grep -q "^sequence_parallel: true$" plans/megatron.yaml &&
  grep -q "^virtual_stages: 2$" plans/megatron.yaml && ok || fail "plan lacks Megatron's dimensions: $(cat plans/megatron.yaml)"
"$bin" estimate --plan plans/megatron.yaml | grep -q "note: the estimate differs" && fail "Megatron plan round trip changed" || ok
"$bin" schedule --plan plans/megatron.yaml --format megatron > megatron2.sh || fail "schedule megatron with vpp"
grep -qxF -- "--recompute-granularity selective \\" megatron2.sh && grep -qxF -- "--sequence-parallel \\" megatron2.sh &&
  grep -qx -- "--num-virtual-stages-per-pipeline-rank 2" megatron2.sh && ! grep -q "pipeline-model-parallel-layout" megatron2.sh &&
  ok || fail "megatron flags for selective, SP and vpp: $(cat megatron2.sh)"
expect_error "DeepSpeed cannot run SP" "sequence parallelism" schedule --plan plans/megatron.yaml --format deepspeed
expect_error "vpp with an odd pipeline" "--fix: pp x vpp = 6 model chunks do not divide the 32 layers" search --model llama2-7b --cluster aws-h100 --fix tp=2,pp=3,vpp=2 --out-dir logs

# NVLink domains: 32 GB200 trays (a cluster file cut to 32 of its 64) fill two racks' segments
# of 16; plan show says so, and a plan on a cluster without domains says nothing of them.
"$bin" presets show dgx-gb200 | sed 's/count: 64/count: 32/' > gb200x32.yaml
"$bin" search --model llama2-7b --cluster gb200x32.yaml --out-dir logs --save-plan plans/gb200.yaml --quiet > gb.out ||
  fail "search on GB200 trays: $(tail -3 gb.out)"
"$bin" plan show plans/gb200.yaml | grep -qx "NVLink domains: dgx-gb200 x32 in 2 segments of 16 (launch asks Slurm for --segment 16); the network between them" &&
  ok || fail "plan show lacks the NVLink domains: $("$bin" plan show plans/gb200.yaml | head -5)"
"$bin" plan show plans/llama.yaml | grep -q "NVLink domains" && fail "plan show names domains on H100 nodes" || ok

# Context and expert parallelism: search does not choose them, so the plans are the llama plan
# above and a MoE model's, edited as a user would (cp 2 halves dp; ep 8). Every layout printed
# shows them; a plan without them prints as before (no "cp" in its JSON).
sed 's/^dp: 16$/dp: 8\ncp: 2/' plans/llama.yaml > plans/llama-cp2.yaml
"$bin" plan show plans/llama-cp2.yaml > cp-show.out || fail "plan show of a cp plan: $(cat cp-show.out)"
grep -q "^layout: tp 2, dp 8, pp 4, cp 2, micro-batch 2 (64 micro-batches" cp-show.out &&
  grep -qE "^ +0 0-8 +H100 +32 " cp-show.out && ok || fail "plan show of cp 2: $(head -6 cp-show.out)"
"$bin" estimate --plan plans/llama-cp2.yaml --json | grep -q '"tp": 2, "dp": 8, "pp": 4, "cp": 2,' && ok ||
  fail "estimate --json lacks cp"
"$bin" estimate --plan plans/llama-cp2.yaml | grep -q "^model llama2-7b on cluster .*: mbs 2, tp 2, dp 8, pp 4, cp 2$" && ok ||
  fail "estimate text lacks cp"
"$bin" estimate --plan plans/llama.yaml --json | grep -q '"cp"' && fail "a dense plan's JSON names cp" || ok
"$bin" schedule --plan plans/llama-cp2.yaml --format megatron | grep -qxF -- "--context-parallel-size 2 \\" && ok ||
  fail "megatron arguments lack --context-parallel-size"
expect_error "DeepSpeed cannot run cp" "context parallelism (cp 2)" schedule --plan plans/llama-cp2.yaml --format deepspeed
expect_error "the fork has no cp" "--context-parallel-size" schedule --plan plans/llama-cp2.yaml --format megatron --megatron-flavor fasop
sed 's/^dp: 16$/dp: 5\ncp: 3/' plans/llama.yaml > plans/llama-cp3.yaml
expect_error "cp 3 does not split 4096 tokens" "2 x cp" schedule --plan plans/llama-cp3.yaml --format megatron
cat > moe.yaml <<'MOE'
name: moe-test
family: llama
hidden: 2048
heads: 16
kv_heads: 4
ffn_hidden: 8192
sequence: 4096
vocab: 32000
global_batch: 512
dtype: bf16
activation: swiglu
norm: rmsnorm
tied_embeddings: false
moe: {experts: 16, top_k: 2, expert_ffn_hidden: 1408, shared_expert_ffn_hidden: 2816, dense_layers: 2, token_drop: false}
layers:
  - {type: embedding, role: embedding}
  - {type: transformer, role: transformer, repeat: 2}
  - {type: moe_layer, role: transformer, moe: true, repeat: 14}
  - {type: post_process, role: post_process}
MOE
"$bin" search --model moe.yaml --cluster aws-h100 --fix tp=2,pp=4,sp=on,zero=1,ep=1 --out-dir logs --save-plan plans/moe.yaml \
  --quiet > /dev/null || fail "search a MoE model"
sed 's/^pp: 4$/pp: 4\nep: 8/' plans/moe.yaml > plans/moe-ep8.yaml
"$bin" plan show plans/moe-ep8.yaml | grep -q "^layout: tp 2, dp 16, pp 4, ep 8, micro-batch" && ok || fail "plan show lacks ep"
"$bin" schedule --plan plans/moe-ep8.yaml --format megatron > moe.sh || fail "schedule a MoE plan"
grep -qxF -- "--expert-model-parallel-size 8 \\" moe.sh && grep -qxF -- "--num-experts 16 \\" moe.sh &&
  grep -qxF -- "--moe-layer-freq '([0]*2+[1]*14)' \\" moe.sh && grep -qxF -- "--moe-shared-expert-intermediate-size 2816 \\" moe.sh &&
  ! grep -q -- "--moe-expert-capacity-factor" moe.sh && ok || fail "megatron MoE flags: $(cat moe.sh)"
# Captured first: grep -q closing the pipe early would fail the launch under pipefail.
"$bin" launch --plan plans/moe-ep8.yaml --backend local --dry-run > launch-moe.txt
grep -q "export FASOP_PP=4; export FASOP_EP=8;" launch-moe.txt && ok || fail "the launch does not export FASOP_EP"
expect_error "the fork has no top-k experts" "--moe-router-topk" schedule --plan plans/moe-ep8.yaml --format megatron --megatron-flavor fasop
expect_error "DeepSpeed cannot run experts" "mixture of experts" schedule --plan plans/moe.yaml --format deepspeed
sed 's/^pp: 4$/pp: 4\nep: 3/' plans/moe.yaml > plans/moe-ep3.yaml
expect_error "ep 3 of 16 experts" "does not divide" schedule --plan plans/moe-ep3.yaml --format megatron

# Plans their specs cannot hold any more.
cp "$root/configs/models/gpt2xl.yaml" gpt2xl-copy.yaml
"$bin" search --model gpt2xl-copy.yaml --heterogeneous --out-dir logs --save-plan plans/copy.yaml --quiet > /dev/null ||
  fail "search with a model file"
mv gpt2xl-copy.yaml gone.yaml
expect_error "model file gone" "gpt2xl-copy.yaml" estimate --plan plans/copy.yaml
sed 's/repeat: 48/repeat: 40/' gone.yaml > gpt2xl-copy.yaml
expect_error "model with other layers" "field 'partition'" estimate --plan plans/copy.yaml
expect_error "fewer nodes than the plan" "has 0" estimate --plan plans/best.yaml --cluster fasop-8nodes
expect_error "missing plan" "cannot read" plan show nope.yaml
printf 'version: 1\nmodel: gpt2xl\n' > broken.yaml
expect_error "plan without its fields" "broken.yaml" estimate --plan broken.yaml
expect_error "--fix with an unknown degree" "--fix" search --model gpt2xl --fix tq=2 --out-dir logs
expect_error "--fix nothing has" "--fix" search --model gpt2xl --fix tp=3 --out-dir logs
expect_error "--rank past the plans" "--rank" search --model gpt2xl --fix tp=1,dp=1 --save-plan x.yaml --rank 9999 --out-dir nothing
[ ! -e x.yaml ] && [ ! -e nothing ] && ok || fail "a failed --save-plan wrote files"

finish
