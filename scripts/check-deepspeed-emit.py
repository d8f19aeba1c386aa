#!/usr/bin/env python3
"""Runs DeepSpeed's own code on what `fasop-cpp schedule` writes for DeepSpeed.

Usage:
    /usr/bin/python3 scripts/check-deepspeed-emit.py DEEPSPEED_SRC [--bin build/fasop-cpp]
    DEEPSPEED_SRC=/path/to/DeepSpeed /usr/bin/python3 scripts/check-deepspeed-emit.py

DEEPSPEED_SRC (the argument, else the environment variable) is a DeepSpeed source tree: the
directory that holds deepspeed/ in a checkout of github.com/microsoft/DeepSpeed. DeepSpeed is
imported from it, not installed. The Python running this needs torch (CPU only is enough) and
DeepSpeed's pure-Python requirements (numpy, pydantic>=2, packaging, psutil, py-cpuinfo, tqdm,
msgpack; put them on PYTHONPATH if the interpreter lacks them). Two that the checked code does
not use stand in when missing: hjson by json (the config is plain JSON) and einops (DeepSpeed's
flops profiler only). Nothing else of DeepSpeed is replaced but its communication backend (below).

For each plan in PLANS it runs `fasop-cpp search --save-plan` on a shipped model and cluster,
then `schedule --format deepspeed` (ds_config.json) and `--format deepspeed-pipeline`
(pipeline_module.py), and checks them with DeepSpeed's code on its CPU accelerator:

  - For every rank of the plan, PlanPipelineModule is built from small stand-in layers (a tiny
    torch module per unit, LayerSpec or TiedLayerSpec, some units several entries) by DeepSpeed's
    PipelineModule, topology and grid: its `parts` are the plan's stage boundaries, it builds
    exactly its stage's units, its stage, data and model coordinates and groups are the plan's
    (stages take contiguous ranks, the tensor-parallel lane fastest, as fasop-cpp's launcher),
    and its forward runs the stage's units in order; with recomputation the backward recomputes
    each of them, without it none.
  - DeepSpeedConfig parses ds_config.json with that module's grid as mpu, as deepspeed.initialize
    does for a PipelineModule (its batch assertion runs then): train batch, micro-batch,
    gradient accumulation, ZeRO stage (below ZeroStageEnum.gradients, which PipelineEngine
    asserts), precision (fp16 and bf16 enabled, as DeepSpeedConfig holds them before and since
    0.17.1) and the pipeline's checkpoint interval are the plan's.

The ranks are simulated one after another in this process: deepspeed.comm's backend object
(`cdb`) is replaced by one that answers as rank r of the plan's world, makes groups as rank
lists and does nothing for a broadcast. deepspeed.checkpointing.checkpoint needs accelerator
streams, which the CPU accelerator lacks, so the forward and backward swap the module's checkpoint
function for torch.utils.checkpoint, as PipelineEngine itself swaps it for non_reentrant_checkpoint.

Prints one line per plan; exits 1 on any mismatch, 2 when it cannot run (DeepSpeed 0.18.7 and
later do not import with torch older than 2.4).
"""
import argparse
import contextlib
import importlib.util
import io
import logging
import os
import subprocess
import sys
import tempfile
import types

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (name, search arguments, how its layers are given, what the plan must be for the name to hold).
# "tied": the first and last units share a TiedLayerSpec, as GPT-2's tied embeddings; "grouped":
# the first unit is two entries (a layer and a parameter-free function) and the last unit two
# layers, so layer-list indices and unit indices differ.
PLANS = [
    ("uneven: gpt2xl on FASOP's heterogeneous cluster, FASOP's best plan",
     ["--model", "gpt2xl", "--heterogeneous"], "tied",
     lambda p: len(set(p["partition"])) > 1),
    ("tp/pp/dp: llama2-7b on aws-h100, tp 2 pp 4, ZeRO 1",
     ["--model", "llama2-7b", "--cluster", "aws-h100", "--fix", "tp=2,pp=4,mbs=2,recompute=none,zero=1"], "plain",
     lambda p: p["tp"] > 1 and p["pp"] > 1 and p["dp"] > 1 and p["zero_stage"] == 1),
    ("recompute + ZeRO 1: bert on FASOP's BERT cluster, tp 2 pp 2",
     ["--model", "bert", "--cluster", "fasop-bert", "--fix", "tp=2,pp=2,recompute=full,zero=1"], "grouped",
     lambda p: p["recompute"] == "full" and p["zero_stage"] == 1),
]


