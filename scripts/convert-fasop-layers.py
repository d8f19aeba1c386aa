#!/usr/bin/env python3
"""Converts FASOP's measured layer times (reference/fasop-layers/) into layer-time validation
cases validation/layers/fasop-profiles/<model>-<gpu>.yaml.

Input: reference/fasop-layers/profiles/<model>_<gpu>_<tp>.csv, FASOP commit 93cb38b,
FASOP/known_cost/*.npy written out as text: one value a line, the measured forward time in
seconds of one pipeline unit at micro-batch 1 (see reference/fasop-layers/README.md for how the
FASOP authors measured them), and reference/fasop-layers/per-layer/gpt2XL_*.csv, the 48
per-layer GPT-2 XL times FASOP averaged (their spread goes into the notes).

Only what was measured becomes a point: forward times at micro-batch 1. FASOP's backward
(2 x forward) and its micro-batch multipliers (estimate.py, get_cost_e) are modelling, not
measurements, and are left out.

Usage: scripts/convert-fasop-layers.py [REFERENCE_DIR] [OUT_DIR]
Regenerates the files byte-identically; Debian's python3 only.
"""
import os
import sys

from layer_case_text import fmt, wrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REF = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "reference/fasop-layers")
OUT = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "validation/layers/fasop-profiles")
SET = "fasop-profiles"
COMMIT = "93cb38bb1a88d1e3f58a0dbe1fe2d87f60a77254"
TPS = [1, 2, 4]

# FASOP file prefix -> (our name, unit type of each line, FASOP's date for the values).
MODELS = {
    "gpt2XL": ("gpt2xl", ["embedding"] + ["transformer"] * 48 + ["post_process"], "2023-07"),
    "bert": ("bert", ["embedding"] + ["transformer"] * 24 + ["post_process"], "2023-07"),
    "T5": ("t5", ["encoder_embedding"] + ["encoder"] * 23 + ["encoder_last"]
           + ["decoder_embedding"] + ["decoder"] * 23 + ["decoder_last"], "2023-07"),
}

# The models as FASOP's Megatron-LM fork ran them (Megatron-LM-2/_00_conf.sh, _01_run_inter.sh).
# GPT-2 XL and BERT are written inline (the presets' dimensions plus what the preset cannot say:
# unfused attention); T5 needs the preset for its encoder/decoder unit types.
MODEL_YAML = {
    "gpt2XL": """model:            # = configs/models/gpt2xl.yaml's dimensions, as FASOP's Megatron-LM fork ran them
  hidden: 1600
  heads: 16
  layers: 48
  sequence: 1024
  vocab: 50257
  ffn_hidden: 6400
  activation: gelu
  norm: layernorm
  tied_embeddings: true
  family: gpt2
  dtype: fp16
  attention: unfused
  causal: true
""",
    "bert": """model:            # = configs/models/bert.yaml's dimensions, as FASOP's Megatron-LM fork ran them
  hidden: 1024
  heads: 16
  layers: 24
  sequence: 512
  vocab: 30522
  ffn_hidden: 4096
  activation: gelu
  norm: layernorm
  tied_embeddings: true
  family: bert
  dtype: fp16
  attention: unfused
  causal: false
""",
    "T5": """model: {preset: t5}   # unit types encoder_embedding, encoder, encoder_last, decoder_embedding, decoder, decoder_last
""",
}

# Node types: FASOP's A100 node is the shipped preset's; its "A10" node is an AWS g5.24xlarge,
# whose GPU is the A10G (AWS-only part, about half the A10's tensor peak), so it is written
# inline with the preset's other numbers and gpu: A10G.
NODE_YAML = {
    "A100": "node_type: {cluster: fasop-8nodes-heterogeneous, name: p4d.24xlarge}   # A100-SXM4-40GB\n",
    "A10": ("node_type: {name: g5.24xlarge, gpu: A10G, gpus_per_node: 4, gpu_memory_gib: 22.20, "
            "intra_node_bandwidth_bits_per_s: 1.28e11, inter_node_bandwidth_bits_per_s: 4.0e10, "
            "price_usd_per_hour: 8.144}   # = clusters/fasop-8nodes-heterogeneous.yaml's g5.24xlarge but gpu: A10G\n"),
}
GPU_CASE = {"A100": "a100", "A10": "a10g"}

