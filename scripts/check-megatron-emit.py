#!/usr/bin/python3
"""Runs Megatron-LM's own code on the arguments `fasop-cpp schedule --format megatron` writes.

Usage (with Debian's /usr/bin/python3 and its torch; CPU only):
    /usr/bin/python3 scripts/check-megatron-emit.py [--fasop-cpp build/fasop-cpp]
        [--upstream DIR] [--fork DIR] [--work DIR]
    --upstream DIR  an NVIDIA/Megatron-LM checkout (env MEGATRON_UPSTREAM)
    --fork DIR      FASOP's fork: the Megatron-LM-2/ folder of AvatarHwang/FASOP (env MEGATRON_FASOP)
    --work DIR      where plans and emitted arguments are kept (default: a temporary directory)
At least one tree is needed; a flavour without its tree is reported as skipped.

For every plan below the script runs `fasop-cpp search ... --save-plan`, then `fasop-cpp
schedule --format megatron [--megatron-flavor fasop]`, and hands the emitted arguments to that
Megatron's own parse_args and validate_args (sys.argv as a launch would give it, WORLD_SIZE =
tp x pp x dp, RANK 0). Then, for every pipeline rank, it asks that Megatron which layers the
rank builds, with the rank's parallel state set as initialize_model_parallel would set it:
  upstream  core_transformer_config_from_args (which parses --pipeline-model-parallel-layout),
            get_num_layers_to_build and get_transformer_layer_offset (what GPTModel's and
            BertModel's TransformerBlock call), is_pipeline_first/last_stage and the layout's own
            stages (embedding and loss); with virtual stages, for every vp_stage of the rank, with
            get_model's is_vp_first/last_stage;
  fork      training.get_model with the fork's own model_provider (_00_pretrain_gpt.py,
            pretrain_bert.py or pretrain_t5.py): its choice of pre_process, post_process,
            add_encoder, add_decoder for the rank (and virtual rank: get_model builds one model
            a chunk), then GPTModel/BertModel/T5Model and ParallelTransformer as built, whose
            _get_num_layers and offsets read --balance, the split rank and
            --num-layers-per-virtual-pipeline-stage.
Each rank's layers (Megatron's 1-based layer numbers), embedding (pre_process) and loss
(post_process of the last rank; T5: also the encoder's final norm at the split) must be the
plan's partition. With v virtual stages the plan's stage r is rank r's share in v equal chunks
(the cost model times v equal chunks a rank), chunk c holding model chunk c x pp + r: the
layers numbered chunk by chunk, the embedding in rank 0's first chunk, the loss in the last
rank's last. A plan a flavour cannot run must be refused by fasop-cpp with the reason.
One line per plan and flavour; exit status 1 on any mismatch, 2 on bad usage.

What is not Megatron's own code here, and why (CPU, Debian's torch 1.13 on Python 3.11):
  - GPU-only modules (apex, amp_C, transformer_engine, triton, flash_attn, the fused-kernel
    extensions) and libraries only data loading needs (regex, torchvision, PIL) are stand-ins
    when they are not installed: attribute access yields inert classes;
  - what torch 2.x has and torch 1.13 lacks (torch.distributed.checkpoint, .tensor,
    .device_mesh, DeviceMesh, torch.compile, float8 dtypes, torch.cuda.MemPool, ...) or breaks
    on Python 3.11 (torch.distributed._shard) is stood in the same way, only where missing;
    PYTORCH_JIT=0 so torch.jit.script leaves functions as they are; numpy.float is float;
  - without a GPU, torch.cuda.get_device_capability and get_device_properties answer as an H100
    (compute capability 9.0): upstream's validate_args asks the architecture when tp > 1;
  - the fork's ParallelTransformerLayer is replaced by a recorder of the layer number and
    type it is built with: a real layer is tens of millions of weights with fused CUDA
    kernels, and the count and numbering come from ParallelTransformer, which runs unchanged;
  - the fork builds the rest of the model on the CPU (--use-cpu-initialization,
    --no-initialization set on the parsed args); get_model is left by an exception once the
    model is built, before it moves it to a GPU and wraps it for data parallelism;
  - process groups are not created: parallel_state's rank and world-size setters give each
    rank its place; the data-parallel group the fork's transformer asks for is a placeholder.
"""
import argparse
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import types

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name, search flags, expectation per flavour: "check" (run Megatron on it) or ("refused", reason
# fasop-cpp must name). At least: an uneven partition; tp > 1 with pp > 1 and dp > 1;
# recomputation with ZeRO-1 (the distributed optimizer); an uneven T5 for the fork, and T5 with
# recomputation and ZeRO-1 (--balance 11-13-11-13, split rank 2: FASOP's own _00_conf.sh).
PLANS = [
    ("gpt2xl-uneven-pp16", ["--model", "gpt2xl", "--heterogeneous"],
     {"upstream": "check", "fasop": "check"}),
    ("gpt2xl-tp2-pp4-dp4", ["--model", "gpt2xl", "--fix", "tp=2,pp=4"],
     {"upstream": "check", "fasop": "check"}),
    ("gpt2xl-recompute-zero1", ["--model", "gpt2xl", "--cluster", "aws-h100", "--fix",
                                "tp=2,pp=4,recompute=full,zero=1"],
     {"upstream": "check", "fasop": "check"}),
    ("llama2-7b-recompute-zero1", ["--model", "llama2-7b", "--cluster", "aws-h100", "--fix",
                                   "tp=2,pp=4,mbs=2,recompute=full,zero=1"],
     {"upstream": "check", "fasop": ("refused", "--swiglu")}),
    ("t5-uneven-tp2-pp4", ["--model", "t5", "--heterogeneous", "--fix", "tp=2,pp=4"],
     {"upstream": ("refused", "Pipeline parallelism is not supported for T5"), "fasop": "check"}),
    ("t5-recompute-zero1", ["--model", "t5", "--cluster", "aws-h100", "--fix", "tp=2,pp=4,recompute=full,zero=1"],
     {"upstream": ("refused", "Pipeline parallelism is not supported for T5"), "fasop": "check"}),
    # Interleaved 1F1B, two virtual stages a rank: upstream's --num-virtual-stages-per-pipeline-rank,
    # the fork's --num-layers-per-virtual-pipeline-stage with its --balance.
    ("gpt2xl-interleaved-tp2-pp4-v2", ["--model", "gpt2xl", "--cluster", "aws-h100", "--fix", "tp=2,pp=4,vpp=2"],
     {"upstream": "check", "fasop": "check"}),
    ("llama2-7b-interleaved-tp2-pp4-v2", ["--model", "llama2-7b", "--cluster", "aws-h100", "--fix",
                                          "tp=2,pp=4,vpp=2"],
     {"upstream": "check", "fasop": ("refused", "--swiglu")}),
    # BERT-Large on FASOP's BERT cluster: upstream's examples/bert/pretrain_bert.py, the fork's pretrain_bert.py.
    ("bert-uneven-pp4", ["--model", "bert", "--fix", "pp=4"], {"upstream": "check", "fasop": "check"}),
]

# The entry points whose model_provider and args_defaults each family runs with.
ENTRY_UPSTREAM = {"gpt": "pretrain_gpt.py", "bert": "pretrain_bert.py", "t5": "pretrain_t5.py"}
ENTRY_FORK = {"gpt": "_00_pretrain_gpt.py", "bert": "pretrain_bert.py", "t5": "pretrain_t5.py"}


# ---------------------------------------------------------------------------------------------
# Stand-ins for what a CPU machine with torch 1.13 lacks (the worker processes only).

class _InertMeta(type):
    """Classes whose every attribute is another inert class: `apex.x.Y.z` resolves."""

    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _inert_class(name)


def _inert_class(name):
    """A class that accepts any construction and call, standing for a missing library's name."""
    return _InertMeta(name, (), {"__init__": lambda self, *a, **k: None, "__call__": lambda self, *a, **k: None})


class _InertModule(types.ModuleType):
    """A stand-in module: any attribute is an inert class; a version string for version checks."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _inert_class(name)


class _StandIns(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports the named modules (and their submodules) as inert stand-ins."""

    def __init__(self):
        self.prefixes = []

    def find_spec(self, name, path, target=None):
        if any(name == p or name.startswith(p + ".") for p in self.prefixes):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _InertModule(spec.name)
        module.__path__, module.__version__ = [], "0.0.0"
        return module

    def exec_module(self, module):
        pass


GPU_ONLY = ["apex", "amp_C", "transformer_engine", "triton", "flash_attn", "fused_mix_prec_layer_norm_cuda",
            "fused_layer_norm_cuda", "scaled_upper_triang_masked_softmax_cuda", "scaled_masked_softmax_cuda",
            "scaled_softmax_cuda", "fused_weight_gradient_mlp_cuda"]
DATA_ONLY = ["regex", "torchvision", "PIL"]
# Modules of torch 2.x and numpy 1.25 (and torch 1.13's _shard, whose dataclasses fail on 3.11).
NEWER_MODULES = ["torch.distributed.checkpoint", "torch.distributed._shard", "torch.distributed.tensor",
                  "torch.distributed.device_mesh", "torch.distributed._tensor",
                  "torch.distributed._symmetric_memory", "numpy.dtypes"]
# Names of torch 2.x, numpy 1.25 and Python 3.12 that the imports reach.
NEWER_NAMES = [("torch", "float8_e8m0fnu"), ("torch", "float8_e4m3fn"), ("torch", "float8_e5m2"),
                ("torch", "float4_e2m1fn_x2"), ("torch", "uint16"), ("torch", "uint32"), ("torch", "uint64"),
                ("torch.distributed", "DeviceMesh"), ("torch.distributed", "_coalescing_manager"),
                ("torch.cuda.memory", "CUDAPluggableAllocator"), ("torch.cuda", "MemPool"),
                ("torch.optim.optimizer", "ParamsT"), ("typing", "override")]


def _importable(name):
    """Whether `name` imports here; a failed import leaves nothing half-loaded behind."""
    try:
        importlib.import_module(name)
        return True
    except Exception:
        for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            del sys.modules[loaded]
        return False


def install_stand_ins():
    """Stands in, where they are missing, for the modules and names listed above."""
    os.environ["PYTORCH_JIT"] = "0"  # torch.jit.script of torch 1.13 rejects upstream's norms
    os.environ["SETUPTOOLS_USE_DISTUTILS"] = "stdlib"  # torch.utils.cpp_extension under Debian
    finder = _StandIns()
    sys.meta_path.insert(0, finder)
    if not _importable("packaging.version"):
        import pip._vendor.packaging.version as version  # the same library, vendored by pip
        sys.modules["packaging"], sys.modules["packaging.version"] = sys.modules["pip._vendor.packaging"], version
    for name in GPU_ONLY + DATA_ONLY + NEWER_MODULES:
        if not _importable(name):
            finder.prefixes.append(name)
    import torch
    if not hasattr(torch, "compile"):
        torch.compile = lambda fn=None, **kw: fn if fn is not None else (lambda f: f)
    for module, name in NEWER_NAMES:
        owner = importlib.import_module(module)
        if not hasattr(owner, name):
            setattr(owner, name, torch.uint8 if name.startswith(("float", "uint")) else _inert_class(name))
    if not torch.cuda.is_available():
        # validate_args asks the GPU's architecture (tp > 1): answer as an H100, compute 9.0.
        h100 = types.SimpleNamespace(major=9, minor=0, name="stand-in H100", total_memory=80 << 30,
                                     multi_processor_count=132)
        torch.cuda.get_device_capability = lambda device=None: (9, 0)
        torch.cuda.get_device_properties = lambda device=None: h100
    import numpy
    if "float" not in numpy.__dict__:
        numpy.float = float  # removed in numpy 1.24; the fork's data code still names it
    return finder.prefixes


def set_launch(entry, world, tokens):
    """sys.argv and the environment as torchrun gives them to rank 0 of `world` processes."""
    sys.argv = [entry] + tokens
    os.environ.update(WORLD_SIZE=str(world), RANK="0", LOCAL_RANK="0")


# ---------------------------------------------------------------------------------------------
# Workers: one Megatron per process (both are the package `megatron`). Each prints JSON.

def upstream_worker(tree, world, tokens, family):
    """Upstream Megatron-LM on the emitted arguments: its layers per rank (and virtual stage), or
    for T5 what its model_provider says of them."""
    stood_in = install_stand_ins()
    sys.path.insert(0, tree)
    t5 = family == "t5"
    set_launch(ENTRY_UPSTREAM[family], world, tokens)
    os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] = "1"  # as fasop-cpp's launch sets it where tp > 1
    from megatron.training.arguments import parse_args, validate_args
    args = parse_args()
    # The entry points' args_defaults.
    validate_args(args, {"tokenizer_type": "GPT2BPETokenizer" if family == "gpt" else "BertWordPieceLowerCase"})
    report = {"tp": args.tensor_model_parallel_size, "pp": args.pipeline_model_parallel_size,
              "dp": args.data_parallel_size, "vp": args.virtual_pipeline_model_parallel_size,
              "stand_ins": stood_in}
    report.update(_upstream_t5_refusal(tree, args) if t5 else {"ranks": _upstream_gpt_ranks(args)})
    return report


