#!/usr/bin/env python3
"""Runs fasop-cpp's Slapo schedules with real Slapo and Hugging Face transformers.

For each family (GPT-2, LLaMA) the script writes a tiny model of that family (4 layers, hidden
64, 4 heads) and a one-node cluster of 2 GPUs, saves the plan tp 2 of it (`fasop-cpp search
--fix tp=2 --save-plan`), writes its schedule (`fasop-cpp schedule --format slapo`), and runs
it on 2 CPU processes over Gloo: each builds the same Hugging Face model from one seed, applies
the schedule (Slapo's shard / sync / fork_rng, then slapo.build) and runs a forward pass in
eval mode; the logits of the sharded model must equal the unsharded model's (to 1e-5), and
each rank must hold half of every sharded weight.

Usage (needs torch, transformers and slapo; none is a dependency of fasop-cpp):
    python3 scripts/check-slapo-emit.py [--fasop-cpp build/fasop-cpp] [--slapo-src DIR]
--slapo-src puts a Slapo source tree (git clone https://github.com/awslabs/slapo) first on
sys.path instead of an installed slapo. Exit status: 0 all equal, 1 a mismatch, 3 a package is
missing (it says which; nothing was checked).

The suite's own check of the same scripts (tests/slapo_schedule_check.py) runs everywhere,
against a recording stand-in for slapo; this one is for a machine that has the real packages.
"""
import argparse
import importlib
import importlib.util
import os
import subprocess
import sys
import tempfile

WORLD = 2
FAMILIES = {
    # family: (Hugging Face config and model class names, the weight each rank holds half of)
    "gpt2": ("GPT2Config", "GPT2LMHeadModel", "transformer.h.0.mlp.c_fc.weight"),
    "llama": ("LlamaConfig", "LlamaForCausalLM", "model.layers.0.mlp.gate_proj.weight"),
}


def hf_model(family):
    import torch
    import transformers

    config_class, model_class, _ = FAMILIES[family]
    if family == "gpt2":
        config = transformers.GPT2Config(n_layer=4, n_embd=64, n_head=4, vocab_size=1024, n_positions=32)
    else:
        config = transformers.LlamaConfig(num_hidden_layers=4, hidden_size=64, num_attention_heads=4,
                                          num_key_value_heads=4, intermediate_size=128, vocab_size=1024,
                                          max_position_embeddings=32)
    torch.manual_seed(0)
    return getattr(transformers, model_class)(config).eval()


def write_specs(work, family):
    """A tiny model of `family` and a one-node cluster of WORLD GPUs, as fasop-cpp reads them."""
    model = os.path.join(work, f"tiny-{family}.yaml")
    with open(model, "w") as f:
        f.write(f"name: tiny-{family}\nfamily: {family}\nhidden: 64\nheads: 4\nsequence: 32\nvocab: 1024\n"
                "global_batch: 8\n" + ("ffn_hidden: 128\n" if family == "llama" else "") +
                "layers:\n  - {type: embedding, role: embedding}\n"
                "  - {type: transformer, role: transformer, repeat: 4}\n"
                "  - {type: post_process, role: post_process}\n")
    cluster = os.path.join(work, "two-gpus.yaml")
    with open(cluster, "w") as f:
        f.write("name: two-gpus\nnode_types:\n"
                "  - {name: box, gpu: A100, gpus_per_node: 2, gpu_memory_gib: 40, peak_tflops: {fp16: 312},\n"
                "     memory_bandwidth_bytes_per_s: 1.5e12, intra_node_bandwidth_bits_per_s: 2.4e12,\n"
                "     inter_node_bandwidth_bits_per_s: 1e11, price_usd_per_hour: 1}\n"
                "nodes: [{type: box, count: 1}]\n")
    return model, cluster


def emit_schedule(fasop_cpp, work, family):
    model, cluster = write_specs(work, family)
    plan = os.path.join(work, f"{family}.yaml")
    schedule = os.path.join(work, f"schedule_{family}.py")
    subprocess.run([fasop_cpp, "search", "--model", model, "--cluster", cluster, "--policy", "analytic",
                    "--fix", "tp=2,pp=1", "--save-plan", plan, "--out-dir", os.path.join(work, "logs"),
                    "--quiet"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([fasop_cpp, "schedule", "--plan", plan, "--format", "slapo", "-o", schedule], check=True,
                   stdout=subprocess.DEVNULL)
    return schedule


def run_rank(rank, family, schedule, port, results):
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD)
    try:
        ids = torch.randint(0, 1024, (2, 16), generator=torch.Generator().manual_seed(1))
        reference = hf_model(family)(ids).logits
        sys.path.insert(0, os.path.dirname(schedule))
        module = importlib.import_module(os.path.splitext(os.path.basename(schedule))[0])
        built = module.build_schedule(hf_model(family))
        sharded = built[0] if isinstance(built, tuple) else built
        with torch.no_grad():
            out = sharded(ids)
        logits = out.logits if hasattr(out, "logits") else out[0]
        _, _, weight = FAMILIES[family]
        full = dict(hf_model(family).named_parameters())[weight].numel()
        held = dict(sharded.named_parameters())[weight].numel()
        results[rank] = (float((logits - reference).abs().max()), held, full)
    finally:
        dist.destroy_process_group()


def check(fasop_cpp, work, family):
    import torch.multiprocessing as mp

    schedule = emit_schedule(fasop_cpp, work, family)
    manager = mp.Manager()
    results = manager.dict()
    port = 29500 + os.getpid() % 1000
    mp.spawn(run_rank, args=(family, schedule, port, results), nprocs=WORLD, join=True)
    failures = []
    for rank in range(WORLD):
        diff, held, full = results[rank]
        if diff > 1e-5:
            failures.append(f"rank {rank}: logits differ from the unsharded model's by {diff:g}")
        if held * WORLD != full:
            failures.append(f"rank {rank}: holds {held} of {full} elements of {FAMILIES[family][2]}, not 1/{WORLD}")
    diffs = ", ".join(f"{results[r][0]:.2g}" for r in range(WORLD))
    print(f"{family}: tp 2 over {WORLD} Gloo ranks: " + ("; ".join(failures) if failures else
          f"logits equal the unsharded model's (largest difference per rank {diffs}); "
          f"each rank holds 1/{WORLD} of {FAMILIES[family][2]}"))
    return not failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fasop-cpp", default=os.path.join(os.path.dirname(__file__), "..", "build", "fasop-cpp"))
    parser.add_argument("--slapo-src", help="a Slapo source tree, used instead of an installed slapo")
    args = parser.parse_args()
    if args.slapo_src:
        sys.path.insert(0, os.path.abspath(args.slapo_src))
        os.environ["PYTHONPATH"] = os.path.abspath(args.slapo_src) + os.pathsep + os.environ.get("PYTHONPATH", "")
    missing = [name for name in ("torch", "transformers", "slapo") if importlib.util.find_spec(name) is None]
    if missing:
        print("check-slapo-emit: cannot run: missing Python package(s): " + ", ".join(missing) +
              " (pip install transformers; slapo from https://github.com/awslabs/slapo, or --slapo-src DIR)",
              file=sys.stderr)
        return 3
    ok = True
    with tempfile.TemporaryDirectory() as work:
        for family in FAMILIES:
            ok = check(os.path.abspath(args.fasop_cpp), work, family) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