COMMON_NOTES = (
    "Measured by FASOP's authors (HPDC'24) in their Megatron-LM fork (FASOP repository, Megatron-LM-2/: "
    "Megatron-LM of late 2022, NGC PyTorch 23.03/23.04 container), fp16 mixed precision (--fp16), "
    "unfused attention with Megatron's fused scale-mask-softmax (no --use-flash-attn), fused bias-GeLU, "
    "--no-async-tensor-model-parallel-allreduce, micro-batch 1, inside real training iterations. Each time is "
    "host wall clock (time.time()) between torch.cuda.synchronize() calls around one unit's forward pass, "
    "so it includes the unit's kernels, its tensor-parallel all-reduces (synchronous NCCL inside the forward "
    "at tp>1), the Python and launch overhead of the unit and one host synchronisation; not the backward, "
    "the optimizer or pipeline sends. Warm-up and number of repetitions are not recorded. Only forward is "
    "measured (FASOP takes backward = 2 x forward); FASOP's micro-batch multipliers (estimate.py get_cost_e) "
    "are modelling and not points here. "
)

MODEL_NOTES = {
    "gpt2XL": (
        "Units: embedding = word and position embedding lookups only (forward hooks from word_embeddings to "
        "position_embeddings in Megatron-LM-2/megatron/training-profile_LBL.py; the vocab-parallel all-reduce is "
        "in it at tp>1, the sum and dropout are not); transformer = the mean FASOP took (commit b5b35c3, "
        "2023-07-25) of 48 per-layer times from one profiled run, each hook-timed per ParallelTransformerLayer "
        "(the 48 values: reference/fasop-layers/per-layer/); post_process = LM head logits and vocab-parallel "
        "cross-entropy (added to the profile 2023-07-03; how it was timed is not recorded). "
    ),
    "bert": (
        "Units, timed (as far as the repository history shows) by synchronize-and-print code in Megatron-LM-2's "
        "language_model.py and bert_model.py (removed in commits 6d1fd0d/23fbf68, 2023-07-19, the day after the "
        "values were committed): embedding = "
        "the Embedding module (word, position and token-type lookups, sum, dropout); transformer = one encoder "
        "layer from the timed encoder stack (how the stack time was divided is not recorded); post_process = "
        "BERT's post_language_model_processing (LM head: dense, GeLU, layernorm, logits; binary head; losses). "
    ),
    "T5": (
        "Units, timed (as far as the repository history shows) by synchronize-and-print code in Megatron-LM-2's "
        "language_model.py (removed 2023-07-19): "
        "encoder_embedding/decoder_embedding = the Embedding module; encoder/decoder = one layer from the timed "
        "encoder/decoder stack (divisor not recorded; the first upload was 10x larger and was corrected on "
        "2023-07-14, commit 79d6f6e); encoder_last/decoder_last = that layer plus the timed 'post_process' "
        "section (17-21 us: T5 has no pooler, so this is only the synchronisation). T5's LM head and loss are "
        "in no unit of this profile. The run's T5 (Megatron-LM-2/_00_conf.sh): hidden 1024, 32 heads with "
        "--kv-channels 128 (attention width 4096 = 4 x hidden), --ffn-hidden-size 3072, sequence 512 for both "
        "encoder and decoder, vocabulary 30522 + 100 extra ids; the t5 preset has 1024/32 heads (head size 32) "
        "and ffn 4 x hidden, so its analytic T5 layers are not these. Encoder attention is not causal. "
    ),
}

GPU_NOTES = {
    "A100": "GPU: AWS p4d.24xlarge, A100-SXM4-40GB with NVSwitch (FASOP used 4 GPUs a node). ",
    "A10": ("GPU: AWS g5.24xlarge, 4 x NVIDIA A10G (PCIe, no NVLink); FASOP calls it A10 and the shipped "
            "fasop-8nodes-heterogeneous preset says gpu: A10, but the A10G has about half the A10's tensor "
            "peak (configs/gpus/a10g.yaml). "),
}


def read_values(path):
    with open(path) as f:
        return [float(line) for line in f if line.strip()]


def transformer_flops(model):
    """Forward matrix-multiply FLOPs of one layer at micro-batch 1 (for the notes' sanity rates)."""
    if model == "gpt2XL":
        s, h = 1024, 1600
        return 24 * s * h * h + 4 * s * s * h
    if model == "bert":
        s, h = 512, 1024
        return 24 * s * h * h + 4 * s * s * h
    return None