def _upstream_gpt_ranks(args):
    """Per pipeline rank and virtual stage (model chunk): the layers get_num_layers_to_build and
    get_transformer_layer_offset give (TransformerBlock's own calls, GPTModel's and BertModel's
    alike), where the embedding and loss go, by parallel_state as get_model asks it and by the
    parsed layout."""
    from megatron.core import parallel_state
    from megatron.core.pipeline_parallel.utils import is_vp_first_stage, is_vp_last_stage
    from megatron.core.transformer.enums import LayerType
    from megatron.core.transformer.transformer_block import get_num_layers_to_build
    from megatron.core.transformer.transformer_layer import get_transformer_layer_offset
    from megatron.training.arguments import core_transformer_config_from_args
    config = core_transformer_config_from_args(args)  # parses and validates the layout
    layout = config.pipeline_model_parallel_layout
    vp = args.virtual_pipeline_model_parallel_size
    ranks = []
    for rank in range(args.pipeline_model_parallel_size):
        parallel_state.set_pipeline_model_parallel_world_size(args.pipeline_model_parallel_size)
        parallel_state.set_pipeline_model_parallel_rank(rank)
        parallel_state.set_virtual_pipeline_model_parallel_world_size(vp)
        for chunk in ([None] if vp is None else range(vp)):
            count = get_num_layers_to_build(config, vp_stage=chunk)
            offset = get_transformer_layer_offset(config, vp_stage=chunk)
            # training.get_model's pre_process and post_process for the chunk.
            first = parallel_state.is_pipeline_first_stage(ignore_virtual=True) and is_vp_first_stage(chunk, vp)
            last = parallel_state.is_pipeline_last_stage(ignore_virtual=True) and is_vp_last_stage(chunk, vp)
            stage = layout.layout[rank][chunk or 0] if layout is not None else None
            ranks.append({
                "rank": rank, "segment": "" if chunk is None else f"chunk {chunk}",
                "layers": list(range(offset + 1, offset + count + 1)),
                "embedding": first, "post": last, "loss": last,
                "layout_embedding": None if stage is None else stage.count(LayerType.embedding) == 1,
                "layout_loss": None if stage is None else stage.count(LayerType.loss) == 1})
    return ranks


