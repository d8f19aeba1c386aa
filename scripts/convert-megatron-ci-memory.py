#!/usr/bin/env python3
"""Writes validation/megatron-ci-memory/*.yaml from reference/megatron-ci/memory.csv.

Each case is one Megatron-LM functional test (a GPT run on one DGX node; its flags in
model_config.yaml) with the peak allocated memory of the job's last rank as its CI logged it
(reference/megatron-ci/README.md says exactly what the numbers are). Only runs whose every flag the
memory model prices are kept: dense GPT layers on A100 or H100 nodes, bf16 or fp16, tensor,
pipeline (plain or interleaved), context and data parallelism, sequence parallelism, full or
selective recomputation of every layer, the distributed optimizer, Transformer Engine or local
layers, flash or unfused attention. The rest are counted by reason in the output and left out.
One run per test and GPU: the dev container's where both containers ran it.

Usage: python3 scripts/convert-megatron-ci-memory.py [--out-dir validation/megatron-ci-memory]
"""
import argparse
import collections
import csv
import json
import os
import shutil

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE = os.path.join(ROOT, "reference", "megatron-ci", "memory.csv")
GIB = 1024 ** 3

# Flags that change nothing the memory model prices (logging, data, checkpoints, learning rate,
# initialisation, numerics that keep the same tensors).
IGNORED = {
    "--clip-grad", "--eval-interval", "--log-interval", "--log-memory-to-tensorboard", "--log-num-zeros-in-grad",
    "--log-timers-to-tensorboard", "--log-validation-ppl-to-tensorboard", "--lr", "--max-position-embeddings",
    "--tensorboard-dir", "--save-interval", "--load", "--min-lr", "--weight-decay", "--data-cache-path",
    "--eval-iters", "--log-params-norm", "--split", "--lr-decay-style", "--save", "--data-path", "--train-iters",
    "--lr-warmup-fraction", "--ckpt-format", "--timing-log-level", "--distributed-backend", "--merge-file",
    "--vocab-file", "--use-mcore-models", "--lr-decay-iters", "--async-save", "--use-persistent-ckpt-worker",
    "--dist-ckpt-strictness", "--deterministic-mode", "--attention-softmax-in-fp32",
    "--use-checkpoint-opt_param-scheduler", "--dist-ckpt-optim-fully-reshardable", "--ckpt-fully-parallel-load",
    "--apply-query-key-layer-scaling", "--ckpt-assume-constant-structure", "--calculate-per-token-loss",
    "--verify-integrity", "--use-tp-pp-dp-mapping", "--exit-interval", "--log-throughput", "--no-rope-fusion",
    "--no-ckpt-fully-parallel-save", "--adam-beta1", "--adam-beta2", "--tokenizer-type", "--no-mmap-bin-files",
    "--rotary-base", "--check-weight-hash-across-dp-replicas-interval", "--init-method-std", "--manual-gc",
    "--distributed-timeout-minutes", "--ckpt-fully-parallel-save", "--decoupled-lr", "--async-strategy",
    "--no-create-attention-mask-in-dataloader", "--lr-warmup-samples", "--async-ckpt-use-cpu-shm",
    "--norm-epsilon", "--train-samples", "--rotary-interleaved", "--ddp-average-in-collective", "--test-mode",
    "--exit-duration-in-mins", "--logging-level", "--manual-gc-interval", "--no-check-for-nan-in-loss-and-grad",
    "--num-workers", "--mock-data", "--decoupled-min-lr", "--lr-decay-samples", "--save-retain-interval",
    "--seed", "--tensorboard-log-interval", "--timing-log-option", "--use-checkpoint-args", "--adam-eps",
    "--no-load-optim", "--log-progress", "--override-opt_param-scheduler",
    "--no-bias-gelu-fusion", "--disable-bias-linear", "--overlap-p2p-communication-warmup-flush",
    "--microbatch-group-size-per-virtual-pipeline-stage", "--no-persist-layer-norm", "--finetune",
    "--auto-detect-ckpt-format", "--no-masked-softmax-fusion", "--make-vocab-size-divisible-by",
    "--tokenizer-model", "--vocab-size", "--rotary-percent", "--kv-channels", "--use-rotary-position-embeddings",
}
# Flags read into the case.
READ = {
    "--hidden-size", "--num-attention-heads", "--num-layers", "--seq-length", "--micro-batch-size",
    "--global-batch-size", "--tensor-model-parallel-size", "--pipeline-model-parallel-size", "--context-parallel-size",
    "--transformer-impl", "--no-gradient-accumulation-fusion", "--bf16", "--fp16", "--attention-backend",
    "--sequence-parallel", "--use-distributed-optimizer", "--overlap-grad-reduce", "--overlap-param-gather",
    "--attention-dropout", "--hidden-dropout", "--num-layers-per-virtual-pipeline-stage",
    "--num-virtual-stages-per-pipeline-rank", "--untie-embeddings-and-output-weights", "--position-embedding-type",
    "--swiglu", "--ffn-hidden-size", "--normalization", "--group-query-attention", "--num-query-groups",
    "--recompute-granularity", "--recompute-method", "--recompute-num-layers", "--recompute-modules",
    "--cross-entropy-loss-fusion", "--cross-entropy-fusion-impl", "--qk-layernorm",
}
NODE_TYPES = {"dgx_a100": ("selene-dgx-a100", "dgx-a100-80g", "a100"), "dgx_h100": ("dgx-h100", "dgx-h100", "h100")}
GPT2_VOCAB = 50257  # the GPT-2 BPE vocabulary (--vocab-file .../bpe/vocab.json)


