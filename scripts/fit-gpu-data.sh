#!/usr/bin/env bash
# Fits each GPU's data (configs/gpus/*.yaml) to a documented part of the validation sets and
# reports the error on the rest (the held-out cases), per GPU and precision. The fitted values
# stand in configs/gpus/, each beside a comment naming this script (tests/gpu_data_test.sh
# checks that they are what the fit finds); the held-out errors go to docs/validation.md. Usage: scripts/fit-gpu-data.sh [build/fasop-cpp [OUT_DIR]]
# Writes OUT_DIR/<gpu>-<precision>.txt (default validation/fits/: the fit's output and the
# held-out summary); scripts/sync-gpu-data.py --apply then copies the values into configs/gpus/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/build/fasop-cpp}
out=${2:-$root/validation/fits}
mkdir -p "$out" && out=$(cd "$out" && pwd)
cd "$root"

# fit NAME PRECISION PARAMS FIT_CASES SETS...: fits PARAMS of the fitted cases' GPU, then prints
# the held-out cases' errors (the cases of that GPU not named in FIT_CASES) into
# OUT_DIR/NAME-PRECISION.txt, or OUT_DIR/$REPORT.txt where REPORT is set (a fit of what no one
# precision owns, such as the host's dispatch cost).
fit() {
  local name=$1 precision=$2 params=$3 cases=$4; shift 4
  local report=${REPORT:-$name-$precision}
  local tmp; tmp=$(mktemp -d "$out/.fit.XXXXXX")  # beside the reports: mv is a rename
  trap 'rm -rf "$tmp"' EXIT INT TERM
  "$bin" validate "$@" --quiet --fit "$cases" --fit-params "$params" --fit-precision "$precision" \
    --csv "$tmp/steps.csv" --layer-csv "$tmp/layers.csv" > "$tmp/fit.out"
  python3 - "$tmp" "$cases" "$name" > "$tmp/report.txt" <<'PY'
import csv, statistics, sys
tmp, fitted, name = sys.argv[1], set(sys.argv[2].split(",")), sys.argv[3]
text = open(f"{tmp}/fit.out").read()
print(text.split("\n\n")[0])
gpu = text.split()[1]
print(f"\nfitted on: {', '.join(sorted(fitted))}")
steps = [r for r in csv.DictReader(open(f"{tmp}/steps.csv")) if r["case"] not in fitted and r["gpu"] == gpu]
layers = [r for r in csv.DictReader(open(f"{tmp}/layers.csv")) if r["case"] not in fitted and r["gpu"] == gpu]
def summary(kind, rows, key):
    by = {}
    for r in rows: by.setdefault(r["set"], []).append(r)
    for s, rs in sorted(by.items()):
        e = [float(r["error_pct"]) for r in rs]
        worst = max(rs, key=lambda r: abs(float(r["error_pct"])))
        print(f"held out, {kind} {s}: {len(rs)} {key}, mean |error| {statistics.mean(map(abs, e)):.1f}%, "
              f"median |error| {statistics.median(map(abs, e)):.1f}%, worst {worst['case']} "
              + (f"{worst['unit']} tp{worst['tp']}/mbs{worst['mbs']} {worst['pass']} " if 'unit' in worst else "")
              + f"{float(worst['error_pct']):+.1f}%")
summary("step set", steps, "cases")
summary("layer set", layers, "layer times")
PY
  mv "$tmp/report.txt" "$out/$report.txt"  # whole or not at all
  rm -rf "$tmp"
  trap - EXIT INT TERM
  cat "$out/$report.txt"; echo
}

# gemm_fit NAME PRECISION SWEEPS: the GEMM model of PRECISION fitted to `fasop-cpp profile gemm`
# sweeps (comma-separated files of one GPU), reported as OUT_DIR/NAME-PRECISION.gemm.txt.
gemm_fit() {
  local name=$1 precision=$2 sweeps=$3 tmp
  tmp=$(mktemp "$out/.gemm.XXXXXX")
  trap 'rm -f "$tmp"' EXIT INT TERM
  "$bin" validate --gemm-fit "$sweeps" --fit-precision "$precision" > "$tmp"
  mv "$tmp" "$out/$name-$precision.gemm.txt"
  trap - EXIT INT TERM
  cat "$out/$name-$precision.gemm.txt"; echo
}

layer_params=gemm_peak_share,gemm_half_dim,memory_share,kernel_gap_s
# V100 (Sailor, fp32 on CUDA cores): every other case of each model. Not the host's dispatch
# cost: Sailor's Megatron-DeepSpeed pipeline engine and timing hooks put it at the fit's bound
# (60 us a kernel), which is theirs, not the GPU's nor Megatron-LM's.
fit v100 fp32 $layer_params \
  opt-350m-v100-16gb-tp1,opt-350m-v100-16gb-tp4,gpt-neo-2.7b-v100-16gb-tp2,opt-30b-v100-16gb-tp8,llama-3-8b-v100-16gb-tp4 \
  validation/layers/sailor-profiles
