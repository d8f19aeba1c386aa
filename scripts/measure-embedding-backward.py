#!/usr/bin/env python3
"""Times PyTorch's embedding backward on a GPU across vocabulary shards, token counts and widths,
to fit the analytic model's embedding backward (src/profiles/analytic_profile.cc) to what the
kernels do rather than to one model's profile.

Runs where a CUDA PyTorch is (the lent GPU machine; not part of the build or the tests). For each
dtype, hidden width h, table rows V (a vocabulary shard) and token count T it times, with CUDA
events, the median of --repeats runs after --warmup:
  autograd_fresh       out.backward(grad) of embedding(table, ids) with table.grad unset (the
                       first micro-batch of a step);
  autograd_accumulate  the same with table.grad already there (later micro-batches, and what
                       `fasop-cpp profile layers` times: it keeps gradients between rounds);
  dense_backward       aten.embedding_dense_backward alone (sort, segment sums, rows written);
  zeros                a V x h zero fill in the dtype;
  accumulate           table.grad += a V x h gradient.
ids are uniform over the V rows, as the profiler draws them.

Usage: measure-embedding-backward.py OUT.csv [--dtype fp16,bf16] [--warmup 3] [--repeats 15]
"""
import argparse
import datetime
import socket
import statistics

import torch

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}


def timed(fn, warmup, repeats, before=None):
    samples = []
    for r in range(warmup + repeats):
        if before:
            before()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        if r >= warmup:
            samples.append(start.elapsed_time(end) / 1e3)
    return statistics.median(samples)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--dtype", default="fp16,bf16")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=15)
    a = ap.parse_args()
    dev = torch.device("cuda")
    rows_list = [1024, 6288, 12576, 16032, 25152, 50304, 100608, 128256]
    tokens_list = [1024, 2048, 4096, 8192, 16384, 32768]
    widths = [1600, 4096]
    lines = [
        "# Measured by scripts/measure-embedding-backward.py on %s (%s), %s UTC, PyTorch %s; median of %d repeats "
        "after %d warm-up runs, CUDA events" % (socket.gethostname(), torch.cuda.get_device_name(0),
                                               datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"),
                                               torch.__version__, a.repeats, a.warmup),
        "dtype,hidden,rows,tokens,what,seconds",
    ]
    for name in a.dtype.split(","):
        dt = DTYPES[name]
        for h in widths:
            for rows in rows_list:
                table = torch.randn(rows, h, device=dev, dtype=dt, requires_grad=True)
                zero_s = timed(lambda: torch.zeros(rows, h, device=dev, dtype=dt), a.warmup, a.repeats)
                lines.append("%s,%d,%d,%d,zeros,%.4e" % (name, h, rows, 0, zero_s))
                g_full = torch.randn(rows, h, device=dev, dtype=dt)
                table.grad = torch.zeros_like(table)
                acc_s = timed(lambda: table.grad.add_(g_full), a.warmup, a.repeats)
                lines.append("%s,%d,%d,%d,accumulate,%.4e" % (name, h, rows, 0, acc_s))
                del g_full
                for tokens in tokens_list:
                    ids = torch.randint(0, rows, (tokens,), device=dev)
                    grad = torch.randn(tokens, h, device=dev, dtype=dt)
                    state = {}

                    def forward():
                        state["out"] = torch.nn.functional.embedding(ids, table)

                    def clear_and_forward():
                        table.grad = None
                        forward()

                    def backward():
                        state["out"].backward(grad)

                    fresh = timed(backward, a.warmup, a.repeats, clear_and_forward)
                    table.grad = torch.zeros_like(table)
                    accum = timed(backward, a.warmup, a.repeats, forward)
                    dense = timed(lambda: torch.ops.aten.embedding_dense_backward(grad, ids, rows, -1, False),
                                  a.warmup, a.repeats)
                    for what, sec in (("autograd_fresh", fresh), ("autograd_accumulate", accum),
                                      ("dense_backward", dense)):
                        lines.append("%s,%d,%d,%d,%s,%.4e" % (name, h, rows, tokens, what, sec))
                del table
                torch.cuda.empty_cache()
    with open(a.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote", a.out, len(lines) - 2, "rows")


if __name__ == "__main__":
    main()