class Mismatch(Exception):
    """The emitted material and the plan disagree."""


def expect(what, got, want):
    if got != want:
        raise Mismatch(f"{what}: DeepSpeed has {got!r}, the plan says {want!r}")


# --- DeepSpeed from the source tree -----------------------------------------------------------

def cannot_run(message):
    """Stops with exit status 2: the check could not run (no DeepSpeed, or one this Python can't import)."""
    print(f"check-deepspeed-emit: {message}", file=sys.stderr)
    sys.exit(2)


def import_deepspeed(src):
    """deepspeed, imported from `src` on its CPU accelerator, with hjson and einops standing in
    only when the interpreter lacks them."""
    if not os.path.isfile(os.path.join(src, "deepspeed", "__init__.py")):
        cannot_run(f"{src} holds no deepspeed/__init__.py; give a DeepSpeed source tree")
    sys.path.insert(0, src)
    os.environ["DS_ACCELERATOR"] = "cpu"
    os.environ.setdefault("LOCAL_RANK", "0")  # PipelineModule reads it
    for name in ("hjson", "einops"):
        if importlib.util.find_spec(name) is None:
            stand_in = types.ModuleType(name)
            if name == "hjson":
                import json
                stand_in.load = lambda f, **kw: json.load(f, **kw)
                stand_in.loads = lambda s, **kw: json.loads(s, **kw)
            sys.modules[name] = stand_in
    try:
        import deepspeed
    except ImportError as error:
        cannot_run(f"importing DeepSpeed from {src} failed: {error}; install DeepSpeed's requirements "
                   "(requirements/requirements.txt) or put them on PYTHONPATH")
    except AttributeError as error:  # a DeepSpeed newer than this torch (0.18.7 on: torch.amp.custom_fwd)
        cannot_run(f"importing DeepSpeed from {src} failed: {error}; it needs a newer torch")
    from deepspeed.utils import logger
    logger.setLevel(logging.WARNING)  # its per-rank info lines would bury the report
    return deepspeed


class RankGroup:
    """A process group as the simulated backend makes it: its ranks."""

    def __init__(self, ranks):
        self.ranks = list(ranks)


class SimulatedRank:
    """deepspeed.comm's backend as rank `rank` of `world` sees it, with no other process."""

    def __init__(self, rank, world):
        self.rank, self.world = rank, world

    def is_initialized(self):
        return True

    def get_rank(self, group=None):
        if group is None:
            return self.rank
        return group.ranks.index(self.rank) if self.rank in group.ranks else -1

    def get_world_size(self, group=None):
        return self.world if group is None else len(group.ranks)

    def get_global_rank(self, group, group_rank):
        return group.ranks[group_rank]

    def new_group(self, ranks):
        return RankGroup(ranks)

    def broadcast(self, tensor, src, group=None, async_op=False):
        return None  # tied weights start equal here: every rank builds them from the same spec

    def barrier(self, group=None, async_op=False):
        return None


# --- fasop-cpp -------------------------------------------------------------------------------