def _upstream_t5_refusal(tree, args):
    """What upstream's examples/t5/pretrain_t5.py model_provider raises for these arguments."""
    from megatron.training import global_vars
    global_vars._GLOBAL_ARGS = args
    sys.path.insert(0, os.path.join(tree, "examples", "t5"))
    import pretrain_t5
    try:
        pretrain_t5.model_provider()
    except ValueError as error:
        return {"raised": str(error)}
    return {"raised": None}


class _Built(Exception):
    """Leaves get_model once the model is built (next it would move it to a GPU)."""


def fork_worker(tree, world, tokens, family):
    """Per pipeline rank (and virtual stage), the model FASOP's fork builds from the emitted arguments."""
    stood_in = install_stand_ins()
    sys.path.insert(0, tree)
    t5 = family == "t5"
    entry = ENTRY_FORK[family]  # FASOP's own entry points
    set_launch(entry, world, tokens)
    # Unset: the emitted --no-async-tensor-model-parallel-allreduce must be what lets the fork's
    # validate_args accept the arguments, at any tp, as in FASOP's own runs.
    os.environ.pop("CUDA_DEVICE_MAX_CONNECTIONS", None)
    import torch
    from megatron import arguments, global_vars, training
    from megatron.core import parallel_state
    from megatron.model import ModelType, transformer
    from megatron.tokenizer.tokenizer import _vocab_size_with_padding
    args = arguments.parse_args()
    defaults = {"tokenizer_type": "GPT2BPETokenizer" if family == "gpt" else "BertWordPieceLowerCase"}  # the entries'
    args = arguments.validate_args(args, defaults)
    args.use_cpu_initialization, args.perform_initialization = True, False
    args.padded_vocab_size = _vocab_size_with_padding(50257 if family == "gpt" else 30522, args)
    global_vars._GLOBAL_ARGS = args

    class RecordedLayer(torch.nn.Module):
        """Stands for ParallelTransformerLayer: the layer number and type the fork builds."""

        def __init__(self, init_method, output_layer_init_method, layer_number, layer_type=None, **kwargs):
            super().__init__()
            self.layer_number, self.layer_type = layer_number, layer_type

    transformer.ParallelTransformerLayer = RecordedLayer
    spec = importlib.util.spec_from_file_location("fork_entry", os.path.join(tree, entry))
    entry_module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(entry_module)
    model_type = ModelType.encoder_and_decoder if t5 else ModelType.encoder_or_decoder
    pp = args.pipeline_model_parallel_size
    ranks = []
    for rank in range(pp):
        # What initialize_model_parallel would leave for this rank.
        parallel_state.set_pipeline_model_parallel_world_size(pp)
        parallel_state.set_pipeline_model_parallel_rank(rank)
        parallel_state.set_tensor_model_parallel_world_size(args.tensor_model_parallel_size)
        parallel_state.set_tensor_model_parallel_rank(0)
        parallel_state._PIPELINE_MODEL_PARALLEL_SPLIT_RANK = args.pipeline_model_parallel_split_rank
        parallel_state._DATA_PARALLEL_GROUP = object()
        vp = args.virtual_pipeline_model_parallel_size
        # As initialize_model_parallel sets them (the fork has no setter for the world size).
        parallel_state._VIRTUAL_PIPELINE_MODEL_PARALLEL_WORLD_SIZE = vp
        parallel_state._VIRTUAL_PIPELINE_MODEL_PARALLEL_RANK = None if vp is None else 0
        chunks = []  # get_model calls the provider once per virtual stage (model chunk)

        def provider(**flags):
            chunks.append(dict(flags, model=entry_module.model_provider(**flags)))
            if len(chunks) == (vp or 1):
                raise _Built()
            return chunks[-1]["model"]

        try:
            training.get_model(provider, model_type, wrap_with_ddp=False)
        except _Built:
            pass
        for chunk, built in enumerate(chunks):
            ranks.extend(_fork_rank(rank, built, t5, None if vp is None else chunk))
    return {"tp": args.tensor_model_parallel_size, "pp": pp, "dp": args.data_parallel_size, "vp": vp,
            "split_rank": args.pipeline_model_parallel_split_rank, "ranks": ranks, "stand_ins": stood_in}


