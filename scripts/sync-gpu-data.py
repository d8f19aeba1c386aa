#!/usr/bin/env python3
"""Keeps configs/gpus/*.yaml equal to what scripts/fit-gpu-data.sh found.

Three kinds of number are kept in step, each by a rule written here, not by hand:
- FITTED: every value a report validation/fits/<gpu>-<precision>.txt gives (the fit's output);
- "as <precision>" lines: a precision that shares another's GEMM model on the same GPU (bf16 and
  fp16 on the same tensor cores) takes its GEMM and memory shares;
- TRANSFERS below: a GPU without its own measurement takes another GPU's values (same die or
  generation), as the line's comment says; SHAPE_TRANSFERS the GEMM shape curve alone, and
  NETWORK_TRANSFERS the network's bus share of a system with the same NICs.

Usage: scripts/sync-gpu-data.py [--apply] [--fits DIR] [--gpus DIR]. Without --apply it lists what
differs and exits 1 if anything does (tests/gpu_data_test.sh runs it so, on fits it has just
made); with --apply it rewrites the files. --fits and --gpus name other folders than the
repository's validation/fits and configs/gpus.
Debian's python3 only: the files are edited as text so that their comments stay.
"""
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def option(name, default):
    args = sys.argv[1:]
    return args[args.index(name) + 1] if name in args[:-1] else default


GPUS = option("--gpus", os.path.join(ROOT, "configs/gpus"))
FITS = option("--fits", os.path.join(ROOT, "validation/fits"))

# The per-precision numbers an "as" line copies from its precision on the same GPU, and the
# GEMM model a transfer copies from another GPU (memory shares stay each GPU's own; attention
# shares are literature values per generation, written where they stand).
SHARED = ["gemm_peak_share", "gemm_half_dim", "gemm_unaligned_share", "memory_share"]
GEMM_MODEL = ["gemm_peak_share", "gemm_half_dim"]
# (gpu, precision) <- (gpu, precision): GPUs with no measurement of their own in that precision.
TRANSFERS = {
    ("a10", "fp16"): ("a10g", "fp16"),             # the same GA102 die
    ("a100-40gb", "fp16"): ("a100-80gb", "fp16"),  # the same chip
    ("a100-80gb", "fp32"): ("a100-40gb", "tf32"),
    ("b200", "bf16"): ("gb200", "bf16"),           # the same generation: GB200's BF16 MoE fit
    ("b300", "bf16"): ("gb200", "bf16"),
    ("gb300", "bf16"): ("gb200", "bf16"),
    ("b300", "fp8"): ("b200", "fp8"),
    ("b300", "mxfp8"): ("b200", "mxfp8"),
    ("b200", "nvfp4"): ("gb200", "nvfp4"),         # no B200 or B300 NVFP4 row: the NVL72 systems'
    ("b300", "nvfp4"): ("gb300", "nvfp4"),
    ("h200", "bf16"): ("h100", "bf16"),            # the same GH100 die
    ("h200", "fp8"): ("h100", "fp8"),
    ("gh200", "bf16"): ("h100", "bf16"),           # the same GH100 die
    ("gh200", "fp8"): ("h100", "fp8"),
}
# (gpu, precision) <- (gpu, precision): the GEMM shape curve alone (gemm_half_dim), where the
# GPU's peak share is fitted to its own rows but no GEMM sweep of it exists: Blackwell's FP8 and
# MXFP8 take the H100's FP8 sweep's (applied before TRANSFERS, which may copy them on).
SHAPE_TRANSFERS = {
    ("b200", "fp8"): ("h100", "fp8"),
    ("b200", "mxfp8"): ("h100", "fp8"),
    ("gb200", "fp8"): ("h100", "fp8"),
    ("gb200", "mxfp8"): ("h100", "fp8"),
    ("gb300", "fp8"): ("h100", "fp8"),
    ("gb300", "mxfp8"): ("h100", "fp8"),
    ("gb200", "nvfp4"): ("h100", "fp8"),   # no FP4 GEMM sweep: fp8's curve, the nearest measured
    ("gb300", "nvfp4"): ("h100", "fp8"),
}
# gpu <- gpu: the network's bus share (inter_node.bus_share), fitted with H100 FP8's rows, for the
# DGX systems whose nodes talk over the same InfiniBand NICs: DGX B200's 8 x 400 Gb/s ConnectX-7
# are DGX H100's; DGX B300's 8 x 800 Gb/s ConnectX-8 are taken to reach the same share; so are
# the GB200 and GB300 NVL72 trays' ConnectX-7 and ConnectX-8 NICs between racks (inside a rack
# their GPUs talk over NVLink: intra_node, clusters/dgx-gb200.yaml's nvlink_domain_nodes).
NETWORK_TRANSFERS = {"b200": "h100", "b300": "h100", "gb200": "h100", "gb300": "h100"}
LAUNCH_TRANSFERS = {
    ("a10", "megatron"): ("a10g", "megatron"),
    ("b300", "megatron"): ("b200", "megatron"),    # DGX B300's host is a DGX B200's (x86)
    ("gb300", "megatron"): ("gb200", "megatron"),  # the same Grace CPU beside the GPUs
}


def number(value):
    """The style of the files: 3 significant digits, short exponents (6e-5, 1.83e-5)."""
    x = float(value)
    if x == 0:
        return "0"
    if abs(x) < 1e-3:
        mantissa, exponent = f"{x:.3g}".split("e")
        return f"{mantissa}e{int(exponent)}"
    if abs(x) >= 10:
        return f"{x:.4g}"
    return f"{x:.3f}".rstrip("0").rstrip(".")