def case_yaml(model, gpu):
    name, units, date = MODELS[model]
    points = []
    observed = {}
    for tp in TPS:
        rel = f"profiles/{model}_{gpu}_{tp}.csv"
        values = read_values(os.path.join(REF, rel))
        if len(values) != len(units):
            sys.exit(f"{rel}: {len(values)} values, expected {len(units)}")
        seen = {}
        for unit, v in zip(units, values):
            if unit in seen:
                if seen[unit] != v:
                    sys.exit(f"{rel}: unit type {unit} has two values, {seen[unit]} and {v}")
                continue
            seen[unit] = v
            points.append(f"  - {{unit: {unit}, tp: {tp}, mbs: 1, forward_s: {fmt(v)}}}\n")
        observed[tp] = seen

    extra = ""
    if model == "gpt2XL":
        spreads = []
        for tp in TPS:
            raw = read_values(os.path.join(REF, f"per-layer/gpt2XL_{gpu}_{tp}.csv"))
            layers = raw[1:49]
            mean = sum(layers) / len(layers)
            if abs(mean / observed[tp]["transformer"] - 1) > 1e-9:
                sys.exit(f"gpt2XL {gpu} tp{tp}: per-layer mean {mean} != profile {observed[tp]['transformer']}")
            spreads.append(f"tp{tp} {min(layers) * 1e3:.3f}-{max(layers) * 1e3:.3f} ms")
        extra += "The 48 per-layer forward times ranged " + ", ".join(spreads) + ". "
        pp = [observed[tp]["post_process"] * 1e3 for tp in TPS]
        extra += (f"Suspicious: post_process hardly changes with tp ({pp[0]:.3f}/{pp[1]:.3f}/{pp[2]:.3f} ms at "
                  "tp 1/2/4) although its logits GEMM is split tp ways. ")
    flops = transformer_flops(model)
    if flops:
        rates = [flops / tp / observed[tp]["transformer"] / 1e12 for tp in TPS]
        extra += ("Transformer forward at " + "/".join(f"{r:.1f}" for r in rates)
                  + " TFLOP/s per GPU at tp 1/2/4 (matrix-multiply FLOPs / time): far below the fp16 peak, "
                  "and times barely fall with tp - overhead-bound. ")
    else:
        enc = [observed[tp]["encoder"] * 1e3 for tp in TPS]
        dec = [observed[tp]["decoder"] * 1e3 for tp in TPS]
        extra += ("Encoder layer " + "/".join(f"{v:.3f}" for v in enc) + " ms, decoder layer "
                  + "/".join(f"{v:.3f}" for v in dec) + " ms at tp 1/2/4: they do not fall with tp - overhead-bound. ")

    files = ", ".join(f"{model}_{gpu}_{tp}.csv" for tp in TPS)
    return (
        f"# Generated by scripts/convert-fasop-layers.py from reference/fasop-layers/profiles/{{{files}}}; do not edit.\n"
        "kind: layer_times\n"
        f"set: {SET}\n"
        f"case: {name}-{GPU_CASE[gpu]}\n"
        "source:\n"
        "  title: \"FASOP (Hwang et al., HPDC'24): measured layer profiles\"\n"
        f"  table: \"FASOP/known_cost/{model}_{gpu}_{{1,2,4}}.npy\"\n"
        f"  url: https://github.com/AvatarHwang/FASOP/tree/{COMMIT}/FASOP/known_cost\n"
        f"  date: {date}\n"
        + NODE_YAML[gpu]
        + MODEL_YAML[model]
        + "stack: megatron\n"
        "points:\n"
        + "".join(points)
        + "notes: >-\n"
        + wrap(COMMON_NOTES + MODEL_NOTES[model] + GPU_NOTES[gpu] + extra)
    )


def main():
    os.makedirs(OUT, exist_ok=True)
    written = 0
    for model in MODELS:
        for gpu in ("A100", "A10"):
            text = case_yaml(model, gpu)
            path = os.path.join(OUT, f"{MODELS[model][0]}-{GPU_CASE[gpu]}.yaml")
            with open(path + ".tmp", "w") as out:
                out.write(text)
            os.replace(path + ".tmp", path)
            written += 1
    print(f"wrote {written} cases to {OUT}")


if __name__ == "__main__":
    main()