def _fork_rank(rank, built, t5, chunk):
    """What one rank's model (chunk) holds: one entry per ParallelTransformer (T5: encoder or decoder)."""
    model = built["model"]
    lm = model.language_model
    stacks = [("encoder", lm.encoder), ("decoder", getattr(lm, "decoder", None))] if t5 else \
        [("" if chunk is None else f"chunk {chunk}", lm.encoder)]
    out = []
    for segment, stack in stacks:
        if stack is None:
            continue
        layers = [layer.layer_number for layer in stack.layers if hasattr(layer, "layer_type")]
        # GPT and BERT compute the loss where post_process is set; T5 where it built its lm_head.
        loss = hasattr(model, "lm_head") if t5 else bool(model.post_process)
        out.append({"rank": rank, "segment": segment, "layers": layers,
                    "embedding": hasattr(lm, "embedding") and built["pre_process"],
                    "post": bool(built["post_process"]) and hasattr(stack, "final_layernorm"),
                    "loss": loss})
    return out


# ---------------------------------------------------------------------------------------------
# The plan's side: which layers each stage holds, from the plan file and the model's layers.

def load_yaml(path):
    """The YAML file at `path` (PyYAML is only needed by the driver)."""
    import yaml
    with open(path) as f:
        return yaml.safe_load(f)


