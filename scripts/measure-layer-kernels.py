#!/usr/bin/env python3
"""Breaks a transformer layer's forward and backward pass into CUDA kernels, to trace an error of
the analytic layer model to its term. The layer is built as `fasop-cpp profile layers` builds it
(src/profiler/layer_profiler.cc: norms, fused QKV, scaled-dot-product attention, output
projection, GeLU or SwiGLU MLP, one GPU's tp shard), in PyTorch eager, which runs the same ATen
kernels as LibTorch. Diagnostic only: runs where a CUDA PyTorch is, not part of the build.

For each case it prints the wall time of each pass (CUDA-synchronised, median of 10) and the
kernels' summed device time by kernel, from torch.profiler.

Usage: measure-layer-kernels.py [CASE ...]   CASE: model:tp:mbs:dtype:causal, e.g. gpt2xl:1:8:fp16:1
"""
import statistics
import sys
import time

import torch
import torch.nn.functional as F

MODELS = {  # hidden, heads, kv heads, ffn, sequence, swiglu/rmsnorm
    "gpt2xl": (1600, 25, 25, 6400, 1024, False),
    "llama3-8b": (4096, 32, 8, 14336, 8192, True),
}
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


def build(model, tp, dtype, causal):
    h, heads, kv, f, s, llama = MODELS[model]
    hd, lh, lkv, lf = h // heads, heads // tp, max(1, kv // tp), f // tp
    dev = torch.device("cuda")

    def w(*shape):
        return (torch.randn(*shape, device=dev, dtype=dtype) / shape[0] ** 0.5).requires_grad_()

    n1, n2 = torch.ones(h, device=dev, dtype=dtype, requires_grad=True), torch.ones(h, device=dev, dtype=dtype,
                                                                                        requires_grad=True)
    b1, b2 = torch.zeros(h, device=dev, dtype=dtype, requires_grad=True), torch.zeros(h, device=dev, dtype=dtype,
                                                                                          requires_grad=True)
    qkv, out = w(h, (lh + 2 * lkv) * hd), w(lh * hd, h)
    up, down = w(h, lf), w(lf, h)
    gate = w(h, lf) if llama else None

    def norm(x, scale, bias):
        if llama:
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * scale
        return F.layer_norm(x, (h,), scale, bias)

    def layer(x):
        b = x.shape[0]
        a = norm(x, n1, b1).matmul(qkv)
        q = a.narrow(-1, 0, lh * hd).view(b, s, lh, hd).transpose(1, 2)
        k = a.narrow(-1, lh * hd, lkv * hd).view(b, s, lkv, hd).transpose(1, 2)
        v = a.narrow(-1, (lh + lkv) * hd, lkv * hd).view(b, s, lkv, hd).transpose(1, 2)
        if lkv < lh:
            k, v = k.repeat_interleave(lh // lkv, 1), v.repeat_interleave(lh // lkv, 1)
        c = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        y = x + c.transpose(1, 2).reshape(b, s, lh * hd).matmul(out)
        z = norm(y, n2, b2)
        inner = F.silu(z.matmul(gate)) * z.matmul(up) if llama else F.gelu(z.matmul(up))
        return y + inner.matmul(down)

    return layer, s, h


def run(case):
    model, tp, mbs, dt, causal = case.split(":")
    tp, mbs, causal = int(tp), int(mbs), causal == "1"
    dtype = DTYPES[dt]
    layer, s, h = build(model, tp, dtype, causal)
    x = torch.randn(mbs, s, h, device="cuda", dtype=dtype, requires_grad=True)
    fw, bw = [], []
    for r in range(13):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        y = layer(x)
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        g = torch.randn_like(y)
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        y.backward(g)
        torch.cuda.synchronize()
        t3 = time.perf_counter()
        if r >= 3:
            fw.append(t1 - t0)
            bw.append(t3 - t2)
    print("== %s: forward %.4f ms, backward %.4f ms (wall, median of 10)" % (
        case, 1e3 * statistics.median(fw), 1e3 * statistics.median(bw)))
    for name, body in (("forward", lambda: layer(x)), ("backward", None)):
        y = layer(x)
        g = torch.randn_like(y)
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA,
                                                torch.profiler.ProfilerActivity.CPU]) as prof:
            for _ in range(5):
                if name == "forward":
                    body()
                else:
                    y.backward(g, retain_graph=True)
            torch.cuda.synchronize()
        events = [e for e in prof.key_averages() if e.device_type == torch.autograd.DeviceType.CUDA]
        total = sum(e.self_device_time_total for e in events) / 5
        print("-- %s: kernels' device time %.4f ms per pass" % (name, total / 1e3))
        for e in sorted(events, key=lambda e: -e.self_device_time_total)[:14]:
            print("   %8.4f ms  x%-3d %s" % (e.self_device_time_total / 5e3, e.count // 5, e.key[:110]))


if __name__ == "__main__":
    for c in sys.argv[1:] or ["gpt2xl:1:1:fp16:1", "gpt2xl:1:8:fp16:1", "gpt2xl:1:8:fp16:0", "llama3-8b:8:1:bf16:1",
                              "llama3-8b:1:1:bf16:1", "llama3-8b:1:1:bf16:0"]:
        run(c)
