#!/usr/bin/python3
"""A tiny GPT trainer for fasop-cpp's launch tests: real pipeline- and data-parallel training on CPU.

fasop-cpp ships no trainer; this one exists so a test can start a saved plan with
`fasop-cpp launch --trainer-cmd 'torchrun ... tests/tiny_gpt_train.py'` and get real training logs
back. It reads FASOP_PLAN (the plan's `partition:` and `stages:`) and FASOP_TP/MBS/GLOBAL_BATCH,
builds only its own stage's units (embedding, transformer layers, post_process = final norm + head +
loss) and trains on deterministic synthetic tokens with the gloo backend. What it cannot run it
refuses with one line on stderr and exit code 2 (torchrun then exits 1).

It prints Megatron-LM's log lines, so that `fasop-cpp launch report` reads this trainer and
Megatron-LM alike: on the last rank, one line per log interval
  ' [2026-11-23 18:00:00.123456] iteration        3/      10 | consumed samples:           24 |
   elapsed time per iteration (ms): 123.4 | learning rate: 1.000000E-03 | global batch size:     8 |
   lm loss: 6.912345E+00 | loss scale: 1.0 | number of skipped iterations:   0 |
   number of nan iterations:   0 |'   (one line)
and, after the first iteration, Megatron's memory line on data-parallel rank 0 of each stage.

Limits: tp 1 only, the same dp in every stage, an untied head, a GPipe schedule (all forwards, then
all backwards), fp32, no dropout. Runs with Debian 12's python3-torch 1.13 and python3-yaml; that
torchrun needs `--redirects 2 --tee 2` on Python 3.11 (its default "0" parses to None there and it
crashes), which leaves stdout alone and prefixes the ranks' stderr lines with [default<local rank>]:.
"""
import argparse, math, os, resource, sys, time
from datetime import datetime

import torch, torch.nn as nn, torch.nn.functional as F, torch.distributed as dist
import yaml


def refuse(why):
    if int(os.environ.get("LOCAL_RANK", "0")) == 0:  # one line per node, not one per rank
        print(f"tiny_gpt_train.py: {why}", file=sys.stderr, flush=True)
    sys.exit(2)


