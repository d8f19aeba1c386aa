#!/usr/bin/env python3
"""Converts Metis's published profile samples (reference/metis/) into a layer-time case,
validation/layers/metis-profiles/gpt-1.5b-a100-80gb.yaml (set metis-profiles).

Input: reference/metis/DeviceType.A100_tp<T>_bs<B>.json, copied from SamsungLabs/Metis
profile_data_samples/ (see reference/metis/README.md): per pipeline unit of a 10-unit GPT
(embedding, 8 transformer layers, last unit), layer_compute_total_ms = forward + backward time in
milliseconds at micro-batch B and tensor-parallel degree T on A100 GPUs.

Metis publishes no forward-only time, so the points carry `forward_backward_s` (the measured sum)
and no forward_s. The layer-time loader (src/specs/validation_case.cc) requires forward_s and
rejects other keys, and validation/layers/*/*.yaml is compiled in, so the case is written outside
validation/ until the loader accepts forward_backward_s; then pass validation/layers/metis-profiles
as OUT_DIR. The last unit (0.34-0.68 ms) cannot hold a 51200-word LM head's GEMMs (about 1.3e12
FLOPs forward and backward at micro-batch 1), so it is not a post_process and is left out.

Usage: scripts/convert-metis-layers.py [REFERENCE_DIR] [OUT_DIR]
Regenerates the file byte-identically; Debian's python3 only.
"""
import json
import os
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REF = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "reference/metis")
OUT = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "validation/layers/metis-profiles")
SET = "metis-profiles"
CASE = "gpt-1.5b-a100-80gb"
COMMIT = "4b24046fbef31ca6fec6ccfd772d709f16257320"
TPS = [1, 2, 4]
BATCHES = [1, 2, 4]
HIDDEN, SEQ, HEADS, VOCAB = 4096, 1024, 32, 51200

NOTES = (
    "Metis (Um et al., USENIX ATC'24) publishes only these samples of its profile format (README 'Profile Data "
    "Guide'); its profiler is not in the repository. By the README, each unit's time was measured with PyTorch "
    "forward/backward (pre-)hooks with torch.cuda.synchronize() before each timestamp, after warm-up runs, in a "
    "Megatron-LM training iteration (micro-batch = batch = global batch) - so tensor-parallel all-reduces, "
    "host overhead and synchronisation are inside; the number of repetitions is not stated. "
    "layer_compute_total_ms is forward + backward of the unit: Metis measures no forward alone, hence the field "
    "forward_backward_s. Model, from Metis's scripts/cost_het_cluster.sh (GPT '1.5B'): hidden 4096, 32 heads, "
    "sequence 1024, vocabulary 51200, 10 units = embedding, 8 transformer layers, last unit (the samples' "
    "parameters_per_layer_bytes, 202383360 for a transformer layer, is 12 h^2 + 13 h at h = 4096 within 0.5% "
    "if read as a parameter count; the embedding's 393216000 fits neither reading). Not stated: precision "
    "(tf32 written here: fp32 with TF32 GEMMs, as Sailor's fp32 runs on A100 evidently were, since fp16 would put the layer at 14% of peak; the transformer reaches about 44 TFLOP/s forward+backward at tp 1, "
    "14% of the A100's fp16 peak or 28% of TF32, and its memory grows about 0.7 GB per sample, which would also "
    "fit fp32 activations), attention kernel (unfused assumed), recomputation (none assumed: time grows "
    "linearly with the batch). GPU: A100 80GB (the samples' total memory, 53 GB at tp 1 and batch 1, and the "
    "80 GiB of the A100 node in Metis's results/ examples), 4 GPUs a node; intra-node bandwidth 46 GB/s is that "
    "example cluster file's A100 figure (it suggests PCIe, not NVLink; the embedding's forward+backward jumps "
    "from 0.29 ms at tp 1 to about 1.0-1.2 ms at tp 2 and 4). Unit types here: embedding, transformer; the last "
    "unit is left out (too fast to contain the LM head). "
)


def fmt(x):
    return f"{x:.6e}"


def wrap(text):
    return textwrap.fill(text.strip(), width=110, initial_indent="  ", subsequent_indent="  ",
                         break_long_words=False, break_on_hyphens=False) + "\n"


def main():
    points = []
    rates = []
    for tp in TPS:
        for bs in BATCHES:
            name = f"DeviceType.A100_tp{tp}_bs{bs}.json"
            with open(os.path.join(REF, name)) as f:
                data = json.load(f)
            times = data["execution_time"]["layer_compute_total_ms"]
            if len(times) != 10 or len(set(times[1:9])) != 1:
                sys.exit(f"{name}: expected embedding, 8 identical transformer layers and a last unit")
            emb, layer = times[0] / 1e3, times[1] / 1e3
            points.append(f"  - {{unit: embedding, tp: {tp}, mbs: {bs}, forward_backward_s: {fmt(emb)}}}\n")
            points.append(f"  - {{unit: transformer, tp: {tp}, mbs: {bs}, forward_backward_s: {fmt(layer)}}}\n")
            flops = 3 * (24 * bs * SEQ * HIDDEN * HIDDEN + 4 * bs * SEQ * SEQ * HIDDEN) / tp
            rates.append(f"tp{tp}/bs{bs} {flops / layer / 1e12:.0f}")
    notes = NOTES + ("Transformer forward+backward rate, matrix-multiply TFLOP/s per GPU: " + ", ".join(rates) + ". ")
    text = (
        "# Generated by scripts/convert-metis-layers.py from reference/metis/DeviceType.A100_tp{1,2,4}_bs{1,2,4}.json; do not edit.\n"
        "# Points carry forward_backward_s (forward + backward, measured together) and no forward_s.\n"
        "kind: layer_times\n"
        f"set: {SET}\n"
        f"case: {CASE}\n"
        "source:\n"
        "  title: \"Metis (Um et al., USENIX ATC'24): profile data samples\"\n"
        "  table: \"profile_data_samples/DeviceType.A100_tp{1,2,4}_bs{1,2,4}.json\"\n"
        f"  url: https://github.com/SamsungLabs/Metis/tree/{COMMIT}/profile_data_samples\n"
        "  date: 2024-11\n"
        "node_type: {name: metis-a100-80gb, gpu: A100-80GB, gpus_per_node: 4, gpu_memory_gib: 80, "
        "intra_node_bandwidth_bits_per_s: 3.68e11, inter_node_bandwidth_bits_per_s: 8.0e10, price_usd_per_hour: 1}\n"
        "model:\n"
        f"  hidden: {HIDDEN}\n"
        f"  heads: {HEADS}\n"
        "  layers: 8\n"
        f"  sequence: {SEQ}\n"
        f"  vocab: {VOCAB}\n"
        f"  ffn_hidden: {4 * HIDDEN}\n"
        "  activation: gelu\n"
        "  norm: layernorm\n"
        "  tied_embeddings: true\n"
        "  family: gpt2\n"
        "  dtype: tf32\n"
        "  attention: unfused\n"
        "  causal: true\n"
        "stack: megatron\n"
        "points:\n"
        + "".join(points)
        + "notes: >-\n"
        + wrap(notes)
    )
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, CASE + ".yaml")
    with open(path + ".tmp", "w") as out:
        out.write(text)
    os.replace(path + ".tmp", path)
    print(f"wrote 1 case to {OUT}")


if __name__ == "__main__":
    main()