def model_units(model, plan_dir):
    """The model's units in order as (role, segment), and which Megatron model builds it ("gpt",
    "bert" or "t5"), from its YAML (a preset or a file)."""
    candidates = [model, os.path.join(plan_dir, model), os.path.join(ROOT, "configs", "models", model + ".yaml")]
    path = next((p for p in candidates if os.path.isfile(p)), None)
    if path is None:
        sys.exit(f"model {model!r} of the plan: no such file, nor configs/models/{model}.yaml")
    spec, units = load_yaml(path), []
    for layer in spec["layers"]:
        units += [(layer.get("role", "transformer"), layer.get("segment", ""))] * int(layer.get("repeat", 1))
    family = "t5" if any(segment for _, segment in units) else "bert" if spec.get("family") == "bert" else "gpt"
    return units, family


def expected_ranks(plan, units):
    """Per stage (and segment): Megatron's 1-based layer numbers, embedding, post-process, loss."""
    last_of, number, counters = {}, [], {}
    for i, (role, segment) in enumerate(units):
        last_of[segment] = i
        counters.setdefault(segment, 0)
        if role == "transformer":
            counters[segment] += 1
        number.append(counters[segment] if role == "transformer" else None)
    out, start = [], 0
    for rank, count in enumerate(plan["partition"]):
        span = range(start, start + count)
        for segment in dict.fromkeys(units[i][1] for i in span):
            mine = [i for i in span if units[i][1] == segment]
            out.append({"rank": rank, "segment": segment,
                        "layers": [number[i] for i in mine if number[i] is not None],
                        "embedding": any(units[i][0] == "embedding" for i in mine),
                        "post": last_of[segment] in mine,
                        "loss": len(units) - 1 in mine})
        start += count
    vp = plan.get("virtual_stages", 1)
    return out if vp <= 1 else interleaved(out, vp)


