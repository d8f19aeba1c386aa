#!/usr/bin/env python3
"""Converts Sailor's published per-layer profiles (reference/sailor/) into layer-time validation
cases validation/layers/sailor-profiles/<model>-<gpu>[-tp<N>].yaml.

Input: reference/sailor/<MODEL>/<GPU>/profile.json, copied from eth-easl/sailor
sailor/Planner/sailor_planner/profiles/ (see reference/sailor/README.md): for each micro-batch
size and tensor-parallel degree, for each pipeline unit, [forward_s, backward_s, optimizer_s],
measured with CUDA events in layer hooks of Sailor's Megatron-DeepSpeed fork, in fp32.

Units kept: embedding (unit "0", forward only: the backward hook of an embedding times no
weight-gradient work), transformer (unit "2", the second profiled layer, which Sailor copies to
every later layer), post_process (the last unit(s): final norm, LM head and loss; not for
GPT-Neo, whose pipeline has no LM head). GPT-Neo-2.7/GH-96 is skipped: it is a byte-for-byte copy
of OPT-350/GH-96 (checked here).

Sailor measured intra-node bandwidth as the total of N/2 concurrent NCCL send/recv pairs in
groups of N = 2, 4 (, 8) GPUs; a node type gets the bandwidth a pair, of the group its tp needs.
Where that differs by more than 1.5x between group sizes, one case per tensor-parallel degree.

Usage: scripts/convert-sailor-layers.py [REFERENCE_DIR] [OUT_DIR]
Regenerates the files byte-identically; Debian's python3 only.
"""
import json
import os
import sys

from layer_case_text import fmt, wrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REF = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "reference/sailor")
OUT = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "validation/layers/sailor-profiles")
SET = "sailor-profiles"
COMMIT = "cf2c8e3cc53ce178fe58a4003f46b4b6b848fc33"

# The models as Sailor's third_party/Megatron-DeepSpeed/profile_all.py configures them (hidden,
# heads, layers of the full model, sequence) plus the fork's defaults: GPT-2 BPE vocabulary
# (50257, padded by Megatron to a multiple of 128 x tp), ffn 4 x hidden (no --ffn-hidden-size),
# no grouped-query attention, no --fp16/--bf16 (fp32).
MODELS = {
    "OPT-350": dict(case="opt-350m", hidden=1024, heads=16, layers=24, sequence=2048, ffn=4096,
                    activation="gelu", norm="layernorm", tied="false", family="gpt2",
                    post=1, note=(
                        "OPT-350M as profiled: hidden 1024 (no 512-wide embedding projection), 16 heads, "
                        "sequence 2048, ReLU MLP (written as gelu: the same GEMMs), pre-LayerNorm, untied LM head "
                        "(OPTLMHeadPipe: final LayerNorm + ColumnParallelLinear to the vocabulary). ")),
    "OPT-30": dict(case="opt-30b", hidden=7168, heads=56, layers=48, sequence=2048, ffn=28672,
                   activation="gelu", norm="layernorm", tied="false", family="gpt2",
                   post=1, note=(
                       "OPT-30B as profiled: hidden 7168, 56 heads, sequence 2048, ReLU MLP (written as gelu), "
                       "untied LM head with final LayerNorm. ")),
    "GPT-Neo-2.7": dict(case="gpt-neo-2.7b", hidden=2560, heads=20, layers=32, sequence=2048, ffn=10240,
                        activation="gelu", norm="layernorm", tied="true", family="gpt2",
                        post=0, note=(
                            "GPT-Neo-2.7B as profiled: hidden 2560, 20 heads, sequence 2048, GeLU MLP; its "
                            "alternate 'local' layers (window 256) are masked full attention, so every layer does "
                            "the same work. Sailor's GPT-Neo pipeline ends with a LayerNorm and the loss but has "
                            "no LM head, so its last unit is not a post_process and is left out. Its embedding unit "
                            "takes 3-12 ms on A100-40 and V100 (0.6-6.6 ms on A100-80), far more than OPT's "
                            "lookups of the same size: unexplained, use with care. ")),
    "LLAMA-3-8": dict(case="llama-3-8b", hidden=4096, heads=32, layers=32, sequence=8192, ffn=16384,
                      activation="swiglu", norm="rmsnorm", tied="false", family="llama",
                      post=2, note=(
                          "'LLAMA-3-8' as profiled is not Llama-3-8B: profile_all.py passes no --ffn-hidden-size, "
                          "--swiglu or --num-key-value-heads, so the MLP is gate/up/down at 4 x hidden = 16384 "
                          "(three GEMMs), attention has 32 key/value heads, the vocabulary is GPT-2's; sequence "
                          "8192, RMSNorm, rotary positions, untied head. post_process = RMSNorm unit + LM head "
                          "unit + loss (Sailor's last two units summed). ")),
}