class Embedding(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.tok, self.pos = nn.Embedding(a.vocab, a.hidden), nn.Embedding(a.seq, a.hidden)

    def forward(self, ids):
        return self.tok(ids) + self.pos(torch.arange(ids.shape[1]))


class Block(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.heads, h = a.heads, a.hidden
        self.ln1, self.ln2 = nn.LayerNorm(h), nn.LayerNorm(h)
        self.qkv, self.proj = nn.Linear(h, 3 * h), nn.Linear(h, h)
        self.fc1, self.fc2 = nn.Linear(h, 4 * h), nn.Linear(4 * h, h)

    def forward(self, x):
        b, t, h = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, h // self.heads).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(h // self.heads)
        att = att.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf")).softmax(-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, h))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class PostProcess(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.ln, self.head = nn.LayerNorm(a.hidden), nn.Linear(a.hidden, a.vocab, bias=False)

    def forward(self, x):
        return self.head(self.ln(x))


def sample_tokens(a, first_sample, count):
    # One generator per sample, keyed by its index in the whole run, so that every layout (dp, mbs,
    # pp) trains on the same global batches and their losses can be compared. Tokens come from only
    # 16 ids of the vocabulary, so that the loss visibly falls within a few steps at lr 1e-3.
    rows = [torch.randint(min(a.vocab, 16), (a.seq + 1,), generator=torch.Generator().manual_seed(
        a.seed * 1_000_003 + first_sample + i)) for i in range(count)]
    return torch.stack(rows)



def emit(line):
    """One line of the log in one write: the node's ranks share its log, and print() writes its
    text and newline apart when Python runs unbuffered (PYTHONUNBUFFERED), so two ranks' lines
    could run into one."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()

def main():
    p = argparse.ArgumentParser(description="tiny GPT trainer for fasop-cpp's launch tests")
    for name, default in [("hidden", 64), ("heads", 4), ("seq", 32), ("vocab", 1024),  # tiny.yaml's
                          ("iters", 10), ("lr", 1e-3), ("seed", 1234), ("log-interval", 1)]:
        p.add_argument("--" + name, type=type(default), default=default)
    a = p.parse_args()
    torch.set_num_threads(1)  # CI runs 4 ranks on 2 cores: more threads only fight each other

    if "FASOP_PLAN" not in os.environ or "RANK" not in os.environ:
        refuse("FASOP_PLAN or RANK is not set: start me with torchrun under `fasop-cpp launch`")
    with open(os.environ["FASOP_PLAN"]) as f:
        plan = yaml.safe_load(f)
    env = lambda key, fallback: int(os.environ.get("FASOP_" + key, fallback))
    tp, mbs = env("TP", plan["tp"]), env("MBS", plan["micro_batch"])
    gbs = env("GLOBAL_BATCH", plan["global_batch"])
    partition, stage_dps = plan["partition"], [s["dp"] for s in plan["stages"]]
    world, rank = int(os.environ["WORLD_SIZE"]), int(os.environ["RANK"])
    if tp != 1:
        refuse(f"tensor parallelism is not supported (tp {tp}); plan with --fix tp=1")
    if len(set(stage_dps)) != 1 or len(stage_dps) != len(partition):
        refuse(f"every stage needs the same dp, one stage per partition entry "
               f"(stages' dp {stage_dps}, partition {partition})")
    dp, pp = stage_dps[0], len(partition)
    if world != pp * dp * tp:
        refuse(f"world size {world} is not the plan's {pp} stages x dp {dp} x tp {tp}")
    if gbs % (mbs * dp):
        refuse(f"global batch {gbs} is not divisible by mbs {mbs} x dp {dp}")
    if a.hidden % a.heads or sum(partition) < 3:
        refuse(f"hidden {a.hidden} must divide by heads {a.heads}; partition {partition} needs 3+ units")

    dist.init_process_group("gloo")
    stage, d = rank // dp, rank % dp  # contiguous ranks per stage, tp 1
    first, last = stage == 0, stage == pp - 1
    # new_group is collective: every rank creates every stage's group, in the same order.
    groups = [dist.new_group(list(range(s * dp, (s + 1) * dp))) for s in range(pp)]
    dp_group, micro = groups[stage], gbs // (mbs * dp)

    units, u0 = [], sum(partition[:stage])
    for u in range(u0, u0 + partition[stage]):
        torch.manual_seed(a.seed + u)  # per unit, so dp replicas and every pp split start from one model
        kind = Embedding if u == 0 else PostProcess if u == sum(partition) - 1 else Block
        units.append(kind(a))
    model = nn.Sequential(*units)
    params = list(model.parameters())
    opt = torch.optim.AdamW(params, lr=a.lr)
    prev_rank, next_rank = rank - dp, rank + dp
    shape = (mbs, a.seq, a.hidden)

    dist.barrier()
    t0, since, nans = time.perf_counter(), 0, 0
    for it in range(1, a.iters + 1):
        opt.zero_grad()
        saved, loss_sum = [], 0.0
        for m in range(micro):  # GPipe: every micro-batch's forward ...
            tokens = sample_tokens(a, (it - 1) * gbs + (d * micro + m) * mbs, mbs)
            if first:
                x = tokens[:, :-1]
            else:
                x = torch.empty(shape)
                dist.recv(x, prev_rank)
                x.requires_grad_()
            y = model(x)
            if last:
                y = F.cross_entropy(y.reshape(-1, a.vocab), tokens[:, 1:].reshape(-1)) / micro
                loss_sum += y.item()
            else:
                dist.send(y.detach(), next_rank)
            saved.append((x, y))
        for x, y in reversed(saved):  # ... then every backward, last micro-batch first
            if last:
                y.backward()
            else:
                grad = torch.empty(shape)
                dist.recv(grad, next_rank)
                y.backward(grad)
            if not first:
                dist.send(x.grad, prev_rank)
        if dp > 1:  # one flat all-reduce: fewer gloo round trips than one per tensor
            flat = torch.cat([q.grad.reshape(-1) for q in params])
            dist.all_reduce(flat, group=dp_group)
            flat /= dp
            for q, g in zip(params, flat.split([q.numel() for q in params])):
                q.grad.copy_(g.view_as(q))
        opt.step()
        if last:
            loss = torch.tensor([loss_sum])
            dist.all_reduce(loss, group=dp_group)
            loss_sum = loss.item() / dp
            nans += math.isnan(loss_sum)
        dist.barrier()  # so the time below is the whole pipeline's step, not this rank's part
        since += 1
        if it % a.log_interval == 0:
            now = time.perf_counter()
            ms, t0, since, interval_nans, nans = (now - t0) * 1000.0 / since, now, 0, nans, 0
            if rank == world - 1:
                emit(f" [{datetime.now().strftime('%Y-%m-%d %H:%M:%S.%f')}]"
                      + " iteration {:8d}/{:8d} |".format(it, a.iters)
                      + " consumed samples: {:12d} |".format(it * gbs)
                      + " elapsed time per iteration (ms): {:.1f} |".format(ms)
                      + " learning rate: {:.6E} |".format(a.lr)
                      + " global batch size: {:5d} |".format(gbs)
                      + " lm loss: {:.6E} |".format(loss_sum)
                      + " loss scale: {:.1f} |".format(1.0)
                      + " number of skipped iterations: {:3d} |".format(0)
                      + " number of nan iterations: {:3d} |".format(interval_nans))
        if it == 1 and d == 0:
            # Megatron reports the CUDA allocator; on CPU there is none, so this is the process's
            # resident memory: current RSS for "allocated"/"reserved", peak RSS for the "max" ones.
            now_mb = int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
            # The kernel updates the peak lazily, so it can lag the current RSS by a little.
            max_mb = max(now_mb, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)  # KiB
            emit(f"[Rank {rank}] (after 1 iterations) memory (MB) | allocated: {now_mb:.2f} | "
                 f"max allocated: {max_mb:.2f} | reserved: {now_mb:.2f} | max reserved: {max_mb:.2f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