def fitted():
    """{(gpu, precision): {parameter: value}} from the fit reports."""
    out = {}
    for path in sorted(glob.glob(os.path.join(FITS, "*.txt"))):
        # <gpu>-<precision>.txt (validate --fit), <gpu>-<precision>.gemm.txt (--gemm-fit) and
        # <gpu>-host.txt (the host's dispatch cost, no precision's own); memory-runtime.txt is
        # scripts/fit-memory-runtime.py's, which checks its own values
        if os.path.basename(path) == "memory-runtime.txt":
            continue
        gpu, precision = os.path.basename(path)[:-4].removesuffix(".gemm").rsplit("-", 1)
        head = open(path).read().split("\n\n")[0].split("\n")[1:]
        values = dict(line.strip().split(": ") for line in head if ": " in line)
        if path.endswith(".gemm.txt"):
            # A step fit of the same GPU and precision wins over a GEMM sweep for what both give
            # (H100 FP8: the sweep's shape curve, the steps' peak share with casts and scaling).
            out.setdefault((gpu, precision), {}).update({k: v for k, v in values.items() if k not in out.get((gpu, precision), {})})
        else:
            out.setdefault((gpu, precision), {}).update(values)
    return out


def field_span(text, precision, name):
    """The (start, end) of a value in a GPU file's text, or None."""
    if name.startswith("dispatch_s."):
        pattern = rf"^  dispatch_s: \{{[^}}]*\b{name[11:]}: ([^,}}]+)"
    elif name == "kernel_gap_s":
        pattern = r"^  kernel_gap_s: (\S+)"
    elif name in ("network.bus_share", "nvlink.bus_share"):
        section = "inter_node" if name.startswith("network") else "intra_node"
        pattern = rf"^  {section}: \{{bus_share: ([^,}}]+)"
    elif name == "overlap_slowdown":
        pattern = r"^overlap_slowdown: (\S+)"
    else:
        pattern = rf"^  {precision}: \{{[^}}]*\b{name}: ([^,}}]+)"
    match = re.search(pattern, text, re.M)
    return match.span(1) if match else None


class Files:
    def __init__(self):
        self.text = {os.path.basename(p)[:-5]: open(p).read() for p in sorted(glob.glob(os.path.join(GPUS, "*.yaml")))}
        self.changes = []

    def get(self, gpu, precision, name):
        span = field_span(self.text[gpu], precision, name)
        return None if span is None else self.text[gpu][span[0]:span[1]]

    def set(self, gpu, precision, name, value, why):
        span = field_span(self.text[gpu], precision, name)
        if span is None:
            sys.exit(f"{GPUS}/{gpu}.yaml: no field '{precision}.{name}' to set ({why})")
        old, new = self.text[gpu][span[0]:span[1]], number(value)
        if number(old) != new:
            self.changes.append(f"{gpu}.yaml {precision}.{name}: {old} -> {new} ({why})")
            self.text[gpu] = self.text[gpu][:span[0]] + new + self.text[gpu][span[1]:]

    def as_lines(self, gpu):
        """(precision, source precision) for each '# as <precision>' line."""
        return re.findall(r"^  (\w+): \{[^}]*\}\s*# as (\w+)", self.text[gpu], re.M)


def main():
    apply = "--apply" in sys.argv[1:]
    files = Files()
    for (gpu, precision), values in fitted().items():
        for name, value in values.items():
            why = f"fit {gpu}-{precision}.txt"
            # "fp8.gemm_peak_share": another precision's parameter, fitted beside this one's.
            own, name = (name.split(".", 1) if re.match(r"^(fp|bf|tf)\d+\.", name) else (precision, name))
            if name in ("attention_shares", "sdpa_attention_shares"):
                # A kernel's two attention shares, their ratio kept (validate --fit moves them so).
                kernel = name[:-len("attention_shares")]
                forward, backward = kernel + "attention_peak_share", kernel + "attention_backward_peak_share"
                ratio = float(files.get(gpu, own, backward)) / float(files.get(gpu, own, forward))
                files.set(gpu, own, backward, float(value) * ratio, why)
                name = forward
            files.set(gpu, own, name, value, why)
    # Shape transfers, transfers, then "as" lines (which may copy a transferred precision).
    for (gpu, precision), (source, source_precision) in SHAPE_TRANSFERS.items():
        files.set(gpu, precision, "gemm_half_dim", files.get(source, source_precision, "gemm_half_dim"),
                  f"shape as {source} {source_precision}")
    for (gpu, precision), (source, source_precision) in TRANSFERS.items():
        for name in GEMM_MODEL:
            value = files.get(source, source_precision, name)
            if value is not None:
                files.set(gpu, precision, name, value, f"as {source} {source_precision}")
    for gpu, source in NETWORK_TRANSFERS.items():
        files.set(gpu, "", "network.bus_share", files.get(source, "", "network.bus_share"), f"as {source}")
    for (gpu, stack), (source, source_stack) in LAUNCH_TRANSFERS.items():
        files.set(gpu, "", f"dispatch_s.{stack}", files.get(source, "", f"dispatch_s.{source_stack}"), f"as {source}")
    for gpu in files.text:
        for precision, source_precision in files.as_lines(gpu):
            for name in SHARED:
                value = files.get(gpu, source_precision, name)
                if value is not None and files.get(gpu, precision, name) is not None:
                    files.set(gpu, precision, name, value, f"as {source_precision}")
    for change in files.changes:
        print(change)
    if apply:
        for gpu, text in files.text.items():
            path = os.path.join(GPUS, gpu + ".yaml")
            if open(path).read() != text:
                with open(path + ".tmp", "w") as out:
                    out.write(text)
                os.replace(path + ".tmp", path)
    elif files.changes:
        print(f"{len(files.changes)} numbers differ from the fits; run scripts/sync-gpu-data.py --apply and rebuild",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