# Sailor's GPU names -> our GPU name, GPUs a node (the largest tp profiled), memory (Sailor's
# GPU_MEMORY_GB), Sailor's GCP price per GPU-hour
# (sailor/Planner/simulations/constants.py; None: not given), and datasheet data for GPUs that
# configs/gpus/ does not have yet.
GPUS = {
    "A100-40": dict(case="a100-40gb", gpu="A100-40GB", per_node=4, mem=40, price=3.673385, peaks=None,
                    note="GPU: A100-40GB (GCP). "),
    "A100-80": dict(case="a100-80gb", gpu="A100-80GB", per_node=4, mem=80, price=None, peaks=None,
                    note=("GPU: A100-80GB (Sailor's bandwidth table gives it the A100-40's measured numbers, "
                          "used here). ")),
    "V100-16": dict(case="v100-16gb", gpu="V100-16GB", per_node=8, mem=16, price=2.859998, peaks=None,
                    note="GPU: V100-16GB (GCP; no TF32 on Volta: fp32 GEMMs at the 15.7 TFLOP/s fp32 peak at most). "),
    "GH-96": dict(case="gh200", gpu="GH200", per_node=4, mem=96, price=11.06,
                  peaks="peak_tflops: {fp32: 67, tf32: 494.7, fp16: 989.4, bf16: 989.4}, memory_bandwidth_bytes_per_s: 4.0e12",
                  note=("GPU: GH200 (Sailor's GH-96: the H100 of a Grace Hopper superchip with 96 GB HBM3). "
                        "Peaks written inline (configs/gpus/ has no GH200): NVIDIA GH200 datasheet, dense FP32 67, "
                        "TF32 494.7, FP16/BF16 989.4 TFLOP/s, 4.0 TB/s, from memory of the datasheet, not re-fetched. ")),
    "RTX-2080": dict(case="rtx-2080ti", gpu="RTX-2080Ti", per_node=8, mem=11, price=None,
                     peaks="peak_tflops: {fp32: 13.4, fp16: 53.8}, memory_bandwidth_bytes_per_s: 6.16e11",
                     note=("GPU: Sailor's 'RTX-2080' with 11 GB (its constants.py), i.e. an RTX 2080 Ti (the RTX 2080 "
                           "has 8 GB); PCIe. Peaks inline (configs/gpus/ has none): Turing whitepaper reference "
                           "board, FP32 13.4, FP16 tensor with FP32 accumulate 53.8 TFLOP/s, 616 GB/s, from memory, "
                           "not re-fetched. ")),
    "Titan-RTX": dict(case="titan-rtx", gpu="Titan-RTX", per_node=8, mem=24, price=None,
                      peaks="peak_tflops: {fp32: 16.3, fp16: 130.5}, memory_bandwidth_bytes_per_s: 6.72e11",
                      note=("GPU: NVIDIA Titan RTX, PCIe. Peaks inline (configs/gpus/ has none): NVIDIA's Titan RTX "
                            "figures, FP32 16.3, FP16 tensor 130.5 TFLOP/s, 672 GB/s, from memory, not re-fetched. ")),
    "RTX-3090": dict(case="rtx-3090", gpu="RTX-3090", per_node=8, mem=24, price=None,
                     peaks="peak_tflops: {fp32: 35.6, tf32: 35.6, fp16: 71, bf16: 71}, memory_bandwidth_bytes_per_s: 9.36e11",
                     note=("GPU: GeForce RTX 3090 (Sailor measured 50 GB/s between 2 GPUs, 7.9 and 5.3 GB/s in groups "
                           "of 4 and 8: NVLink-bridged pairs, PCIe beyond). Peaks inline (configs/gpus/ has none): "
                           "GA102 whitepaper, FP32 35.6, TF32 35.6, FP16/BF16 tensor with FP32 accumulate 71 TFLOP/s, "
                           "936 GB/s, from memory, not re-fetched. ")),
}