def run(bin_path, args, cwd):
    done = subprocess.run([bin_path] + args, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise Mismatch(f"fasop-cpp {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout


def emit(bin_path, search_args, work):
    """The saved plan (as a dict), and the paths of its config and pipeline module."""
    import yaml
    plan_path = os.path.join(work, "plan.yaml")
    run(bin_path, ["search"] + search_args + ["--out-dir", os.path.join(work, "logs"), "--quiet",
                                              "--save-plan", plan_path], ROOT)
    config = os.path.join(work, "ds_config.json")
    module = os.path.join(work, "pipeline_module.py")
    run(bin_path, ["schedule", "--plan", plan_path, "--format", "deepspeed", "-o", config], ROOT)
    run(bin_path, ["schedule", "--plan", plan_path, "--format", "deepspeed-pipeline", "-o", module], ROOT)
    with open(plan_path) as f:
        return yaml.safe_load(f), config, module


def load_module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def model_dtype(model):
    """The plan's model's training dtype as DeepSpeed enables it: fp16, bf16 (fp8 trains in bf16
    around its GEMMs) or fp32."""
    import yaml
    with open(os.path.join(ROOT, "configs", "models", model + ".yaml")) as f:
        dtype = yaml.safe_load(f).get("dtype", "fp16")
    return "bf16" if dtype.startswith("fp8") else dtype


# --- stand-in layers --------------------------------------------------------------------------

TRACE = []  # labels of the layers run, in order
GLUE = "glue"  # the label of the parameter-free step: run, never recomputed


def stand_in_layers(unit_count, style):
    """One entry per unit for PlanPipelineModule, and per unit the labels of its layer-list
    entries: what a stage's forward must record, in order. A label ending in " head" is the
    tied output head (a function of the embedding's module): built as "unit 0", never recomputed."""
    import torch
    from deepspeed.pipe import LayerSpec, TiedLayerSpec

    class Unit(torch.nn.Module):
        def __init__(self, label):
            super().__init__()
            self.label = label
            self.weight = torch.nn.Parameter(torch.ones(1))

        def forward(self, x):
            TRACE.append(self.label)
            return x * self.weight

    def glue(x):  # a parameter-free step, as a transpose between embedding and layers
        TRACE.append(GLUE)
        return x

    last = unit_count - 1

    def tied_head(module, x):  # the output head reusing the embedding's weight
        TRACE.append(f"unit {last} head")
        return x * module.weight

    entries = [LayerSpec(Unit, f"unit {u}") for u in range(unit_count)]
    labels = [[f"unit {u}"] for u in range(unit_count)]
    if style == "tied":
        entries[0] = TiedLayerSpec("embed", Unit, "unit 0")
        entries[last] = TiedLayerSpec("embed", Unit, "unit 0", forward_fn=tied_head)
        labels[last] = [f"unit {last} head"]
    if style == "grouped":
        entries[0] = [LayerSpec(Unit, "unit 0"), glue]
        labels[0] = ["unit 0", GLUE]
        entries[last] = (LayerSpec(Unit, f"unit {last}a"), LayerSpec(Unit, f"unit {last}b"))
        labels[last] = [f"unit {last}a", f"unit {last}b"]
    return entries, labels


def is_module_label(label):
    """Whether the entry so labelled is a module with parameters (what DeepSpeed checkpoints)."""
    return label != GLUE and not label.endswith(" head")


# --- the checks -------------------------------------------------------------------------------

def coordinates(rank, tp, dp):
    """(stage, replica, lane) of a rank in fasop-cpp's order (launch_layout.h)."""
    return rank // (tp * dp), (rank // tp) % dp, rank % tp


def check_rank(deepspeed, emitted, rank, plan, unit_labels, style):
    """Builds the module on `rank` and checks its partition, layers, groups and passes."""
    import torch
    import torch.utils.checkpoint
    import deepspeed.comm.comm as ds_comm
    from deepspeed.runtime.activation_checkpointing import checkpointing

    tp, dp, pp = plan["tp"], plan["dp"], plan["pp"]
    ds_comm.cdb = SimulatedRank(rank, tp * pp * dp)
    entries, _ = stand_in_layers(len(emitted.UNITS), style)
    with contextlib.redirect_stdout(io.StringIO()):  # rank 0 prints the topology and every layer
        model = emitted.PlanPipelineModule(entries)
    labels = [label for unit in unit_labels for label in unit]
    stage, replica, lane = coordinates(rank, tp, dp)

    # The partition: the plan's unit boundaries, moved to where each unit's entries start.
    starts = [sum(len(unit) for unit in unit_labels[:u]) for u in range(len(unit_labels) + 1)]
    bounds = [sum(plan["partition"][:s]) for s in range(pp + 1)]
    expect(f"rank {rank} parts", model.parts, [starts[u] for u in bounds])
    expect(f"rank {rank} stage", model.stage_id, stage)
    first, stop = model.parts[stage], model.parts[stage + 1]

    # The layers it built: its stage's units, and no other (a tied module once a stage).
    built = [m.label for m in model.modules() if hasattr(m, "label")]
    want = ["unit 0" if l.endswith(" head") else l for l in labels[first:stop] if l != GLUE]
    expect(f"rank {rank} built layers", sorted(built), sorted(set(want)))

    # Groups: stage-major ranks, the tensor-parallel lane fastest.
    grid = model.mpu()
    base = stage * tp * dp
    expect(f"rank {rank} (stage, replica, lane)",
           (grid.get_stage_id(), grid.get_data_parallel_rank(), grid.get_slice_parallel_rank()), (stage, replica, lane))
    expect(f"rank {rank} sizes", (grid.get_pipe_parallel_world_size(), grid.get_data_parallel_world_size(),
                                  grid.get_slice_parallel_world_size()), (pp, dp, tp))
    expect(f"rank {rank} data-parallel group", grid.dp_group, [base + d * tp + lane for d in range(dp)])
    expect(f"rank {rank} tensor-parallel group", grid.slice_group, [base + replica * tp + t for t in range(tp)])
    expect(f"rank {rank} pipeline group", grid.pp_group, [s * tp * dp + replica * tp + lane for s in range(pp)])
    if style == "tied" and pp > 1 and stage in (0, pp - 1):
        expect(f"rank {rank} tied embedding group", model.tied_comms["embed"]["ranks"],
               [replica * tp + lane, (pp - 1) * tp * dp + replica * tp + lane])

    # Recomputation: DeepSpeed's checkpoint function, every layer its own interval.
    interval = 1 if plan["recompute"] == "full" else 0
    expect(f"rank {rank} activation_checkpoint_interval", model.activation_checkpoint_interval, interval)
    expect(f"rank {rank} checkpoint function", model.activation_checkpoint_func, checkpointing.checkpoint)
    if interval:
        model._precompute_checkpointable_values()  # what PipelineEngine.__init__ calls
        model.activation_checkpoint_func = lambda f, *a: torch.utils.checkpoint.checkpoint(f, *a, use_reentrant=True)
    TRACE.clear()
    x = torch.ones(2, requires_grad=True)
    out = model(x)
    expect(f"rank {rank} forward", TRACE, labels[first:stop])
    TRACE.clear()
    out.sum().backward()
    recomputed = [l for l in reversed(labels[first:stop]) if is_module_label(l)] if interval else []
    expect(f"rank {rank} layers recomputed in the backward", TRACE, recomputed)
    return model


def precision_enabled(config):
    """(fp16, bf16) enabled as DeepSpeedConfig holds them: float16_config.enabled and
    bfloat16_config.enabled since DeepSpeed 0.17.1 (which removed fp16_enabled and
    bfloat16_enabled), the two flags before."""
    if hasattr(config, "float16_config"):
        return config.float16_config.enabled, config.bfloat16_config.enabled
    return config.fp16_enabled, config.bfloat16_enabled


def check_config(deepspeed, config_path, grid, plan, dtype):
    """ds_config.json as DeepSpeedConfig reads it for a PipelineModule (mpu = its grid)."""
    from deepspeed.runtime.config import DeepSpeedConfig
    from deepspeed.runtime.zero.config import ZeroStageEnum

    config = DeepSpeedConfig(config_path, mpu=grid)  # asserts batch = micro x steps x dp
    mbs, dp, batch = plan["micro_batch"], plan["dp"], plan["global_batch"]
    expect("train_batch_size", config.train_batch_size, batch)
    expect("train_micro_batch_size_per_gpu", config.train_micro_batch_size_per_gpu, mbs)
    expect("gradient_accumulation_steps", config.gradient_accumulation_steps, batch // (mbs * dp))
    expect("data-parallel world size", config.world_size, dp)
    expect("zero_optimization_stage", config.zero_optimization_stage, plan["zero_stage"])
    expect("ZeRO stage below gradients (PipelineEngine's assertion)",
           config.zero_optimization_stage < ZeroStageEnum.gradients, True)
    expect("fp16 and bf16 enabled", precision_enabled(config), (dtype == "fp16", dtype == "bf16"))
    interval = 1 if plan["recompute"] == "full" else 0
    expect("pipeline activation_checkpoint_interval", config.pipeline["activation_checkpoint_interval"], interval)
    if interval:
        ac = config.activation_checkpointing_config
        expect("partition_activations and cpu_checkpointing", (ac.partition_activations, ac.cpu_checkpointing),
               (False, False))
    return config


def check_plan(deepspeed, bin_path, index, name, search_args, style, kind):
    from deepspeed.runtime import utils as ds_utils

    with tempfile.TemporaryDirectory() as work:
        plan, config_path, module_path = emit(bin_path, search_args, work)
        if not kind(plan):
            raise Mismatch(f"the search gave another kind of plan: tp {plan['tp']} pp {plan['pp']} dp {plan['dp']}, "
                           f"partition {plan['partition']}, ZeRO {plan['zero_stage']}, recompute {plan['recompute']}")
        emitted = load_module(module_path, f"pipeline_module_{index}")
        tp, dp, pp, partition = plan["tp"], plan["dp"], plan["pp"], plan["partition"]
        expect("TP, PP, DP", (emitted.TP, emitted.PP, emitted.DP), (tp, pp, dp))
        expect("units", len(emitted.UNITS), sum(partition))
        _, unit_labels = stand_in_layers(len(emitted.UNITS), style)
        grid = None
        for rank in range(tp * pp * dp):
            model = check_rank(deepspeed, emitted, rank, plan, unit_labels, style)
            grid = grid or model.mpu()
            if rank == 0:
                parts = model.parts
        dtype = model_dtype(plan["model"])
        check_config(deepspeed, config_path, grid, plan, dtype)
        uniform = ds_utils.partition_uniform(num_items=parts[-1], num_parts=pp)
    mbs, batch, interval = plan["micro_batch"], plan["global_batch"], 1 if plan["recompute"] == "full" else 0
    return (f"{name}: tp {tp} pp {pp} dp {dp}, partition {partition}, ZeRO {plan['zero_stage']}, recompute "
            f"{plan['recompute']}; PipelineModule on all {tp * pp * dp} ranks: parts {parts}"
            f"{' (uniform would be ' + str(uniform) + ')' if uniform != parts else ''}, each stage's layers, "
            f"dp/tp/pp groups, forward{' and recompute' if interval else ''} as planned; DeepSpeedConfig: batch "
            f"{batch} = micro {mbs} x accumulation {batch // (mbs * dp)} x dp {dp}, ZeRO {plan['zero_stage']}, "
            f"{dtype}, checkpoint interval {interval}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("deepspeed_src", nargs="?", default=os.environ.get("DEEPSPEED_SRC"),
                        help="DeepSpeed source tree (default: $DEEPSPEED_SRC)")
    parser.add_argument("--bin", default=os.path.join(ROOT, "build", "fasop-cpp"), help="the fasop-cpp binary")
    args = parser.parse_args()
    if not args.deepspeed_src:
        parser.error("give the DeepSpeed source tree as an argument or in DEEPSPEED_SRC")
    if not os.access(args.bin, os.X_OK):
        parser.error(f"{args.bin} is not an executable fasop-cpp; build it or pass --bin")
    deepspeed = import_deepspeed(os.path.abspath(args.deepspeed_src))
    with open(os.path.join(args.deepspeed_src, "version.txt")) as f:
        print(f"DeepSpeed {f.read().strip()} from {args.deepspeed_src}")
    failed = 0
    for index, (name, search_args, style, kind) in enumerate(PLANS):
        try:
            print("ok   " + check_plan(deepspeed, os.path.abspath(args.bin), index, name, search_args, style, kind))
        except Mismatch as error:
            failed += 1
            print(f"FAIL {name}: {error}")
        except Exception as error:  # DeepSpeed refusing the material (an assertion, a RuntimeError)
            failed += 1
            print(f"FAIL {name}: {type(error).__name__}: {error}")
    print(f"{len(PLANS) - failed} of {len(PLANS)} plans as DeepSpeed builds them")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