# A100-40GB, TF32 (Sailor's fp32 runs with TF32 GEMMs): OPT-350M and GPT-Neo at tp 1 and 4. The
# host's dispatch cost reaches the bound here too; FASOP's A100 profiles (held out, timed unit by
# unit with a synchronisation) need it as high, so it stays fitted.
fit a100-40gb tf32 $layer_params,dispatch_s.megatron \
  opt-350m-a100-40gb-tp1,opt-350m-a100-40gb-tp4,gpt-neo-2.7b-a100-40gb-tp1,gpt-neo-2.7b-a100-40gb-tp4 \
  validation/layers/sailor-profiles
# GH200, TF32 (Sailor, fp32 with TF32 GEMMs): OPT-350M and Llama 3 8B; OPT-30B held out.
fit gh200 tf32 $layer_params,dispatch_s.megatron opt-350m-gh200,llama-3-8b-gh200 validation/layers/sailor-profiles
# A100-80GB, fp16: the even rows of Megatron-LM's 2021 table (5 of 10 cases).
fit a100-80gb fp16 gemm_peak_share,gemm_half_dim,memory_share \
  gpt-1.7b,gpt-7.5b,gpt-39b,gpt-145b,gpt-530b validation/megatron-a100-2021
# A100-80GB, TF32 (Sailor): OPT-350M at tp 1 and GPT-Neo at tp 2.
fit a100-80gb tf32 gemm_peak_share,gemm_half_dim,dispatch_s.megatron \
  opt-350m-a100-80gb-tp1,gpt-neo-2.7b-a100-80gb-tp2 validation/layers/sailor-profiles
# A10G, fp16 (FASOP's Megatron-LM fork, timed per unit with synchronize): GPT-2 XL; BERT and T5 held out.
fit a10g fp16 gemm_peak_share,memory_share,dispatch_s.megatron gpt2xl-a10g validation/layers/fasop-profiles
# H100, bf16 (fp16 as bf16): the GEMM model from `profile gemm` sweeps on the lent H100 (a grid and
# the shapes of GPT-2 XL's and Llama 3 8B's layers, GPT-2's unaligned head among them); then the
# memory share and the host's dispatch cost per ATen op from fasop-cpp's LibTorch profiles at tp 1
# (gpt2xl's small layers are host-bound: they fix the dispatch cost); every sharded degree of both
# models held out.
gemm_fit h100 bf16 validation/gemm/h100-grid.yaml,validation/gemm/h100-model-shapes.yaml
# FP8's GEMM shape curve (gemm_half_dim: narrow FP8 GEMMs fall further below the peak than BF16's)
# from the same sweep's FP8 GEMMs; its peak share is fitted to NeMo's steps below (casts and
# scaling included), which scripts/sync-gpu-data.py lets win, and Blackwell's FP8 and MXFP8 take
# the curve (SHAPE_TRANSFERS there).
gemm_fit h100 fp8 validation/gemm/h100-grid.yaml
fit h100 bf16 memory_share,dispatch_s.libtorch \
  gpt2xl-h100-tp1,llama3-8b-h100-tp1 validation/layers/fasop-cpp-h100
# H100 96GB HBM2e at 500 W (Grand Teton, torchtitan's December 2024 tables): the power limit's
# GEMM shares (bf16 and fp8) and its attention kernel's (PyTorch SDPA's FlashAttention-2, which
# torchtitan calls on Hopper), from the 8-GPU runs: Table 1's three rows and Table 2's two ends (cp 1 and cp 8). Held out:
# Table 2's middle rows and every 128-, 256- and 512-GPU run.
fit h100-96gb-500w bf16 gemm_peak_share,sdpa_attention_shares,fp8.gemm_peak_share \
  llama3-1-8b-h100-8gpu-table-1-fsdp,llama3-1-8b-h100-8gpu-table-1-fsdp-torch-compile,llama3-1-8b-h100-8gpu-table-1-fsdp-torch-compile-float8,llama3-1-8b-h100-8gpu-table-2-fsdp-8-cp-1,llama3-1-8b-h100-8gpu-table-2-fsdp-1-cp-8 \
  validation/torchtitan
# H100, fp8 (NeMo's published throughput): every other H100 case by size; the rest held out.
fit h100 fp8 gemm_peak_share,network.bus_share \
  llama2-7b-h100-8gpu-fp8-24.07,gpt3-5b-h100-64gpu-fp8-24.07,nemotron-22b-h100-64gpu-fp8-24.07,llama3-70b-h100-64gpu-fp8-cs-25.11,gpt3-175b-h100-128gpu-fp8-24.07,llama3-8b-h100-8gpu-main \
  validation/nemo-dense-fp8 validation/nemo-dense-25.09