# Sailor's measured intra-node bandwidths (bytes/s), copied from sailor/providers/intra_node_bandwidths.json.
with open(os.path.join(REF, "intra_node_bandwidths.json")) as _f:
    for _gpu, _sizes in json.load(_f).items():
        if _gpu in GPUS:
            GPUS[_gpu]["bw"] = {int(size): entry[1] for size, entry in _sizes.items()}

SKIP = {("GPT-Neo-2.7", "GH-96"): ("OPT-350", "GH-96")}

COMMON_NOTES = (
    "Measured by Sailor's authors (Strati et al., SOSP'25 artifact) with their Megatron-DeepSpeed fork "
    "(third_party/Megatron-DeepSpeed: profile.sh -> profile_all.py -> pretrain_gpt.py --sailor-profile; DeepSpeed "
    "0.16.5 pipeline engine, NGC PyTorch 24.10 image): a model of 2 transformer layers plus embedding and head, "
    "pp 1, micro-batch = global batch, 10 iterations. No --fp16/--bf16 and no fp16 block in ds_config.json: "
    "weights and activations are fp32 (dtype fp32 below); on Ampere/Hopper the GEMMs evidently ran in TF32 where "
    "the rates below exceed the fp32 peak. Attention is unfused (baddbmm, softmax, bmm; Megatron's fused softmax "
    "kernel does not take fp32). Times are CUDA-event intervals recorded in each pipeline layer's forward "
    "pre/post hooks and full-backward pre/post hooks (sailor/profiling/profile_utils.py), the mean of iterations "
    "6-10 (the first 5 dropped), rounded to 1 us. They include the layer's tensor-parallel all-reduces and any "
    "launch gaps on the GPU timeline, not the optimizer (Sailor's third column) or gradient all-reduces. "
    "transformer = Sailor's unit 2 (the second profiled layer; unit 1, the first, differs by a few %); embedding = "
    "word + position embedding (vocab-parallel all-reduce at tp>1), forward only. "
)

ROUND4_NOTE = (
    "This file's values are rounded to 0.1 ms and carry no optimizer times or embedding backward: they were not "
    "written by the profiler code in the repository (which rounds to 1 us); how they were produced is not "
    "recorded, so treat them with care (small units have +-0.05 ms). "
)


def load(model, gpu):
    with open(os.path.join(REF, model, gpu, "profile.json")) as f:
        return json.load(f)


def is_round4(prof):
    vals = [x for m in prof.values() for t in m.values() for u in t.values() for x in u[:2]]
    return all(abs(v * 1e4 - round(v * 1e4)) < 1e-6 for v in vals)


def layer_flops(model, mbs, tp):
    """Forward matrix-multiply FLOPs of one transformer layer's shard (for the notes' rates)."""
    m = MODELS[model]
    h, s, f = m["hidden"], m["sequence"], m["ffn"]
    mats = 3 if m["activation"] == "swiglu" else 2
    return (2 * mbs * s * (4 * h * h + mats * h * f) + 4 * mbs * s * s * h) / tp


def points_of(model, prof, tps):
    """Points for the given tp degrees, sorted by tp then mbs."""
    out = []
    post = MODELS[model]["post"]
    for tp in sorted(tps):
        for mbs in sorted((int(m) for m in prof if str(tp) in prof[m])):
            units = prof[str(mbs)][str(tp)]
            n = len(units)
            if n != MODELS[model]["layers"] + 2 + (1 if post == 2 else 0):
                sys.exit(f"{model} mbs{mbs} tp{tp}: {n} units")
            emb, layer = units["0"], units["2"]
            out.append(f"  - {{unit: embedding, tp: {tp}, mbs: {mbs}, forward_s: {fmt(emb[0])}}}\n")
            out.append(f"  - {{unit: transformer, tp: {tp}, mbs: {mbs}, forward_s: {fmt(layer[0])}, "
                       f"backward_s: {fmt(layer[1])}}}\n")
            if post:
                tail = [units[str(n - 1 - i)] for i in range(post)]
                fwd = sum(u[0] for u in tail)
                bwd = sum(u[1] for u in tail)
                out.append(f"  - {{unit: post_process, tp: {tp}, mbs: {mbs}, forward_s: {fmt(fwd)}, "
                           f"backward_s: {fmt(bwd)}}}\n")
    return out


