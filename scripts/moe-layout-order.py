#!/usr/bin/env python3
"""Does the cost model rank NVIDIA's published MoE layouts as they measured? (issue 48)

For each MoE model, GPU and precision of the shipped validation set (validation/nemo-moe), lists
the published layouts with their measured and predicted throughput per GPU, and checks every pair
of different layouts whose measured throughputs differ by more than 5%: ordered as measured or not.
Prints the pairs and the share ordered; exits 0 (a report, not a gate).

usage: scripts/moe-layout-order.py [FASOP_CPP [CASE_DIR]]
  FASOP_CPP  the binary (default build/fasop-cpp); CASE_DIR default validation/nemo-moe
"""
import csv
import itertools
import math
import os
import subprocess
import sys
import tempfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARGIN = 0.05  # pairs whose measured throughputs differ by less are left out (rounding, noise)
LAYOUT_KEYS = ("tp", "pp", "cp", "ep", "dp", "micro_batch", "virtual_stages", "recompute", "moe_token_dispatcher",
               "overlap_ep_comm")


def predictions(binary, case_dir):
    """validate's rows by case name: measured and predicted step seconds."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "rows.csv")
        subprocess.run([binary, "validate", case_dir, "--quiet", "--csv", out], check=True, stdout=subprocess.DEVNULL)
        with open(out) as f:
            return {row["case"]: row for row in csv.DictReader(f)}


def case_facts(path):
    """(group, layout text, tokens a step) of a case file: group = (model, GPU, precision)."""
    with open(path) as f:
        case = yaml.safe_load(f)
    plan, model = case["plan"], case["model"]
    gpu = case["node_type"]["name"]
    name = case["case"]
    # The model is the case name before its GPU's part (qwen3-30b-a3b-tokendrop-b200-... -> qwen3-30b-a3b).
    short = gpu.replace("dgx-", "")
    base = name.split("-" + short + "-")[0].replace("-tokendrop", "").replace("-dropless", "")
    base = base.replace("-no-mtp", "").replace("-w-mtp", "")
    layout = {k: plan.get(k, 1 if k in ("cp", "ep", "virtual_stages") else None) for k in LAYOUT_KEYS}
    layout["moe_token_dispatcher"] = plan.get("moe_token_dispatcher", "alltoall")
    layout["token_drop"] = model["moe"].get("token_drop", False)
    text = " ".join(f"{k}={v}" for k, v in layout.items() if v not in (None, False))
    tokens = plan["global_batch"] * model["sequence"]
    return (base, gpu, model["dtype"]), text, tokens, plan["gpus"]


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "fasop-cpp")
    case_dir = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "validation", "nemo-moe")
    rows = predictions(binary, case_dir)
    groups = {}
    for name in sorted(os.listdir(case_dir)):
        if not name.endswith(".yaml"):
            continue
        group, layout, tokens, gpus = case_facts(os.path.join(case_dir, name))
        row = rows[name[:-5]]
        measured = tokens / (float(row["measured_step_s"]) * gpus)
        predicted = tokens / (float(row["predicted_step_s"]) * gpus)
        groups.setdefault(group, []).append((name[:-5], layout, measured, predicted))
    ordered = pairs = 0
    for group in sorted(groups):
        cases = groups[group]
        compared = []
        for a, b in itertools.combinations(cases, 2):
            if a[1] == b[1] or abs(math.log(a[2] / b[2])) < math.log(1 + MARGIN):
                continue  # the same layout (another release), or too close to call
            right = (a[2] > b[2]) == (a[3] > b[3])
            compared.append((a, b, right))
        if not compared:
            continue
        print(f"{group[0]} on {group[1]} in {group[2]}:")
        for name, layout, measured, predicted in cases:
            print(f"  {name:52s} {layout:70s} measured {measured:7.0f} tok/s/GPU, predicted {predicted:7.0f}")
        for a, b, right in compared:
            faster = a if a[2] > b[2] else b
            slower = b if faster is a else a
            print(f"  {'ordered' if right else 'REVERSED'}: {faster[0]} measured {faster[2] / slower[2]:.2f}x "
                  f"{slower[0]}, predicted {faster[3] / slower[3]:.2f}x")
            ordered += right
            pairs += 1
    share = 100.0 * ordered / pairs if pairs else 0.0
    print(f"\n{ordered} of {pairs} pairs of layouts ordered as measured ({share:.0f}%); "
          f"pairs within {MARGIN:.0%} of each other and releases of one layout left out")


if __name__ == "__main__":
    main()