def truthy(args, flag):
    return args.get(flag, "false") == "true"


def excluded_reason(row, args):
    """Why the run is left out, or None."""
    if row["model_dir"] != "gpt":
        return "mixture of experts"
    if row["golden_path"].endswith("_2nd.json"):
        return "resumed second phase"
    if row["platform"] not in NODE_TYPES:
        return "platform " + (row["platform"] or "unnamed") + " (not an A100 or H100 DGX)"
    if not row["gpus"] or not row["nodes"] or row["nodes"] != "1":
        return "GPUs not known, or more than one node"
    unknown = sorted(k for k in args if k not in IGNORED and k not in READ)
    if unknown:
        return "flag " + unknown[0]
    if not (truthy(args, "--bf16") or truthy(args, "--fp16")):
        return "fp32 training"
    if "--recompute-granularity" in args and args["--recompute-granularity"] == "full":
        method, layers = args.get("--recompute-method"), args.get("--recompute-num-layers", "1")
        if not (method == "uniform" and layers == "1"):
            return "full recomputation of part of the layers"
    if "--recompute-modules" in args and args["--recompute-modules"] not in ("core_attn", "[core_attn]"):
        return "selective recomputation of modules " + args["--recompute-modules"]
    if args.get("--attention-backend", "auto") not in ("unfused", "flash", "fused", "auto"):
        return "attention backend " + args["--attention-backend"]
    tp, pp = int(args.get("--tensor-model-parallel-size", "1")), int(args.get("--pipeline-model-parallel-size", "1"))
    dp = int(row["gpus"]) // (tp * pp * int(args.get("--context-parallel-size", "1")))
    microbatches = int(args.get("--global-batch-size", "32")) // (int(args["--micro-batch-size"]) * dp)
    interleaved = "--num-layers-per-virtual-pipeline-stage" in args or "--num-virtual-stages-per-pipeline-rank" in args
    if interleaved and pp > 1 and microbatches % pp != 0:
        return "interleaved schedule with micro-batches not a multiple of pp"
    if "uninstall_te" in row["test_case"]:
        return "run without Transformer Engine installed (torch's fp32 softmax fallback keeps 7 as^2b, not priced)"
    if truthy(args, "--cross-entropy-loss-fusion") and args.get("--cross-entropy-fusion-impl", "native") != "te":
        return "Megatron's native fused cross entropy (its jit-compiled copies of the logits are not priced)"
    if vocabulary(args) is None:
        return "vocabulary neither the GPT-2 BPE file nor NullTokenizer's --vocab-size"
    return None