def falling_note(prof, tps, post):
    """Forward times of a transformer or head that fall when the micro-batch doubles."""
    odd = []
    for tp in sorted(tps):
        mbs = sorted(int(m) for m in prof if str(tp) in prof[m])
        for a, b in zip(mbs, mbs[1:]):
            ua, ub = prof[str(a)][str(tp)], prof[str(b)][str(tp)]
            keys = [("transformer", "2")] + ([("post_process", str(len(ua) - 1))] if post else [])
            for unit, k in keys:
                if ub[k][0] < ua[k][0]:
                    odd.append(f"{unit} tp{tp} mbs{a} {ua[k][0] * 1e3:.3f} ms > mbs{b} {ub[k][0] * 1e3:.3f} ms")
    return ("Suspicious: forward time falls as the micro-batch grows: " + "; ".join(odd) + ". ") if odd else ""


def rates_note(model, prof, tps):
    parts = []
    for tp in sorted(tps):
        for mbs in sorted((int(m) for m in prof if str(tp) in prof[m])):
            t = prof[str(mbs)][str(tp)]["2"][0]
            parts.append(f"tp{tp}/mbs{mbs} {layer_flops(model, mbs, tp) / t / 1e12:.0f}")
    return ("Transformer forward rate, matrix-multiply TFLOP/s per GPU: " + ", ".join(parts)
            + " (fp32 peaks: A100 19.5, V100 15.7, GH200 67; TF32: A100 156, GH200 495). ")


# fp32 (SIMT) dense peaks in TFLOP/s and whether the GPU has TF32 tensor cores, to tell from the
# measured rates whether the fp32 GEMMs ran as TF32.
FP32_PEAK = {"A100-40": (19.5, True), "A100-80": (19.5, True), "V100-16": (15.7, False), "GH-96": (67, True),
             "RTX-2080": (13.4, False), "Titan-RTX": (16.3, False), "RTX-3090": (35.6, True)}


def gemm_dtype(model, gpu, prof):
    """tf32 where the measured rates exceed the fp32 peak (TF32 tensor cores ran the GEMMs), else fp32."""
    best = max(layer_flops(model, int(m), int(t)) / u["2"][0] / 1e12
               for m, tps in prof.items() for t, u in tps.items())
    peak, tf32 = FP32_PEAK[gpu]
    return "tf32" if tf32 and best > peak * 1.05 else "fp32"


def gemm_precision_note(model, gpu, prof):
    best = max(layer_flops(model, int(m), int(t)) / u["2"][0] / 1e12
               for m, tps in prof.items() for t, u in tps.items())
    peak, tf32 = FP32_PEAK[gpu]
    if not tf32:
        verdict = "fp32 on CUDA cores (no TF32 on this GPU)"
    elif best > peak * 1.05:
        verdict = "TF32 tensor cores (the rate exceeds the fp32 peak)"
    elif gpu == "RTX-3090":
        verdict = "undecidable (the RTX 3090's dense TF32 peak equals its fp32 peak)"
    else:
        verdict = "fp32 on CUDA cores, TF32 evidently off in this run (the rate stays at or below the fp32 peak)"
    return (f"Inferred GEMM precision of this file: {verdict}; best transformer forward rate in the file "
            f"{best:.0f} TFLOP/s, fp32 peak {peak}. ")