def interleaved(stages, vp):
    """The plan's stages as Megatron's interleaved schedule holds them: the plan's stage r is
    pipeline rank r's share, in v equal chunks (the cost model times v equal chunks a rank);
    chunk c of rank r is model chunk c x pp + r, so the layers are numbered chunk by chunk, the
    embedding in model chunk 0 (rank 0's chunk 0) and the loss in the last (rank pp-1's last)."""
    pp = len(stages)
    sizes = [len(s["layers"]) // vp for s in stages]
    if any(len(s["layers"]) % vp for s in stages):
        sys.exit(f"plan: a stage's layers ({[len(s['layers']) for s in stages]}) do not split in {vp} chunks")
    start, numbers = 0, {}
    for j in range(pp * vp):  # model chunk j = c * pp + r
        numbers[j] = list(range(start + 1, start + sizes[j % pp] + 1))
        start += sizes[j % pp]
    out = []
    for r, s in enumerate(stages):
        for c in range(vp):
            out.append({"rank": r, "segment": f"chunk {c}", "layers": numbers[c * pp + r],
                        "embedding": s["embedding"] and c == 0, "post": s["post"] and c == vp - 1,
                        "loss": s["loss"] and c == vp - 1})
    return out


def compare(want, got):
    """The first difference between the plan's stages and what Megatron builds, or None."""
    keys = ("rank", "segment", "layers", "embedding", "post", "loss")
    if len(want) != len(got):
        return f"{len(got)} stacks built over the ranks, the plan has {len(want)}"
    for w, g in zip(want, got):
        for key in keys:
            if w[key] != g[key]:
                return f"rank {w['rank']} {w['segment'] or 'model'}: {key} {g[key]!r} built, the plan says {w[key]!r}"
        for key in ("layout_embedding", "layout_loss"):
            if g.get(key) is not None and g[key] != w[key.split("_")[1]]:
                return f"rank {w['rank']}: the layout's {key.split('_')[1]} is {g[key]!r}, the plan says the opposite"
    return None


def summary(want):
    """'E2-3-...-3L' style: layers per stage, E where the embedding is, L where the loss is."""
    parts = []
    for w in want:
        parts.append(("E" if w["embedding"] else "") + str(len(w["layers"])) + ("L" if w["loss"] else ""))
    return "-".join(parts)


# ---------------------------------------------------------------------------------------------
# Driver.

STOOD_IN = {}  # flavour -> the modules its workers imported as stand-ins


def megatron_builds(flavour, tree, world, family, tokens, log):
    """(the worker's report, None), or (None, the last line of its error), its output in `log`."""
    worker = [sys.executable, os.path.abspath(__file__), "--worker", flavour, "--tree", tree, "--world", str(world)]
    result = run(worker + ["--family", family, "--"] + tokens)
    with open(log, "w") as f:
        f.write(result.stdout + result.stderr)
    if result.returncode != 0:
        return None, (result.stderr.strip().splitlines() or ["(no output)"])[-1]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    STOOD_IN.setdefault(flavour, set()).update(report["stand_ins"])
    return report, None


def moved_layer(tokens, plan):
    """The arguments with one transformer layer moved from pipeline rank 1 to rank 0 (with
    virtual stages and Megatron's even split, from rank 1's first chunk to rank 0's, written as
    the layout of pp x v stages that says so)."""
    out = list(tokens)
    if "--num-virtual-stages-per-pipeline-rank" in out and "--pipeline-model-parallel-layout" not in out:
        at = out.index("--num-virtual-stages-per-pipeline-rank")
        vp, pp = int(out[at + 1]), plan["pp"]
        per_chunk = sum(plan["partition"]) - 2  # transformer layers: the units but E and L
        per_chunk //= pp * vp
        counts = [per_chunk] * (pp * vp)
        counts[0], counts[1] = counts[0] + 1, counts[1] - 1
        stages = [f"t*{n}" for n in counts]
        stages[0], stages[-1] = "E" + stages[0], stages[-1] + "L"
        return out[:at] + out[at + 2:] + ["--pipeline-model-parallel-layout", "|".join(stages)]
    if "--balance" in out:
        at = out.index("--balance") + 1
        counts = [int(c) for c in out[at].split("-")]
        counts[0], counts[1] = counts[0] + 1, counts[1] - 1
        out[at] = "-".join(map(str, counts))
    elif "--pipeline-model-parallel-layout" in out:
        at = out.index("--pipeline-model-parallel-layout") + 1
        stages = [re.fullmatch(r"(E?)(?:t(?:\*(\d+))?)?(L?)", stage) for stage in out[at].split("|")]
        parts = [[m[1], int(m[2] or 1) if "t" in m[0] else 0, m[3]] for m in stages]
        parts[0][1], parts[1][1] = parts[0][1] + 1, parts[1][1] - 1
        out[at] = "|".join(e + ("t" * min(n, 1)) + (f"*{n}" if n > 1 else "") + l for e, n, l in parts)
    return out


def run(cmd):
    """`cmd` run to its end, its output kept as text."""
    return subprocess.run(cmd, capture_output=True, text=True)


def shell_words(text):
    """The words of an emitted argument block as a shell reads it (lines continued by '\\')."""
    return shlex.split(text.replace("\\\n", " "))


def check_refusal(name, flavour, reason, emitted, plan_path, plan, units, family, tree, fasop_cpp, work):
    """fasop-cpp must refuse the plan naming `reason`, and that Megatron, given what it can
    parse of the other flavour's arguments, must fail for the same reason."""
    label = f"{name} [{flavour}]"
    if emitted.returncode == 0 or reason not in emitted.stderr:
        print(f"FAIL  {label}: expected a refusal naming {reason!r}, got exit {emitted.returncode}: "
              f"{(emitted.stderr or emitted.stdout).strip()[:300]}")
        return False
    if tree is None:
        print(f"ok    {label}: refused by fasop-cpp naming {reason!r} (no {flavour} tree to confirm it)")
        return True
    other = [fasop_cpp, "schedule", "--plan", plan_path, "--format", "megatron"]
    other += ["--megatron-flavor", "fasop"] if flavour == "upstream" else []
    tokens = shell_words(run(other).stdout)
    # The fork's partition flags do not exist upstream (no split rank, no --balance), nor does
    # its switch of the async all-reduce (upstream dropped the option).
    tokens = drop_flags(tokens, ["--balance", "--pipeline-model-parallel-split-rank"])
    tokens = [t for t in tokens if t != "--no-async-tensor-model-parallel-allreduce"]
    world = plan["tp"] * plan["pp"] * plan["dp"]
    got, error = megatron_builds(flavour, tree, world, family, tokens, os.path.join(work, f"{name}.{flavour}.refused.log"))
    said = error if got is None else got.get("raised")
    if not said or reason not in said:
        print(f"FAIL  {label}: fasop-cpp refuses naming {reason!r}, but Megatron says {said!r}")
        return False
    print(f"ok    {label}: refused by fasop-cpp; Megatron's own code agrees: {said[:110]}")
    return True


def drop_flags(tokens, flags):
    """`tokens` without the given flags and their values."""
    out, skip = [], False
    for token in tokens:
        if skip:
            skip = False
        elif token in flags:
            skip = True
        else:
            out.append(token)
    return out


def check_flavour(name, flavour, expect, plan_path, plan, units, family, tree, fasop_cpp, work):
    """One line for one plan in one flavour; False on a mismatch."""
    label = f"{name} [{flavour}]"
    cmd = [fasop_cpp, "schedule", "--plan", plan_path, "--format", "megatron"]
    if flavour == "fasop":
        cmd += ["--megatron-flavor", "fasop"]
    emitted = run(cmd)
    if expect != "check":
        return check_refusal(name, flavour, expect[1], emitted, plan_path, plan, units, family, tree, fasop_cpp, work)
    if emitted.returncode != 0:
        print(f"FAIL  {label}: fasop-cpp schedule failed: {emitted.stderr.strip()}")
        return False
    with open(os.path.join(work, f"{name}.{flavour}.sh"), "w") as f:
        f.write(emitted.stdout)
    if tree is None:
        print(f"skip  {label}: no {flavour} tree given")
        return True
    return check_built(label, shell_words(emitted.stdout), plan, units, family, flavour, tree, work + "/" + name)


def check_built(label, tokens, plan, units, family, flavour, tree, log_stem):
    """What that Megatron builds per rank from `tokens` must be the plan's partition, and the
    same arguments with a layer moved must not pass."""
    world = plan["tp"] * plan["pp"] * plan["dp"]
    want = expected_ranks(plan, units)
    got, problem = megatron_builds(flavour, tree, world, family, tokens, f"{log_stem}.{flavour}.log")
    if got is None:
        print(f"FAIL  {label}: Megatron refused the arguments: {problem}")
        return False
    if (got["tp"], got["pp"], got["dp"]) != (plan["tp"], plan["pp"], plan["dp"]):
        problem = f"Megatron runs tp {got['tp']} pp {got['pp']} dp {got['dp']}"
    problem = problem or compare(want, got["ranks"])
    line = f"tp {got['tp']} pp {got['pp']} dp {got['dp']}"
    if got.get("split_rank") is not None:
        line += f", split rank {got['split_rank']}"
    if problem:
        print(f"FAIL  {label}: {line}: {problem}")
        return False
    # The check sees what Megatron builds, not what it was told: one layer moved from rank 1 to
    # rank 0 must show.
    moved, problem = megatron_builds(flavour, tree, world, family, moved_layer(tokens, plan), f"{log_stem}.{flavour}.moved.log")
    if moved is None or compare(want, moved["ranks"]) is None:
        print(f"FAIL  {label}: {line}: a layer moved from rank 1 to rank 0 " +
              (f"made Megatron fail ({problem})" if moved is None else "went unnoticed"))
        return False
    print(f"ok    {label}: {line}, layers per rank {summary(want)} as planned (a moved layer is caught)")
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fasop-cpp", default=os.path.join(ROOT, "build", "fasop-cpp"),
                        help="the fasop-cpp binary (default: build/fasop-cpp)")
    parser.add_argument("--upstream", default=os.environ.get("MEGATRON_UPSTREAM"),
                        help="an NVIDIA/Megatron-LM checkout (env MEGATRON_UPSTREAM)")
    parser.add_argument("--fork", default=os.environ.get("MEGATRON_FASOP"),
                        help="FASOP's Megatron-LM-2/ folder (env MEGATRON_FASOP)")
    parser.add_argument("--work", help="where plans, emitted arguments and logs go (default: a new temporary one)")
    parser.add_argument("--worker", choices=["upstream", "fasop"], help=argparse.SUPPRESS)
    parser.add_argument("--tree", help=argparse.SUPPRESS)
    parser.add_argument("--world", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--family", choices=["gpt", "bert", "t5"], default="gpt", help=argparse.SUPPRESS)
    parser.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.worker:
        tokens = opts.rest[1:] if opts.rest[:1] == ["--"] else opts.rest
        if opts.worker == "upstream":
            report = upstream_worker(opts.tree, opts.world, tokens, opts.family)
        else:
            report = fork_worker(opts.tree, opts.world, tokens, opts.family)
        sys.stdout.write("\n" + json.dumps(report) + "\n")
        return 0

    trees = {"upstream": opts.upstream, "fasop": opts.fork}
    for flavour, tree in trees.items():
        if tree and not os.path.isdir(os.path.join(tree, "megatron")):
            parser.error(f"{tree} has no megatron/ folder: not a {flavour} Megatron-LM tree")
    if not any(trees.values()):
        parser.error("give --upstream DIR and/or --fork DIR (or MEGATRON_UPSTREAM / MEGATRON_FASOP)")
    if not os.access(opts.fasop_cpp, os.X_OK):
        parser.error(f"{opts.fasop_cpp} is not an executable; build fasop-cpp or pass --fasop-cpp")
    work = opts.work or tempfile.mkdtemp(prefix="megatron-emit-")
    os.makedirs(work, exist_ok=True)
    all_ok = True
    for name, search, expect in PLANS:
        plan_path = os.path.join(work, name + ".yaml")
        found = run([opts.fasop_cpp, "search", *search, "--save-plan", plan_path, "--out-dir",
                     os.path.join(work, "logs"), "--quiet"])
        if found.returncode != 0:
            print(f"FAIL  {name}: fasop-cpp search failed: {found.stderr.strip()}")
            all_ok = False
            continue
        plan = load_yaml(plan_path)
        units, family = model_units(plan["model"], work)
        for flavour in ("upstream", "fasop"):
            all_ok &= check_flavour(name, flavour, expect[flavour], plan_path, plan, units, family, trees[flavour],
                                    opts.fasop_cpp, work)
    for flavour, names in sorted(STOOD_IN.items()):
        print(f"stand-ins ({flavour}, not installed here or GPU-only): {', '.join(sorted(names))}")
    print(f"plans, emitted arguments and logs in {work}")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