def vocabulary(args):
    """The vocabulary's size: GPT-2's BPE file, or NullTokenizer's --vocab-size and its end-of-text token."""
    if "--vocab-file" in args:
        return GPT2_VOCAB
    if args.get("--tokenizer-type") == "NullTokenizer" and "--vocab-size" in args:
        return int(args["--vocab-size"]) + 1
    return None


def case_text(row, args):
    layers, hidden, heads = int(args["--num-layers"]), int(args["--hidden-size"]), int(args["--num-attention-heads"])
    tp, pp = int(args.get("--tensor-model-parallel-size", "1")), int(args.get("--pipeline-model-parallel-size", "1"))
    cp = int(args.get("--context-parallel-size", "1"))
    gpus = int(row["nodes"]) * int(row["gpus"])
    dp = gpus // (tp * pp * cp)
    swiglu = truthy(args, "--swiglu")
    ffn = int(args["--ffn-hidden-size"]) if "--ffn-hidden-size" in args else (
        int((4 * hidden * 2 / 3) / 64) * 64 if swiglu else 4 * hidden)
    rope = args.get("--position-embedding-type", "learned_absolute") == "rope"
    virtual = 1
    if "--num-layers-per-virtual-pipeline-stage" in args:
        virtual = layers // (pp * int(args["--num-layers-per-virtual-pipeline-stage"]))
    if "--num-virtual-stages-per-pipeline-rank" in args:
        virtual = int(args["--num-virtual-stages-per-pipeline-rank"])
    recompute = args.get("--recompute-granularity", "none")
    te = args.get("--transformer-impl", "transformer_engine") == "transformer_engine"
    backend = args.get("--attention-backend", "auto")
    # Unfused attention unless a fused kernel runs: Transformer Engine picks flash or cuDNN's
    # fused attention by default; the local layers' attention is unfused.
    flash = backend in ("flash", "fused") or (backend == "auto" and te)
    kv_heads = int(args["--num-query-groups"]) if truthy(args, "--group-query-attention") else heads
    peak = float(row["mem_max_allocated_bytes_last"]) / GIB
    after = float(row["mem_allocated_bytes_last"]) / GIB
    family = "llama" if swiglu or rope else "gpt2"
    norm = "rmsnorm" if args.get("--normalization", "LayerNorm") == "RMSNorm" else "layernorm"
    hidden_dropout, attention_dropout = args.get("--hidden-dropout", "0.1"), args.get("--attention-dropout", "0.1")
    cluster, node, gpu = NODE_TYPES[row["platform"]]
    name = row["test_case"] + "-" + gpu
    flags = " ".join(f"{k} {v}" if v != "true" else k for k, v in sorted(args.items()) if k not in IGNORED)
    lines = [
        "# Generated by scripts/convert-megatron-ci-memory.py from reference/megatron-ci/memory.csv; do not edit.",
        "set: megatron-ci-memory",
        f"case: {name}",
        "source:",
        '  title: "Megatron-LM functional tests (CI golden values: mem-max-allocated-bytes, mem-allocated-bytes)"',
        f'  table: "NVIDIA/Megatron-LM@{row["commit"]}:{row["golden_path"]}"',
        f"  url: https://github.com/NVIDIA/Megatron-LM/blob/{row['commit']}/{row['config_path']}",
        "  date: 2026-08",
        f"node_type: {{cluster: {cluster}, name: {node}}}",
        "model:",
        f"  hidden: {hidden}",
        f"  heads: {heads}",
        f"  kv_heads: {kv_heads}",
        f"  layers: {layers}",
        f"  ffn_hidden: {ffn}",
        f"  sequence: {int(args['--seq-length'])}",
        f"  vocab: {vocabulary(args)}",
        f"  activation: {'swiglu' if swiglu else 'gelu'}",
        f"  norm: {norm}",
        f"  tied_embeddings: {'false' if truthy(args, '--untie-embeddings-and-output-weights') else 'true'}",
        f"  family: {family}",
        f"  dtype: {'bf16' if truthy(args, '--bf16') else 'fp16'}",
        f"  attention: {'flash' if flash else 'unfused'}",
        f"  hidden_dropout: {hidden_dropout}",
        f"  attention_dropout: {attention_dropout}",
    ] + (["  qk_layernorm: true"] if truthy(args, "--qk-layernorm") else []) + [
        "plan:",
        f"  gpus: {gpus}",
        f"  tp: {tp}",
        f"  pp: {pp}",
        f"  dp: {dp}",
    ]
    if cp > 1:
        lines.append(f"  cp: {cp}")
    lines += [
        f"  global_batch: {int(args.get('--global-batch-size', '32'))}",
        f"  micro_batch: {int(args['--micro-batch-size'])}",
        f"  recompute: {recompute}",
        f"  sequence_parallel: {'true' if truthy(args, '--sequence-parallel') else 'false'}",
        f"  virtual_stages: {virtual}",
        f"  distributed_optimizer: {'true' if truthy(args, '--use-distributed-optimizer') else 'false'}",
        f"  overlap_grad_reduce: {'true' if truthy(args, '--overlap-grad-reduce') else 'false'}",
        f"  overlap_param_gather: {'true' if truthy(args, '--overlap-param-gather') else 'false'}",
        "  stack: megatron",
        f"  transformer_engine: {'true' if te else 'false'}",
        f"  gradient_accumulation_fusion: {'false' if truthy(args, '--no-gradient-accumulation-fusion') else 'true'}",
        f"  cross_entropy_fusion: {'true' if truthy(args, '--cross-entropy-loss-fusion') else 'false'}",
        "measurement:",
        "  memory:",
        "    figure: max_allocated",
        "    rank: last",
        f"    peak_gib: {peak:.6f}",
        f"    allocated_after_step_gib: {after:.6f}",
        "notes: >-",
        f"  Megatron-LM CI, {row['environment']} container, {row['platform']}, {row['nodes']} x {row['gpus']} GPUs;",
        f"  peak allocated of the last rank (rank {gpus - 1}) over {row['last_step']} steps as TensorBoard logged it",
        f"  ({row['mem_max_allocated_bytes_last']} bytes), allocated after the last step {row['mem_allocated_bytes_last']}",
        f"  bytes. Vocabulary {vocabulary(args)} (GPT-2's BPE, or NullTokenizer's --vocab-size + 1), padded to 128 x tp.",
        f"  Flags: {flags}",
    ]
    return name, "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", default=os.path.join(ROOT, "validation", "megatron-ci-memory"))
    options = parser.parse_args()
    rows = list(csv.DictReader(open(SOURCE, newline="")))
    reasons = collections.Counter()
    chosen = {}
    for row in rows:
        args = json.loads(row["model_args_json"])
        reason = excluded_reason(row, args)
        if reason:
            reasons[reason] += 1
            continue
        key = (row["test_case"], row["platform"])
        # The dev container's run where both ran the test.
        if key in chosen and chosen[key][0]["environment"] == "dev":
            reasons["the lts container's run of a test the dev container also ran"] += 1
            continue
        if key in chosen:
            reasons["the lts container's run of a test the dev container also ran"] += 1
        chosen[key] = (row, args)
    if os.path.isdir(options.out_dir):
        shutil.rmtree(options.out_dir)
    os.makedirs(options.out_dir)
    for row, args in chosen.values():
        name, text = case_text(row, args)
        with open(os.path.join(options.out_dir, name + ".yaml"), "w") as out:
            out.write(text)
    print(f"wrote {len(chosen)} cases to {os.path.relpath(options.out_dir, ROOT)}; left out:")
    for reason, count in sorted(reasons.items(), key=lambda item: (-item[1], item[0])):
        print(f"  {count:4d}  {reason}")


if __name__ == "__main__":
    main()