def bandwidth_for(info, tp):
    """Sailor's measurement for the smallest GPU group holding tp GPUs: (group size, total bytes/s of
    its size/2 concurrent send/recv pairs, bytes/s a pair)."""
    sizes = sorted(info["bw"])
    size = min((s for s in sizes if s >= max(tp, 2)), default=sizes[-1])
    return size, info["bw"][size], info["bw"][size] / (size // 2)


def per_pair(info):
    return [info["bw"][s] / (s // 2) for s in sorted(info["bw"])]


def node_yaml(gpu, tp_group):
    info = GPUS[gpu]
    size, total, bw = bandwidth_for(info, tp_group)
    price = round(info["price"] * info["per_node"], 6) if info["price"] else 1
    fields = [f"name: sailor-{info['case']}", f"gpu: {info['gpu']}", f"gpus_per_node: {info['per_node']}",
              f"gpu_memory_gib: {info['mem']}"]
    if info["peaks"]:
        fields.append(info["peaks"])
    fields += [f"intra_node_bandwidth_bits_per_s: {bw * 8:.4e}", "inter_node_bandwidth_bits_per_s: 1.0e11",
               f"price_usd_per_hour: {price}"]
    return ("node_type: {" + ", ".join(fields) + "}\n",
            f"Node type: intra-node bandwidth = Sailor's measured NCCL send/recv bandwidth in a group of {size} "
            f"GPUs ({size // 2} concurrent pair{'s' if size > 2 else ''}, {total / 1e9:.2f} GB/s in all, "
            f"{bw / 1e9:.2f} GB/s a pair, x 8 bits; sailor/providers/intra_node_bandwidths.json); inter-node "
            f"bandwidth and price{'' if info['price'] else ' (1)'} are placeholders that layer times do not use. "
            + (f"Sailor measured no group of {tp_group} GPUs; the largest measured group stands in. " if size < tp_group else ""))


def model_yaml(model, dtype="fp32"):
    m = MODELS[model]
    return (
        "model:\n"
        f"  hidden: {m['hidden']}\n"
        f"  heads: {m['heads']}\n"
        f"  kv_heads: {m['heads']}\n"
        f"  layers: {m['layers']}\n"
        f"  sequence: {m['sequence']}\n"
        "  vocab: 50257\n"
        f"  ffn_hidden: {m['ffn']}\n"
        f"  activation: {m['activation']}\n"
        f"  norm: {m['norm']}\n"
        f"  tied_embeddings: {m['tied']}\n"
        f"  family: {m['family']}\n"
        f"  dtype: {dtype}\n"
        "  attention: unfused\n"
        "  causal: true\n"
    )


def case_yaml(model, gpu, tps, suffix):
    prof = load(model, gpu)
    info = GPUS[gpu]
    node, node_note = node_yaml(gpu, max(tps))
    case = f"{MODELS[model]['case']}-{info['case']}{suffix}"
    extra = ROUND4_NOTE if is_round4(prof) else ""
    units = "embedding, transformer" + (", post_process" if MODELS[model]["post"] else "")
    return case, (
        f"# Generated by scripts/convert-sailor-layers.py from reference/sailor/{model}/{gpu}/profile.json; do not edit.\n"
        "kind: layer_times\n"
        f"set: {SET}\n"
        f"case: {case}\n"
        "source:\n"
        "  title: \"Sailor (Strati et al., SOSP'25): per-layer profiles\"\n"
        f"  table: \"sailor/Planner/sailor_planner/profiles/{model}/{gpu}/profile.json\"\n"
        f"  url: https://github.com/eth-easl/sailor/blob/{COMMIT}/sailor/Planner/sailor_planner/profiles/{model}/{gpu}/profile.json\n"
        "  date: 2025-07\n"
        + node
        + model_yaml(model, gemm_dtype(model, gpu, prof))
        + "stack: megatron\n"
        "points:\n"
        + "".join(points_of(model, prof, tps))
        + "notes: >-\n"
        + wrap(COMMON_NOTES + MODELS[model]["note"] + f"Unit types here: {units}. " + info["note"] + extra
               + node_note + gemm_precision_note(model, gpu, prof) + falling_note(prof, tps, MODELS[model]["post"])
               + rates_note(model, prof, tps))
    )


def main():
    os.makedirs(OUT, exist_ok=True)
    written = 0
    for model in sorted(MODELS):
        for gpu in sorted(GPUS):
            if not os.path.exists(os.path.join(REF, model, gpu, "profile.json")):
                continue
            if (model, gpu) in SKIP:
                if load(model, gpu) != load(*SKIP[(model, gpu)]):
                    sys.exit(f"{model}/{gpu}: expected a copy of {SKIP[(model, gpu)]}; look at it again")
                continue
            prof = load(model, gpu)
            tps = sorted({int(t) for m in prof.values() for t in m})
            bws = per_pair(GPUS[gpu])
            split = max(bws) / min(bws) > 1.5
            groups = [[tp] for tp in tps] if split else [tps]
            for group in groups:
                case, text = case_yaml(model, gpu, group, f"-tp{group[0]}" if split else "")
                path = os.path.join(OUT, case + ".yaml")
                with open(path + ".tmp", "w") as out:
                    out.write(text)
                os.replace(path + ".tmp", path)
                written += 1
    print(f"wrote {written} cases to {OUT}")


if __name__ == "__main__":
    main()