# B200, GB200, GB300, fp8 (per-tensor scaling) and MXFP8 (block-scaled GEMMs, dtype mxfp8): each
# GPU's share from its rows of the newest release that has them, which is what a user runs today
# and what later releases are checked against: GB200's and GB300's Llama 3 70B rows of 26.02.01
# (their 25.11 and 26.02 runs of the same layout took up to 14% longer), B200's 8-GPU Llama 3 8B
# rows of 25.11 (its newest dense rows). Every other row held out.
fit b200 fp8 gemm_peak_share llama3-8b-b200-8gpu-fp8-cs-25.11 validation/nemo-dense-fp8 validation/nemo-dense-25.09
fit gb200 fp8 gemm_peak_share llama3-70b-gb200-64gpu-fp8-26.02.01 validation/nemo-dense-fp8 validation/nemo-dense-25.09
fit gb300 fp8 gemm_peak_share llama3-70b-gb300-64gpu-fp8-26.02.01 validation/nemo-dense-fp8 validation/nemo-dense-25.09
fit b200 mxfp8 gemm_peak_share llama3-8b-b200-8gpu-fp8-mx-25.11 validation/nemo-dense-fp8 validation/nemo-dense-25.09
fit gb200 mxfp8 gemm_peak_share llama3-70b-gb200-64gpu-mxfp8-26.02.01 validation/nemo-dense-fp8 validation/nemo-dense-25.09
fit gb300 mxfp8 gemm_peak_share llama3-70b-gb300-64gpu-mxfp8-26.02.01 validation/nemo-dense-fp8 validation/nemo-dense-25.09
# NVFP4 (4-bit block-scaled GEMMs, dtype nvfp4): GB200's and GB300's shares alike, each from its
# two rows of 26.02.01 (Llama 3 70B and Llama 3.1 405B: NVFP4 gains 1.2x over MXFP8 on one and
# 1.4x on the other, so one row alone leaves the other 13-15% off); held out: 26.02's rows. B200
# and B300 take them (no row of theirs; scripts/sync-gpu-data.py TRANSFERS), and the curve is
# FP8's (no FP4 sweep).
fit gb200 nvfp4 gemm_peak_share llama3-70b-gb200-64gpu-nvfp4-26.02.01,llama3.1-405b-gb200-256gpu-nvfp4-26.02.01 \
  validation/nemo-dense-fp4
fit gb300 nvfp4 gemm_peak_share llama3-70b-gb300-64gpu-nvfp4-26.02.01,llama3.1-405b-gb300-256gpu-nvfp4-26.02.01 \
  validation/nemo-dense-fp4
# The host's cost per op Megatron-Core dispatches (dispatch_s.megatron), from the MoE rows: a MoE
# layer launches a GEMM per local expert and waits for its split sizes before the all-to-all, so
# at small micro-batches its step is the host's. Qwen3 30B-A3B's rows per host: DGX B200's x86
# (micro-batch 1, release 26.02), GB200's Grace (micro-batch 4, 26.02.01) and all four of DGX
# H100's x86 (pp 2): their throughputs disagree in pairs (26.02.01 prints 26.02's layout at +77%,
# 25.11's FP8-CS row runs at half 25.09's at the same layout), so no one of them is taken as the
# truth and the fit lands between them. B300 (DGX, x86) and GB300 (Grace) take them
# (scripts/sync-gpu-data.py); every other MoE row held out.
REPORT=b200-host fit b200 mxfp8 dispatch_s.megatron qwen3-30b-a3b-b200-8gpu-mxfp8-26.02 validation/nemo-moe
REPORT=gb200-host fit gb200 mxfp8 dispatch_s.megatron qwen3-30b-a3b-gb200-8gpu-mxfp8-26.02.01 validation/nemo-moe
REPORT=h100-host fit h100 fp8 dispatch_s.megatron qwen3-30b-a3b-h100-16gpu-fp8-26.02,qwen3-30b-a3b-h100-16gpu-fp8-26.02.01,qwen3-30b-a3b-h100-16gpu-fp8-cs-25.11,qwen3-30b-a3b-tokendrop-h100-16gpu-main-25.09 validation/nemo-moe
# Blackwell's BF16 GEMMs: no dense BF16 row on Blackwell, so a MoE row of GB200 (Qwen3 235B at
# pp 8, ep 32, BF16, NeMo 25.11), after the host's cost above; B200, B300 and GB300 take it
# (scripts/sync-gpu-data.py TRANSFERS). Held out: the other BF16 rows of GB200.
fit gb200 bf16 gemm_peak_share qwen3-235b-a22b-gb200-256gpu-bf16-25.11 validation/nemo-moe
# The memory model's runtime constants per stack and GPU (memory_runtime): workspaces from the
# Megatron-LM CI runs, the allocator's reserve from torchtitan's tables; half of each set fitted.
python3 "$root/scripts/fit-memory-runtime.py" "$bin" "$out"
