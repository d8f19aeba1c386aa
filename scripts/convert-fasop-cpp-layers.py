#!/usr/bin/env python3
"""Converts fasop-cpp's own H100 layer profiles (configs/profiles/gpt2xl_h100.yaml,
llama3-8b_h100.yaml, measured by `fasop-cpp profile layers`) into layer-time validation cases
validation/layers/fasop-cpp-h100/<model>-h100.yaml.

Every (layer type, tp, mbs) with forward_s and backward_s becomes a point. The profiles' header
lines (command, machine, date, LibTorch version, repeats, spread) go into the notes.

Usage: scripts/convert-fasop-cpp-layers.py [PROFILE_DIR] [OUT_DIR]
Regenerates the files byte-identically; Debian's python3 only (the profiles are read with a
parser for the profile files' own simple layout, not a YAML library).
"""
import os
import re
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROFILES = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "configs/profiles")
OUT = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "validation/layers/fasop-cpp-h100")
SET = "fasop-cpp-h100"

CASES = {
    "gpt2xl_h100.yaml": dict(case="gpt2xl-h100", preset="gpt2xl", dtype="fp16", flops=lambda tp, b: (
        24 * b * 1024 * 1600 * 1600 + 4 * b * 1024 * 1024 * 1600) / tp),
    "llama3-8b_h100.yaml": dict(case="llama3-8b-h100", preset="llama3-8b", dtype="bf16", flops=lambda tp, b: (
        2 * b * 8192 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336) + 4 * b * 8192 * 8192 * 4096) / tp),
}

NOTES = (
    "Measured by fasop-cpp itself (`fasop-cpp profile layers`, src/profiler/): each layer type of the model is "
    "built in LibTorch as one GPU's tensor-parallel shard (embedding over vocab/tp rows, attention with heads/tp, "
    "MLP columns and rows/tp, head with loss) and run forward and backward on one GPU in rounds (each round runs "
    "every layer type once); the times are medians of the repeats after warm-up, CUDA-synchronised per "
    "measurement. Single process: NO tensor-parallel communication is in any time (a tp>1 point is the shard's "
    "compute only); no optimizer. Attention is LibTorch's fused scaled-dot-product attention where it has one "
    "(hence the preset's default attention: flash). Backward is measured, not 2 x forward. GPU: the H100 lent to "
    "this project (80 GB class; SXM or PCIe is not recorded in the header), compared here on the aws-h100 "
    "preset's p5.48xlarge (H100 SXM). "
)


def parse_profile(path):
    """Returns (header comment lines, {section: {unit: {tp: {mbs: value}}}})."""
    header, data = [], {}
    section = unit = None
    with open(path) as f:
        for raw in f:
            line = raw.rstrip("\n")
            if line.startswith("#"):
                header.append(line[1:].strip())
                continue
            if not line.strip():
                continue
            indent = len(line) - len(line.lstrip(" "))
            key, _, rest = line.strip().partition(":")
            if indent == 0:
                section = key
                data.setdefault(section, {}) if not rest.strip() else None
            elif indent == 2:
                unit = key
                data[section][unit] = {}
            elif indent == 4:
                inner = re.fullmatch(r"\{(.*)\}", rest.strip())
                if not inner:
                    sys.exit(f"{path}: cannot read line: {line}")
                values = {}
                for item in inner.group(1).split(","):
                    mbs, _, value = item.partition(":")
                    values[int(mbs)] = float(value)
                data[section][unit][int(key)] = values
    return header, data


def fmt(x):
    return f"{x:.6e}"


def wrap(text):
    return textwrap.fill(text.strip(), width=110, initial_indent="  ", subsequent_indent="  ",
                         break_long_words=False, break_on_hyphens=False) + "\n"


def case_yaml(filename, spec):
    header, data = parse_profile(os.path.join(PROFILES, filename))
    fwd, bwd = data["forward_s"], data["backward_s"]
    points = []
    units = sorted(fwd, key=lambda u: ["embedding", "transformer", "post_process"].index(u))
    for tp in sorted(fwd["transformer"]):
        for mbs in sorted(fwd["transformer"][tp]):
            for unit in units:
                points.append(f"  - {{unit: {unit}, tp: {tp}, mbs: {mbs}, forward_s: {fmt(fwd[unit][tp][mbs])}, "
                              f"backward_s: {fmt(bwd[unit][tp][mbs])}}}\n")
    rates = [f"tp{tp}/mbs{mbs} {spec['flops'](tp, mbs) / fwd['transformer'][tp][mbs] / 1e12:.0f}"
             for tp in sorted(fwd["transformer"]) for mbs in sorted(fwd["transformer"][tp])]
    measured = " ".join(h for h in header if not h.startswith("forward_s/backward_s"))
    notes = (NOTES + f"Profile header: {measured} Precision {spec['dtype']} as the command says (the preset's dtype). "
             f"Unit types here: {', '.join(units)}. Transformer forward rate, matrix-multiply TFLOP/s (per GPU, "
             "compute only; attention counted in full, not halved for the causal mask): " + ", ".join(rates) + ".")
    return (
        f"# Generated by scripts/convert-fasop-cpp-layers.py from configs/profiles/{filename}; do not edit.\n"
        "kind: layer_times\n"
        f"set: {SET}\n"
        f"case: {spec['case']}\n"
        "source:\n"
        "  title: \"fasop-cpp profile layers on an H100 (this repository)\"\n"
        f"  table: \"configs/profiles/{filename}\"\n"
        "  date: 2026-11\n"
        "node_type: {cluster: aws-h100, name: p5.48xlarge}\n"
        f"model: {{preset: {spec['preset']}}}\n"
        "stack: libtorch\n"
        "tp_comm_included: false\n"
        "points:\n"
        + "".join(points)
        + "notes: >-\n"
        + wrap(notes)
    )


def main():
    os.makedirs(OUT, exist_ok=True)
    for filename, spec in CASES.items():
        path = os.path.join(OUT, spec["case"] + ".yaml")
        with open(path + ".tmp", "w") as out:
            out.write(case_yaml(filename, spec))
        os.replace(path + ".tmp", path)
    print(f"wrote {len(CASES)} cases to {OUT}")


if __name__ == "__main__":
    main()
