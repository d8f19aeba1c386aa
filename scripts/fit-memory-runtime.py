#!/usr/bin/env python3
"""Fits the memory model's runtime constants per training stack and GPU (configs/gpus/*.yaml,
memory_runtime) on half of the measured memory sets and reports the other half, held out.

- Megatron (validation/megatron-ci-memory: max allocated and allocated after the step, last
  rank): workspace_gib is the median of what stays allocated after the optimizer step beyond the
  predicted persistent state, over the fitted runs of Megatron's local layers; te_workspace_gib the
  same over Transformer Engine's runs, less workspace_gib.
- torchtitan (validation/torchtitan-memory: max reserved): reserve_share, the caching
  allocator's reserve over what the step allocates beyond its persistent state, minimising the
  fitted runs' mean absolute error (a grid of 0.005).

The fitted runs are every other case of each (stack, GPU) in name order; the rest are held out.
Writes OUT_DIR/memory-runtime.txt (default validation/fits/) with the memory_runtime entries the GPU
files carry; with --check, exits 1 naming every entry configs/gpus/ does not carry as fitted
(tests/gpu_data_test.sh). scripts/fit-gpu-data.sh runs it.

Usage: python3 scripts/fit-memory-runtime.py [--check] [build/fasop-cpp [OUT_DIR]]
"""
import csv
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GIB = 1024 ** 3
DYNAMIC = ["activations", "layer_transient", "loss", "gathered_params", "unreduced_grads", "optimizer_step",
           "pipeline_buffers"]


def validate(binary, case_set):
    """validate --csv rows of a shipped set."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "rows.csv")
        subprocess.run([binary, "validate", f"validation/{case_set}", "--quiet", "--csv", out], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL)
        return list(csv.DictReader(open(out, newline="")))


def split(rows):
    rows = sorted(rows, key=lambda r: r["case"])
    return rows[0::2], rows[1::2]


def uses_transformer_engine(row):
    # The converter's cases name Megatron-LM's tests: Transformer Engine's have "_te_" in them.
    return "_te_" in row["case"] or row["case"].startswith("gpt3_7b")


# The stacks' defaults (src/specs/runtime_memory.cc) where a GPU's file gives none.
DEFAULTS = {"megatron": {"workspace_gib": 0.075, "te_workspace_gib": 0.03125, "reserve_share": 0.05},
            "torchtitan": {"workspace_gib": 0.075, "te_workspace_gib": 0.0, "reserve_share": 0.05}}
GPU_FILES = {"A100-80GB": "a100-80gb.yaml", "H100": "h100.yaml", "H100-96GB-500W": "h100-96gb-500w.yaml", "H200": "h200.yaml"}


def current_constants(gpu, stack):
    """The GPU file's memory_runtime entry for `stack` over the defaults."""
    values = dict(DEFAULTS[stack])
    path = os.path.join(ROOT, "configs", "gpus", GPU_FILES[gpu])
    entry = re.search(rf"^  {stack}: {{([^}}]*)}}", open(path).read(), re.M)
    for item in (entry.group(1).split(",") if entry else []):
        key, value = item.split(":")
        values[key.strip()] = float(value)
    return values


def error_lines(label, errors_rows):
    errors = [e for e, _ in errors_rows]
    worst = max(errors_rows, key=lambda e: abs(e[0]))
    return (f"    {label}: {len(errors)} runs, mean |error| {statistics.mean(map(abs, errors)):.1f}%, "
            f"worst {worst[1]['case']} {worst[0]:+.1f}%")


def carried(entry):
    """Whether configs/gpus/<file> carries `entry` ("FILE: STACK: {k: v, ...}") as fitted."""
    file, stack, values = entry.split(": ", 2)
    wanted = dict((k.strip(), float(v)) for k, v in (item.split(":") for item in values.strip("{}").split(",")))
    gpu = next(g for g, f in GPU_FILES.items() if f == file)
    have = current_constants(gpu, stack)
    return all(abs(have[k] - v) < 5e-5 for k, v in wanted.items())


def main():
    args = [a for a in sys.argv[1:] if a != "--check"]
    check = "--check" in sys.argv[1:]
    binary = args[0] if args else os.path.join(ROOT, "build", "fasop-cpp")
    out_dir = args[1] if len(args) > 1 else os.path.join(ROOT, "validation", "fits")
    report, entries = [], []
    megatron = validate(binary, "megatron-ci-memory")
    torchtitan = validate(binary, "torchtitan-memory")

    report.append("megatron (validation/megatron-ci-memory: allocated after the step and peak allocated, last rank)")
    for gpu in sorted({r["gpu"] for r in megatron}):
        fitted, held = split([r for r in megatron if r["gpu"] == gpu])
        constants = current_constants(gpu, "megatron")
        # What stays allocated after the step beyond the prediction, median over the fitted runs
        # of each kind of layers: the constants that make those medians 0.
        def residual(rows):
            return statistics.median(float(r["measured_after_step_gib"]) - float(r["predicted_after_step_gib"]) for r in rows)
        local = [r for r in fitted if not uses_transformer_engine(r)]
        te = [r for r in fitted if uses_transformer_engine(r)]
        workspace = max(0.0, constants["workspace_gib"] + (residual(local) if local else 0))
        te_workspace = max(0.0, constants["te_workspace_gib"] + (residual(te) if te else 0) - (residual(local) if local else 0))
        entries.append(f"{GPU_FILES[gpu]}: megatron: {{workspace_gib: {workspace:.4f}, te_workspace_gib: {te_workspace:.4f}}}")
        report.append(f"  {gpu}: workspace_gib {workspace:.4f} ({len(local)} local runs), te_workspace_gib "
                      f"{te_workspace:.4f} ({len(te)} Transformer Engine runs)")
        for label, rows in (("fitted", fitted), ("held out", held)):
            report.append(error_lines(label, [(float(r["memory_error_pct"]), r) for r in rows]))

    report.append("torchtitan (validation/torchtitan-memory: peak reserved, the largest over ranks)")
    for gpu in sorted({r["gpu"] for r in torchtitan}):
        fitted, held = split([r for r in torchtitan if r["gpu"] == gpu])

        def predicted(r, share):
            allocated = float(r["predicted_figure_gib"]) - float(r["mem_allocator_reserve_gib"])
            return allocated + share * sum(float(r[f"mem_{k}_gib"]) for k in DYNAMIC)

        def errors(rows, share):
            return [((predicted(r, share) / float(r["measured_memory_gib"]) - 1) * 100, r) for r in rows]

        share = min((s / 1000 for s in range(0, 301, 5)),
                    key=lambda s: (statistics.mean(abs(e) for e, _ in errors(fitted, s)), s))
        entries.append(f"{GPU_FILES[gpu]}: torchtitan: {{reserve_share: {share:.3f}}}")
        report.append(f"  {gpu}: reserve_share {share:.3f}")
        for label, rows in (("fitted", fitted), ("held out", held)):
            report.append(error_lines(label, errors(rows, share)))
    report.append("memory_runtime entries:")
    report += ["  " + entry for entry in entries]
    text = "\n".join(report) + "\n"
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "memory-runtime.txt"), "w") as out:
        out.write(text)
    sys.stdout.write(text)
    stale = [entry for entry in entries if not carried(entry)]
    for entry in stale:
        print(f"configs/gpus/ differs from the fit: {entry}", file=sys.stderr)
    if check and stale:
        sys.exit(1)


if __name__ == "__main__":
    main()
