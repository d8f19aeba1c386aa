#!/usr/bin/env python3
"""Compare fasop-cpp's search tables with FASOP's, layout by layout.

Usage: scripts/compare-with-fasop.py OURS_DIR FASOP_DIR
Both hold FASOP-format CSVs (bert.csv, gpt2_heterogeneous.csv, gpt2_heterogeneous_pareto.csv,
...); tables present in both are compared. For each: how many layouts our search makes faster,
equal or slower than FASOP, the largest gain, and the best plan of each; for pareto tables also
each side's cost-versus-time front and whether a point of ours dominates or matches every point
of FASOP's. Exits 1 if any layout is slower or missing, or a FASOP front point is not beaten.
"""
import csv
import os
import sys


def table(path):
    rows = {}
    for r in csv.DictReader(open(path)):
        key = (int(r["mbs"]), int(r["tp"]), int(r["dp"]), int(float(r["pp"])), r["node placement"])
        rows[key] = float(r["estimated time (s/step)"])
    return rows


def front(path):
    """(cost, time) of the plans no other plan beats on both, cheapest first."""
    points = sorted((float(r["train_cost"]), float(r["estimated time (s/step)"])) for r in csv.DictReader(open(path)))
    out, fastest = [], float("inf")
    for cost, time in points:
        if time < fastest:
            out.append((cost, time))
            fastest = time
    return out


def compare_fronts(ours_path, fasop_path):
    ours, theirs = front(ours_path), front(fasop_path)
    unbeaten = [p for p in theirs if not any(c <= p[0] * (1 + 1e-9) and t <= p[1] for c, t in ours)]
    print(f"{'':20s} front: ours {len(ours)} plans, FASOP {len(theirs)}; FASOP points not dominated or matched: "
          f"{len(unbeaten)}")
    for cost, time in theirs:
        best = min((t for c, t in ours if c <= cost * (1 + 1e-9)), default=float("nan"))
        print(f"{'':22s}FASOP ${cost:10.0f} {time:.4f} s/step -> ours at no more cost: {best:.4f} s/step")
    return len(unbeaten)


def main():
    ours_dir, fasop_dir = sys.argv[1:3]
    bad = 0
    names = ["bert", "bert_heterogeneous", "gpt2", "gpt2_heterogeneous", "T5", "T5_heterogeneous"]
    for name in names + [n + "_pareto" for n in names]:
        ours_path, fasop_path = (os.path.join(d, name + ".csv") for d in (ours_dir, fasop_dir))
        if not (os.path.exists(ours_path) and os.path.exists(fasop_path)):
            continue
        ours, fasop = table(ours_path), table(fasop_path)
        faster = equal = slower = 0
        gain = 0.0
        for key, theirs in fasop.items():
            if key not in ours:
                slower += 1
                continue
            mine = ours[key]
            if mine < theirs:
                faster += 1
                gain = max(gain, (theirs - mine) / theirs)
            elif mine == theirs:
                equal += 1
            else:
                slower += 1
        bad += slower + (len(ours) != len(fasop))
        print(f"{name:20s} layouts {len(fasop):4d}  faster {faster:4d}  equal {equal:4d}  slower {slower}  "
              f"max gain {gain * 100:5.1f}%  best: ours {min(ours.values()):.4f} s, FASOP {min(fasop.values()):.4f} s")
        if name.endswith("_pareto"):
            bad += compare_fronts(ours_path, fasop_path)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
