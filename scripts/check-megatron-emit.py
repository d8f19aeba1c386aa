#!/usr/bin/python3
"""Runs Megatron-LM's own code on the arguments `fasop-cpp schedule --format megatron` writes.

Usage (with Debian's /usr/bin/python3 and its torch; CPU only):
    /usr/bin/python3 scripts/check-megatron-emit.py [--fasop-cpp build/fasop-cpp]
        [--upstream DIR] [--fork DIR] [--work DIR] [--only NAMES]
    --upstream DIR  an NVIDIA/Megatron-LM checkout (env MEGATRON_UPSTREAM)
    --fork DIR      FASOP's fork: the Megatron-LM-2/ folder of AvatarHwang/FASOP (env MEGATRON_FASOP)
    --work DIR      where plans and emitted arguments are kept (default: a temporary directory)
    --only A,B      only the plans (and refusals) of these names
At least one tree is needed; a flavour without its tree is reported as skipped.

For every plan below the script runs `fasop-cpp search ... --save-plan`, edits the saved plan
where the entry says so (search does not choose context or expert parallelism: cp, ep and etp
are written into the plan file as a user would, cp dividing dp), then `fasop-cpp schedule
--format megatron [--megatron-flavor fasop]`, and hands the emitted arguments to that
Megatron's own parse_args and validate_args (sys.argv as a launch would give it, WORLD_SIZE =
tp x cp x dp x pp, RANK 0). Model files the entries name with '@' (mixtures of experts, fp8,
mxfp8 and nvfp4 copies of the presets) are written into the work directory's models/ first. Then,
for every pipeline rank, it asks that Megatron which layers the rank builds, with the rank's
parallel state set as initialize_model_parallel would set it:
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
Upstream, the parsed TransformerConfig must hold the plan's cp, ep, etp (its default, tp, for a
dense model), the model's experts, top-k, expert and shared-expert widths, capacity factor
(token dropping), head width (kv_channels), fp8 format and recipe, and bf16; the layer specs
get_gpt_decoder_layer_specs builds must put MoELayer exactly on the model's MoE layers; the
rank groups of RankGenerator, built as initialize_model_parallel builds them (order
tp-cp-ep-dp-pp, and the expert grid of etp x ep x expert-dp x pp), must be fasop-cpp's launch
layout (a stage's tp x cp x dp ranks contiguous, tp fastest, then cp, then dp); and with tp > 1
and experts, MoELayer.forward's own training-time check (which refuses tensor parallelism
without sequence parallelism) is run on a bare MoELayer holding the config.
Each rank's layers (Megatron's 1-based layer numbers), embedding (pre_process) and loss
(post_process of the last rank; T5: also the encoder's final norm at the split) must be the
plan's partition. With v virtual stages the plan's stage r is rank r's share in v equal chunks
(the cost model times v equal chunks a rank), chunk c holding model chunk c x pp + r: the
layers numbered chunk by chunk, the embedding in rank 0's first chunk, the loss in the last
rank's last. A plan a flavour cannot run must be refused by fasop-cpp with the reason; the
refusals of REFUSALS (plans made invalid by an edit) must be refused too, and where Megatron's
own code can say so on a CPU, the base plan's arguments edited alike must fail there for the
same reason. One line per plan and flavour; exit status 1 on any mismatch, 2 on bad usage.

What is not Megatron's own code here, and why (CPU, Debian's torch 1.13 on Python 3.11):
  - GPU-only modules (apex, amp_C, transformer_engine, triton, flash_attn, the fused-kernel
    extensions) and libraries only data loading needs (regex, torchvision, PIL) are stand-ins
    when they are not installed: attribute access yields inert classes;
  - what torch 2.x has and torch 1.13 lacks (torch.distributed.checkpoint, .tensor,
    .device_mesh, DeviceMesh, torch.compile, float8 dtypes, torch.cuda.MemPool, ...) or breaks
    on Python 3.11 (torch.distributed._shard) is stood in the same way, only where missing;
    PYTORCH_JIT=0 so torch.jit.script leaves functions as they are; numpy.float is float;
  - without a GPU, torch.cuda.get_device_capability and get_device_properties answer as an H100
    (compute capability 9.0): upstream's validate_args asks the architecture when tp > 1; the
    Transformer Engine stand-in answers version 2.8.0 (TE_VERSION) to its version checks, and
    TransformerConfig's torch >= 2.6 check of the EP all-to-all overlap (a hang of older torch)
    is answered as torch 2.6, and validate_args's torch >= 2.4 check of FSDP2 as torch 2.4;
  - MoELayer.forward's tensor-parallel check runs on an instance made without its __init__
    (which would build the experts and their process groups), holding the parsed config and
    a stand-in tensor-parallel group of tp ranks, in training mode;
  - the fork's ParallelTransformerLayer is replaced in the model by a recorder of the layer
    number and type it is built with: a real layer is tens of millions of weights with fused
    CUDA kernels, and the count and numbering come from ParallelTransformer, which runs
    unchanged. Each real layer is still built first (on the CPU, weights not initialised) and
    dropped, so that its own divisions by tp (core.utils.divide of the heads, the attention
    projection and the MLP width) run and fail a tp that does not divide them;
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
    ("gpt2xl-interleaved-tp2-pp4-v2", ["--model", "gpt2xl", "--cluster", "aws-h100", "--fix", "tp=2,pp=4,vpp=2,zero=1"],
     {"upstream": "check", "fasop": "check"}),
    ("llama2-7b-interleaved-tp2-pp4-v2", ["--model", "llama2-7b", "--cluster", "aws-h100", "--fix",
                                          "tp=2,pp=4,vpp=2"],
     {"upstream": "check", "fasop": ("refused", "--swiglu")}),
    # Qwen3 30B-A3B at ep 8, pp 2 with two virtual stages and the EP all-to-all overlap: the search's
    # partition [27, 23] is no even split, so upstream gets a layout of 2 x 2 chunks, and
    # --overlap-moe-expert-parallel-comm with --delay-wgrad-compute.
    ("qwen3-uneven-v2-ep8-overlap", ["--model", "qwen3-30b-a3b", "--cluster", "aws-h100", "--fix",
                                     "tp=1,pp=2,vpp=2,ep=8,zero=1", "--ep-comm-overlap"],
     {"upstream": "check", "fasop": ("refused", "--moe-router-topk")}),
    # BERT-Large on FASOP's BERT cluster: upstream's examples/bert/pretrain_bert.py, the fork's pretrain_bert.py.
    ("bert-uneven-pp4", ["--model", "bert", "--fix", "pp=4"], {"upstream": "check", "fasop": "check"}),
    # Context parallelism: the llama plan at tp 2, pp 4 with cp 2 (dp 16 -> 8). The fork has none.
    ("llama2-7b-cp2", ["--model", "llama2-7b", "--cluster", "aws-h100", "--fix", "tp=2,pp=4,zero=1"],
     {"upstream": "check", "fasop": ("refused", "--context-parallel-size")}, {"cp": 2}),
    # A Mixtral-like mixture of experts (8 experts, top-2, one dense layer first, dropless, routing
    # forced to balance: --moe-router-force-load-balancing) at ep 8.
    ("moe-ep8", ["--model", "@moe-mixtral.yaml", "--cluster", "aws-h100", "--fix", "tp=2,pp=4,sp=on,zero=1,ep=1"],
     {"upstream": "check", "fasop": ("refused", "--moe-router-topk")}, {"ep": 8}),
    # A DeepSeek-like one (64 experts of 1408, top-6, a shared expert, token dropping, heads of 128
    # beside a hidden of 2048 / 32 heads) with cp 2, ep 4 and etp 2: 8 of a stage's 2 x 2 x 8 GPUs.
    ("moe-shared-cp2-ep4-etp2", ["--model", "@moe-deepseek.yaml", "--cluster", "aws-h100", "--fix",
                                 "tp=2,pp=4,sp=on,zero=1,ep=1"],
     {"upstream": "check", "fasop": ("refused", "--moe-router-topk")}, {"cp": 2, "ep": 4, "etp": 2}),
    # DeepSeek-V3 (multi-head latent attention, 256 experts, 3 dense layers first) as the search
    # plans it on DGX H100s at pp 16 (uneven: 61 layers) and ep 8.
    ("deepseek-v3-mla-ep8", ["--model", "deepseek-v3", "--cluster", "dgx-h100", "--fix", "tp=1,pp=16,zero=1,ep=8"],
     {"upstream": "check", "fasop": ("refused", "--moe-router-topk")}),
    # The same at two virtual stages: 61 layers split into no 32 equal chunks, so a layout of
    # 16 x 2 chunks, the last rank's first one empty (its only unit, the MTP module and the loss,
    # closes the model).
    ("deepseek-v3-mla-ep8-v2", ["--model", "deepseek-v3", "--cluster", "dgx-h100", "--fix",
                                "tp=1,pp=16,zero=1,ep=8,vpp=2"],
     {"upstream": "check", "fasop": ("refused", "--moe-router-topk")}),
    # The flex token dispatcher (HybridEP, DeepEP) with DeepSeek-V3's group-limited routing
    # (--moe-router-num-groups 8 --moe-router-group-topk 4), ep 16 across two DGX H100 nodes.
    ("deepseek-v3-hybridep-ep16", ["--model", "deepseek-v3", "--cluster", "dgx-h100", "--fix",
                                   "tp=1,pp=16,zero=1,ep=16", "--moe-dispatcher", "hybridep"],
     {"upstream": "check", "fasop": ("refused", "--moe-router-topk")}),
    ("deepseek-v3-deepep-ep16", ["--model", "deepseek-v3", "--cluster", "dgx-h100", "--fix",
                                 "tp=1,pp=16,zero=1,ep=16", "--moe-dispatcher", "deepep"],
     {"upstream": "check", "fasop": ("refused", "--moe-router-topk")}),
    # Selective recomputation of Megatron-Core's modules, as NVIDIA's DeepSeek-V3 recipes name them
    # (mla_up_proj; moe_act and the shared expert beside it), on DGX B200s, where they fit.
    ("deepseek-v3-recompute-modules", ["--model", "deepseek-v3", "--cluster", "dgx-b200", "--fix",
                                       "tp=1,pp=16,zero=1,ep=8,recompute=selective",
                                       "--recompute-modules", "mla_up_proj,moe_act,shared_experts"],
     {"upstream": "check", "fasop": ("refused", "--moe-router-topk")}),
    # fp8 (Transformer Engine's per-tensor current scaling) on H100s, and MXFP8 on B200s.
    ("llama2-7b-fp8", ["--model", "@llama2-7b-fp8.yaml", "--cluster", "aws-h100", "--fix", "tp=2,pp=4,zero=1"],
     {"upstream": "check", "fasop": ("refused", "--swiglu")}),
    ("gpt2xl-fp8", ["--model", "@gpt2xl-fp8.yaml", "--cluster", "aws-h100", "--fix", "tp=2,pp=4"],
     {"upstream": "check", "fasop": ("refused", "--fp8-format")}),
    # (MXFP8 with bf16 gradients, as Megatron-Bridge's recipes reduce them: --grad-reduce-in-bf16.)
    ("llama2-7b-mxfp8", ["--model", "@llama2-7b-mxfp8.yaml", "--cluster", "dgx-b200", "--fix", "tp=2,pp=4,zero=1",
                         "--grad-reduce-in-bf16"],
     {"upstream": "check", "fasop": ("refused", "--swiglu")}),
    # NVFP4 on GB200 trays (Megatron-Bridge's bf16_with_nvfp4_mixed: --fp4-format e2m1 --fp4-recipe nvfp4).
    ("llama2-7b-nvfp4", ["--model", "@llama2-7b-nvfp4.yaml", "--cluster", "dgx-gb200", "--fix", "tp=2,pp=4,zero=1",
                         "--grad-reduce-in-bf16"],
     {"upstream": "check", "fasop": ("refused", "--swiglu")}),
    # ZeRO 2 and 3 are Megatron-FSDP (optim_grads, optim_grads_params), which the fork predates.
    # At pp 2 (NVIDIA's FSDP recipes run pp 1, where no layer can move between ranks).
    ("gpt2xl-fsdp-zero2", ["--model", "gpt2xl", "--cluster", "aws-h100", "--fix", "tp=2,pp=2,zero=2"],
     {"upstream": "check", "fasop": ("refused", "--use-megatron-fsdp")}),
    ("llama2-7b-fsdp-zero3", ["--model", "llama2-7b", "--cluster", "aws-h100", "--fix", "tp=2,pp=2,zero=3"],
     {"upstream": "check", "fasop": ("refused", "--swiglu")}),
    # ZeRO-3 as PyTorch's FSDP2 (schedule --fsdp torch): pp 1, as Megatron-LM asserts, so no
    # layer can move; the fork has none.
    ("llama2-7b-torch-fsdp2", ["--model", "llama2-7b", "--cluster", "aws-h100", "--fix", "tp=2,pp=1,zero=3"],
     {"upstream": "check", "fasop": ("refused", "--swiglu"), "fsdp": "torch"}),
    # GPT-OSS 120B: sliding-window attention on every other layer (--window-size 128,0
    # --window-attn-skip-freq 2, the layers Megatron windows compared one by one), ep 8, pp 4.
    ("gpt-oss-120b-window-ep8", ["--model", "gpt-oss-120b", "--cluster", "dgx-h100", "--fix", "tp=1,pp=4,ep=8,zero=1"],
     {"upstream": "check", "fasop": ("refused", "--moe-router-topk")}),
    # Megatron-FSDP of a MoE model: dense weights sharded over dp, each MoE layer's experts over
    # their expert-data-parallel group (dp 64 / ep 8 = 8), at pp 2 as the plans above.
    ("qwen3-fsdp-zero3-ep8", ["--model", "qwen3-30b-a3b", "--cluster", "aws-h100", "--fix", "tp=1,pp=2,ep=8,zero=3"],
     {"upstream": "check", "fasop": ("refused", "--moe-router-topk")}),
]

# Model files the plans name with '@': written into the work directory. name -> (preset to copy
# with its dtype replaced, dtype) or the file's text.
MODELS = {
    "llama2-7b-fp8.yaml": ("llama2-7b", "fp8"),
    "llama2-7b-mxfp8.yaml": ("llama2-7b", "mxfp8"),
    "llama2-7b-nvfp4.yaml": ("llama2-7b", "nvfp4"),
    "gpt2xl-fp8.yaml": ("gpt2xl", "fp8"),
    "moe-mixtral.yaml": """name: moe-mixtral
family: llama
hidden: 4096
heads: 32
kv_heads: 8
ffn_hidden: 14336
sequence: 4096
vocab: 32000
global_batch: 256
dtype: bf16
activation: swiglu
norm: rmsnorm
tied_embeddings: false
moe: {experts: 8, top_k: 2, expert_ffn_hidden: 14336, dense_layers: 1, force_balance: true}
layers:
  - {type: embedding, role: embedding}
  - {type: transformer, role: transformer, repeat: 1}
  - {type: moe_layer, role: transformer, moe: true, repeat: 15}
  - {type: post_process, role: post_process}
""",
    "moe-deepseek.yaml": """name: moe-deepseek
family: llama
hidden: 2048
heads: 32
kv_heads: 8
head_dim: 128
ffn_hidden: 10944
sequence: 4096
vocab: 102400
global_batch: 512
dtype: bf16
activation: swiglu
norm: rmsnorm
tied_embeddings: false
moe: {experts: 64, top_k: 6, expert_ffn_hidden: 1408, shared_expert_ffn_hidden: 2816, dense_layers: 1, token_drop: true}
layers:
  - {type: embedding, role: embedding}
  - {type: transformer, role: transformer, repeat: 1}
  - {type: moe_layer, role: transformer, moe: true, repeat: 27}
  - {type: post_process, role: post_process}
""",
}

# Plans made invalid by an edit of a plan above (its search result): fasop-cpp must refuse them
# naming `reason`. Where Megatron's own code refuses such arguments on a CPU, `megatron` gives the
# edit of the base plan's emitted (upstream) arguments ({flag: value}, None drops the flag), the
# world size, and what Megatron must say; else a string: why Megatron's refusal is not run here.
REFUSALS = [
    # 4,096 tokens do not split into 2 x 3 chunks; Megatron: tp 2 x pp 4 x cp 3 = 24 GPUs.
    ("llama2-7b-cp3", "llama2-7b-cp2", {"cp": 3}, "2 x cp",
     ({"--context-parallel-size": "3"}, 24, "seq-length should be a multiple of 2 * context-parallel-size")),
    # 3 does not divide 8 experts.
    ("moe-ep3", "moe-ep8", {"ep": 3}, "does not divide",
     ({"--expert-model-parallel-size": "3"}, 128, "Number of experts should be a multiple of expert model parallel_size")),
    # tp 2 with experts and no sequence parallelism: validate_args only warns; MoELayer.forward
    # raises in training.
    ("moe-ep8-no-sp", "moe-ep8", {"ep": 8, "sequence_parallel": False}, "sequence parallelism",
     ({"--sequence-parallel": None}, 128, "without also enabling sequence parallelism")),
    # MXFP8 on H100s: the GPU data has no mxfp8 entry (Blackwell only).
    ("llama2-7b-mxfp8-on-h100", "llama2-7b-fp8", {"model": "@llama2-7b-mxfp8.yaml"}, "Blackwell",
     "Transformer Engine refuses MXFP8 below compute capability 10.0 when it builds the recipe on a GPU"),
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
        module.__path__, module.__version__ = [], TE_VERSION if spec.name.startswith("transformer_engine") else "0.0.0"
        return module

    def exec_module(self, module):
        pass


# The version the Transformer Engine stand-in answers: upstream's validate_args checks it where a
# plan's flags need a newer TE (delay_wgrad_compute with overlap_grad_reduce wants 2.8), and the
# NeMo containers that run today's recipes ship TE 2.8 or later.
TE_VERSION = "2.8.0"
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
    # As fasop-cpp's launch sets it (plan_environment): 1 where tp or cp > 1, unset under
    # Megatron-FSDP and FSDP2, which assert it is not 1.
    if "--use-megatron-fsdp" in tokens or "--use-torch-fsdp2" in tokens:
        os.environ.pop("CUDA_DEVICE_MAX_CONNECTIONS", None)
    else:
        os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] = "1"
    from megatron.training.arguments import parse_args, validate_args
    import megatron.core.transformer.transformer_config as transformer_config
    # TransformerConfig refuses the EP all-to-all overlap below torch 2.6 (a hang of older
    # torch, not a rule of the layout): that one check answers as torch 2.6 does.
    torch_min = transformer_config.is_torch_min_version
    transformer_config.is_torch_min_version = lambda version, *rest: version == "2.6.0" or torch_min(version, *rest)
    # validate_args refuses --use-torch-fsdp2 below torch 2.4, which brought FSDP2 (a version,
    # not a rule of the plan): that one check answers as torch 2.4 does.
    import megatron.training.arguments as arguments_module
    args_min = arguments_module.is_torch_min_version
    arguments_module.is_torch_min_version = lambda version, *rest: version == "2.4.0" or args_min(version, *rest)
    args = parse_args()
    # The entry points' args_defaults.
    validate_args(args, {"tokenizer_type": "GPT2BPETokenizer" if family == "gpt" else "BertWordPieceLowerCase"})
    report = {"tp": args.tensor_model_parallel_size, "pp": args.pipeline_model_parallel_size,
              "dp": args.data_parallel_size, "vp": args.virtual_pipeline_model_parallel_size,
              "cp": args.context_parallel_size, "ep": args.expert_model_parallel_size,
              "etp": args.expert_tensor_parallel_size, "stand_ins": stood_in}
    if t5:
        report.update(_upstream_t5_refusal(tree, args))
        return report
    report["ranks"] = _upstream_gpt_ranks(args)
    from megatron.training.arguments import core_transformer_config_from_args
    config = core_transformer_config_from_args(args)
    report["features"] = _upstream_features(args, config)
    report["groups"] = _upstream_rank_groups(args, world)
    report["moe_forward_refusal"] = _upstream_moe_forward_refusal(config)
    return report


def _upstream_features(args, config):
    """What the parsed TransformerConfig holds of the parallel degrees, the experts, the
    attention head and the precision, and which layers get_gpt_decoder_layer_specs makes MoE
    layers (1) or dense (0)."""
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_decoder_layer_specs
    from megatron.core.transformer.utils import is_layer_window_attention

    def mlp_class(spec):
        # A ModuleSpec, a class, or a functools.partial of a class (MoELayer) or of a bound
        # classmethod (MLP.as_mlp_submodule).
        mlp = spec.submodules.mlp
        target = getattr(mlp, "module", None) or getattr(mlp, "func", mlp)
        return getattr(getattr(target, "__self__", target), "__name__", repr(target))

    specs = get_gpt_decoder_layer_specs(config, use_transformer_engine=False, normalization=args.normalization)
    return {"cp": config.context_parallel_size, "ep": config.expert_model_parallel_size,
            "etp": config.expert_tensor_parallel_size, "sequence_parallel": bool(config.sequence_parallel),
            "experts": config.num_moe_experts, "top_k": config.moe_router_topk if config.num_moe_experts else None,
            "expert_ffn_hidden": config.moe_ffn_hidden_size if config.num_moe_experts else None,
            "shared_expert_ffn_hidden": config.moe_shared_expert_intermediate_size or 0,
            "capacity_factor": config.moe_expert_capacity_factor, "kv_channels": config.kv_channels,
            "fp8": config.fp8, "fp8_recipe": config.fp8_recipe if config.fp8 else None, "bf16": bool(config.bf16),
            "fp4": getattr(config, "fp4", None),
            "fp4_recipe": (str(getattr(config.fp4_recipe, "value", config.fp4_recipe))
                           if getattr(config, "fp4", None) else None),
            # The gradients' precision: fp32 for bf16 training unless --grad-reduce-in-bf16.
            "grad_reduce_fp32": bool(args.accumulate_allreduce_grads_in_fp32),
            "moe_layers": [int(mlp_class(spec) == "MoELayer") for spec in specs],
            # The data-parallel sharding: the distributed optimizer, and Megatron-FSDP's strategy.
            "distributed_optimizer": bool(args.use_distributed_optimizer),
            "fsdp": "torch_fsdp2" if args.use_torch_fsdp2 else
                    args.data_parallel_sharding_strategy if args.use_megatron_fsdp else None,
            # The EP all-to-all overlap, with the weight gradients delayed as the recipes pair them.
            "ep_overlap": [bool(args.overlap_moe_expert_parallel_comm), bool(args.delay_wgrad_compute)],
            "mtp_layers": config.mtp_num_layers or 0,
            # Sliding-window attention: the window, and which layers (1-based) Megatron windows.
            "window": list(config.window_size) if config.window_size else None,
            "windowed_layers": [int(is_layer_window_attention(config.window_size, config.window_attn_skip_freq, n))
                                for n in range(1, config.num_layers + 1)],
            # Recomputation: the granularity, and with selective the modules TransformerConfig keeps.
            "recompute": [config.recompute_granularity,
                          sorted(config.recompute_modules) if config.recompute_granularity == "selective" else None]}


def _upstream_rank_groups(args, world):
    """The rank groups initialize_model_parallel makes (its RankGenerators, order tp-cp-ep-dp-pp
    as initialize.py passes it), without creating process groups: tp, cp, dp, pp of the dense
    grid and ep, expert-tp, expert-dp of the expert grid; and Megatron's own refusal of an
    expert grid that does not divide the world (RuntimeError), if any."""
    from megatron.core.parallel_state import RankGenerator
    tp, cp, pp = args.tensor_model_parallel_size, args.context_parallel_size, args.pipeline_model_parallel_size
    etp, ep = args.expert_tensor_parallel_size, args.expert_model_parallel_size
    dense = RankGenerator(tp=tp, ep=1, dp=args.data_parallel_size, pp=pp, cp=cp, order="tp-cp-ep-dp-pp")
    groups = {name: dense.get_ranks(name) for name in ("tp", "cp", "dp", "pp")}
    if world % (etp * ep * pp) != 0:
        return {"refused": f"world_size ({world}) is not divisible by expert_tensor_model_pipeline_parallel size "
                           f"({etp * ep * pp})", **groups}
    expert = RankGenerator(tp=etp, ep=ep, dp=world // (etp * ep * pp), pp=pp, cp=1, order="tp-cp-ep-dp-pp")
    groups.update({"ep": expert.get_ranks("ep"), "etp": expert.get_ranks("tp"), "edp": expert.get_ranks("dp"),
                   "expert_pp_same": expert.get_ranks("pp") == groups["pp"]})
    return groups


def _upstream_moe_forward_refusal(config):
    """What MoELayer.forward raises in training before it routes a token (its tensor-parallel
    check), on a bare MoELayer holding `config` and a group of tp ranks; None when it passes the
    check (or the model has no experts)."""
    if not config.num_moe_experts:
        return None
    import torch
    from megatron.core.transformer.moe.moe_layer import MoELayer
    layer = MoELayer.__new__(MoELayer)
    torch.nn.Module.__init__(layer)
    layer.config = config
    layer.attn_tp_group = types.SimpleNamespace(size=lambda: config.tensor_model_parallel_size)
    layer.train()
    try:
        layer.forward(torch.zeros(1, 1, config.hidden_size))
    except ValueError as error:
        if "sequence parallelism" in str(error):
            return str(error)
    except Exception:  # past the check: the bare layer has no router or experts
        pass
    return None


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

    real_layer = transformer.ParallelTransformerLayer

    class RecordedLayer(torch.nn.Module):
        """Stands for ParallelTransformerLayer in the model: the layer number and type the fork
        builds. The real layer is built first, and dropped: its __init__ runs the fork's own
        divisions by tp (core.utils.divide of the heads and the attention projection in
        ParallelAttention and CoreAttention, of the MLP in Column/RowParallelLinear), which
        raise where tp does not divide them."""

        def __init__(self, init_method, output_layer_init_method, layer_number, layer_type=None, **kwargs):
            transformer.ParallelTransformerLayer = real_layer  # the name its __init__'s super() call takes
            try:
                real_layer(init_method, output_layer_init_method, layer_number, layer_type=layer_type, **kwargs)
            finally:
                transformer.ParallelTransformerLayer = RecordedLayer
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
    """The model's units in order as (role, segment), which Megatron model builds it ("gpt",
    "bert" or "t5"), and its YAML as read (a preset or a file)."""
    candidates = [model, os.path.join(plan_dir, model), os.path.join(ROOT, "configs", "models", model + ".yaml")]
    path = next((p for p in candidates if os.path.isfile(p)), None)
    if path is None:
        sys.exit(f"model {model!r} of the plan: no such file, nor configs/models/{model}.yaml")
    spec, units = load_yaml(path), []
    for layer in spec["layers"]:
        units += [(layer.get("role", "transformer"), layer.get("segment", ""))] * int(layer.get("repeat", 1))
    family = "t5" if any(segment for _, segment in units) else "bert" if spec.get("family") == "bert" else "gpt"
    return units, family, spec


def world_of(plan):
    """The GPUs a plan runs on, as its launch gives WORLD_SIZE: tp x cp x dp x pp."""
    return plan["tp"] * plan.get("cp", 1) * plan["dp"] * plan["pp"]


def expected_features(plan, spec):
    """What upstream's TransformerConfig must hold for the plan and its model (_upstream_features):
    a dense model's etp is Megatron's default, tp; fp8 is bf16 with Transformer Engine's recipe."""
    moe = spec.get("moe") or {}
    window = spec.get("sliding_window")
    experts = moe.get("experts")
    dtype = spec.get("dtype")
    moe_layers = []
    for layer in spec["layers"]:
        if layer.get("role", "transformer") == "transformer":
            moe_layers += [int(bool(layer.get("moe", False)))] * int(layer.get("repeat", 1))
    return {"cp": plan.get("cp", 1), "ep": plan.get("ep", 1), "etp": plan.get("etp", 1) if experts else plan["tp"],
            "sequence_parallel": bool(plan.get("sequence_parallel", False)) and plan["tp"] > 1,
            "experts": experts, "top_k": moe.get("top_k"), "expert_ffn_hidden": moe.get("expert_ffn_hidden"),
            "shared_expert_ffn_hidden": moe.get("shared_expert_ffn_hidden", 0),
            "capacity_factor": 1.0 if moe.get("token_drop") else None,
            "kv_channels": spec.get("head_dim") or spec["hidden"] // spec["heads"],
            "fp8": {"fp8": "hybrid", "mxfp8": "e4m3"}.get(dtype),
            "fp8_recipe": {"fp8": "tensorwise", "mxfp8": "mxfp8"}.get(dtype),
            "fp4": "e2m1" if dtype == "nvfp4" else None, "fp4_recipe": "nvfp4" if dtype == "nvfp4" else None,
            "bf16": dtype in ("bf16", "fp8", "mxfp8", "nvfp4"), "moe_layers": moe_layers,
            "grad_reduce_fp32": (dtype in ("bf16", "fp8", "mxfp8", "nvfp4")
                                 and not plan.get("grad_reduce_in_bf16", False)),
            # ZeRO-1 is the distributed optimizer; ZeRO-2 and -3 Megatron-FSDP's optim_grads and
            # optim_grads_params (which keeps the distributed optimizer).
            # PyTorch's FSDP2 (schedule --fsdp torch) instead: neither.
            "distributed_optimizer": plan.get("zero_stage", 0) >= 1 and plan.get("_fsdp") != "torch",
            "fsdp": "torch_fsdp2" if plan.get("_fsdp") == "torch" and plan.get("zero_stage", 0) == 3 else
                    {2: "optim_grads", 3: "optim_grads_params"}.get(plan.get("zero_stage", 0)),
            "ep_overlap": [bool(plan.get("overlap_ep_comm", False))] * 2,
            "mtp_layers": spec.get("mtp_layers", 0),
            "window": [window["tokens"], 0] if window else None,
            "windowed_layers": [int(bool(window) and (not window.get("full_every") or n % window["full_every"] != 0))
                                for n in range(1, len(moe_layers) + 1)],
            "recompute": [None if plan.get("recompute", "none") == "none" else plan["recompute"],
                          sorted(plan.get("recompute_modules", ["core_attn"]))
                          if plan.get("recompute") == "selective" else None]}


def expected_groups(plan):
    """The rank groups of fasop-cpp's launch layout (launch_layout.cc's coordinates_of_rank):
    stages of tp x cp x dp contiguous ranks, tp fastest, then cp, then dp; the experts of a
    stage folded over the same ranks, etp fastest, then ep, then expert-dp."""
    tp, cp, dp, pp = plan["tp"], plan.get("cp", 1), plan["dp"], plan["pp"]
    ep, etp = plan.get("ep", 1), plan.get("etp", 1)
    stage = tp * cp * dp

    def groups(sizes, axis):
        """Ranks of a mixed-radix grid (sizes fastest first) grouped along `axis`."""
        import itertools
        strides = [1]
        for size in sizes[:-1]:
            strides.append(strides[-1] * size)
        others = [range(n) for i, n in enumerate(sizes) if i != axis]
        out = []
        for rest in itertools.product(*others):
            coords = list(rest)
            coords.insert(axis, 0)
            base = sum(c * st for c, st in zip(coords, strides))
            out.append([base + k * strides[axis] for k in range(sizes[axis])])
        return sorted(out)

    want = {name: groups([tp, cp, dp, pp], axis) for axis, name in enumerate(("tp", "cp", "dp", "pp"))}
    if plan.get("ep", 1) > 1 or plan.get("etp", 1) > 1:
        expert = [etp, ep, stage // (ep * etp), pp]
        want.update({name: groups(expert, axis) for axis, name in ((0, "etp"), (1, "ep"), (2, "edp"))})
    return want


def compare_upstream(plan, spec, got):
    """The first difference between what upstream's config and rank groups hold and the plan, or None."""
    want = expected_features(plan, spec)
    for key, value in want.items():
        if got["features"].get(key) != value:
            return f"Megatron's config has {key} {got['features'].get(key)!r}, the plan and model say {value!r}"
    groups = got["groups"]
    if "refused" in groups:
        return groups["refused"]
    for name, ranks in expected_groups(plan).items():
        if sorted(sorted(g) for g in groups[name]) != ranks:
            return f"Megatron's {name} groups {groups[name][:3]}... differ from the launch layout's {ranks[:3]}..."
    if "expert_pp_same" in groups and not groups["expert_pp_same"]:
        return "Megatron's expert grid has other pipeline groups than its dense grid"
    if got.get("moe_forward_refusal"):
        return f"MoELayer.forward refuses: {got['moe_forward_refusal']}"
    return None


def features_text(plan, spec):
    """' cp 2 ep 8 etp 2, 8 experts top-2 on 15 of 16 layers, fp8 tensorwise': what the line checked."""
    f = expected_features(plan, spec)
    text = "".join(f" {k} {plan[k]}" for k in ("cp", "ep", "etp") if plan.get(k, 1) > 1)
    if f["experts"]:
        text += (f", {f['experts']} experts top-{f['top_k']} on {sum(f['moe_layers'])} of {len(f['moe_layers'])} "
                 f"layers" + (", shared expert" if f["shared_expert_ffn_hidden"] else "") +
                 (", capacity 1.0" if f["capacity_factor"] else ", dropless"))
    if spec.get("head_dim"):
        text += f", kv_channels {f['kv_channels']}"
    if f["fp8"]:
        text += f", fp8 {f['fp8']}/{f['fp8_recipe']}"
    if f.get("fp4"):
        text += f", fp4 {f['fp4']}/{f['fp4_recipe']}"
    return text


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
    pipeline rank r's share in v chunks; chunk c of rank r is model chunk c x pp + r, so the
    layers are numbered chunk by chunk, the embedding in model chunk 0 (rank 0's chunk 0) and the
    loss in the last (rank pp-1's last). Megatron's even split (as many layers on every stage, v
    dividing them) has v equal chunks of layers; any other partition is written as a layout whose
    chunks split each stage's units (embedding and loss counted) as evenly as they go, the larger
    chunks first, a last rank with fewer units than chunks leaving its first ones empty
    (megatron_partition.h megatron_interleaved_layout)."""
    pp = len(stages)
    counts = [len(s["layers"]) for s in stages]
    sizes = {}  # (rank, chunk) -> transformer layers
    if len(set(counts)) == 1 and counts[0] % vp == 0:
        sizes = {(r, c): counts[0] // vp for r in range(pp) for c in range(vp)}
    else:
        for r, s in enumerate(stages):
            units = counts[r] + int(s["embedding"]) + int(s["loss"])
            # A last rank with fewer units than chunks fills its last ones: the loss closes the model.
            fill_last = r == pp - 1 and units < vp
            chunk = [units // vp + (1 if (vp - 1 - c if fill_last else c) < units % vp else 0) for c in range(vp)]
            chunk[0] -= int(s["embedding"])
            chunk[-1] -= int(s["loss"])
            for c in range(vp):
                sizes[(r, c)] = chunk[c]
    start, numbers = 0, {}
    for j in range(pp * vp):  # model chunk j = c * pp + r
        size = sizes[(j % pp, j // pp)]
        numbers[j] = list(range(start + 1, start + size + 1))
        start += size
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
PARSED_UPSTREAM = []  # the plans whose emitted arguments upstream's parse_args and validate_args took


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
        # Runs of equal stages, "(t*2|)*14", written out first, as Megatron's parser does.
        layout = out[at]
        while "(" in layout:
            layout = re.sub(r"\(([^()]*)\)\*(\d+)", lambda m: m[1] * int(m[2]), layout)
        # A stage: the embedding, its layers, then the MTP modules and the loss (kept as they are).
        stages = [re.fullmatch(r"(E?)(?:t(?:\*(\d+))?)?((?:m(?:\*\d+)?)?L?)", stage) for stage in layout.split("|")]
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
    return megatron_agrees(label, reason, reason, flavour, tree, world_of(plan), family, tokens,
                           os.path.join(work, f"{name}.{flavour}.refused.log"), "raised")


def megatron_agrees(label, reason, megatron_reason, flavour, tree, world, family, tokens, log, key):
    """After fasop-cpp refused a plan naming `reason`: Megatron, built from `tokens`, must fail
    saying `megatron_reason`, in its parser or (`key` of what the build reports) where it runs."""
    got, error = megatron_builds(flavour, tree, world, family, tokens, log)
    said = error if got is None else got.get(key)
    if not said or megatron_reason not in said:
        print(f"FAIL  {label}: fasop-cpp refuses naming {reason!r}, but Megatron says {said!r}")
        return False
    print(f"ok    {label}: refused by fasop-cpp naming {reason!r}; Megatron's own code agrees: {said[:100]}")
    return True


def in_work(arg, work):
    """A search argument, with '@name' the model file of that name in the work directory's models/."""
    return os.path.join(work, "models", arg[1:]) if arg.startswith("@") else arg


def write_models(work):
    """The MODELS files, in the work directory's models/: copies of presets with another dtype, or text."""
    os.makedirs(os.path.join(work, "models"), exist_ok=True)
    for name, model in MODELS.items():
        if isinstance(model, tuple):
            preset, dtype = model
            with open(os.path.join(ROOT, "configs", "models", preset + ".yaml")) as f:
                text = f.read()
            text = re.sub(r"^name: .*$", "name: " + name[:-len(".yaml")], text, count=1, flags=re.M)
            if re.search(r"^dtype: ", text, re.M):
                text = re.sub(r"^dtype: .*$", "dtype: " + dtype, text, count=1, flags=re.M)
            else:
                text += f"dtype: {dtype}\n"
        else:
            text = model
        with open(os.path.join(work, "models", name), "w") as f:
            f.write(text)


def edit_plan(source, target, edit, work):
    """`source`'s plan file written to `target` with `edit`'s fields: cp, ep, etp (cp divides the
    plan's dp: the same GPUs), sequence_parallel False (the line dropped), model ('@name' a file
    of the work directory), as a user would edit it."""
    with open(source) as f:
        text = f.read()

    def set_key(text, key, value):
        line = f"{key}: {value}"
        if re.search(rf"^{key}: .*$", text, re.M):
            return re.sub(rf"^{key}: .*$", lambda _: line, text, count=1, flags=re.M)
        return re.sub(r"^(pp: .*)$", lambda m: m[1] + "\n" + line, text, count=1, flags=re.M)

    if "cp" in edit:
        dp = int(re.search(r"^dp: (\d+)$", text, re.M)[1])
        text = set_key(text, "dp", dp // edit["cp"])
    for key in ("cp", "ep", "etp"):
        if key in edit:
            text = set_key(text, key, edit[key])
    if edit.get("sequence_parallel") is False:
        text = re.sub(r"^sequence_parallel: true\n", "", text, flags=re.M)
    if "model" in edit:
        text = set_key(text, "model", json.dumps(in_work(edit["model"], work)))
    with open(target, "w") as f:
        f.write(text)


def check_edited_refusal(refusal, searched, tree, fasop_cpp, work):
    """One line: the edited plan must be refused by fasop-cpp naming the reason, and where
    Megatron's code can say so here, the base plan's arguments edited alike must fail in
    upstream Megatron-LM for the same reason (its validate_args, or MoELayer.forward's check)."""
    name, base, edit, reason, megatron = refusal
    label = f"{name} [upstream, refused]"
    if base not in searched or not os.path.isfile(searched[base]):
        print(f"FAIL  {label}: its base plan {base} was not made")
        return False
    plan_path = os.path.join(work, name + ".yaml")
    edit_plan(searched[base], plan_path, edit, work)
    emitted = run([fasop_cpp, "schedule", "--plan", plan_path, "--format", "megatron"])
    said = (emitted.stderr or emitted.stdout).strip()
    if emitted.returncode == 0 or reason not in emitted.stderr or len(said.splitlines()) != 1:
        print(f"FAIL  {label}: expected a one-line refusal naming {reason!r}, got exit {emitted.returncode}: {said[:300]}")
        return False
    if isinstance(megatron, str):
        print(f"ok    {label}: refused by fasop-cpp naming {reason!r}; not confirmed by Megatron here: {megatron}")
        return True
    if tree is None:
        print(f"ok    {label}: refused by fasop-cpp naming {reason!r} (no upstream tree to confirm it)")
        return True
    flags, world, megatron_reason = megatron
    base_args = os.path.join(work, f"{base}.upstream.sh")
    if not os.path.isfile(base_args):
        print(f"FAIL  {label}: the base plan's arguments ({base_args}) were not written")
        return False
    with open(base_args) as f:
        tokens = shell_words(f.read())
    for flag, value in flags.items():
        if value is None:
            tokens = [t for t in tokens if t != flag]
        else:
            tokens[tokens.index(flag) + 1] = value
    _, family, _ = model_units(load_yaml(plan_path)["model"], work)
    return megatron_agrees(label, reason, megatron_reason, "upstream", tree, world, family, tokens,
                           os.path.join(work, f"{name}.refused.log"), "moe_forward_refusal")


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


def check_flavour(name, flavour, expect, plan_path, plan, model, tree, fasop_cpp, work):
    """One line for one plan in one flavour; False on a mismatch."""
    label = f"{name} [{flavour}]"
    units, family, _ = model
    cmd = [fasop_cpp, "schedule", "--plan", plan_path, "--format", "megatron"]
    if flavour == "fasop":
        cmd += ["--megatron-flavor", "fasop"]
    if plan.get("_fsdp"):
        cmd += ["--fsdp", plan["_fsdp"]]
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
    return check_built(label, shell_words(emitted.stdout), plan, model, flavour, tree, work + "/" + name)


def check_built(label, tokens, plan, model, flavour, tree, log_stem):
    """What that Megatron builds per rank from `tokens` must be the plan's partition (and
    upstream's config and rank groups the plan's degrees, experts and precision), and the same
    arguments with a layer moved must not pass."""
    units, family, spec = model
    world = world_of(plan)
    want = expected_ranks(plan, units)
    got, problem = megatron_builds(flavour, tree, world, family, tokens, f"{log_stem}.{flavour}.log")
    if got is None:
        print(f"FAIL  {label}: Megatron refused the arguments: {problem}")
        return False
    if (got["tp"], got["pp"], got["dp"]) != (plan["tp"], plan["pp"], plan["dp"]):
        problem = f"Megatron runs tp {got['tp']} pp {got['pp']} dp {got['dp']}"
    if flavour == "upstream":
        PARSED_UPSTREAM.append(label)  # upstream's parse_args and validate_args took the arguments
    problem = problem or compare(want, got["ranks"])
    if flavour == "upstream" and family != "t5":
        problem = problem or compare_upstream(plan, spec, got)
    line = f"tp {got['tp']} pp {got['pp']} dp {got['dp']}"
    if flavour == "upstream" and family != "t5":
        line += features_text(plan, spec)
    if got.get("split_rank") is not None:
        line += f", split rank {got['split_rank']}"
    if problem:
        print(f"FAIL  {label}: {line}: {problem}")
        return False
    if plan["pp"] == 1:
        print(f"ok    {label}: {line}, layers {summary(want)} as planned (one stage: no layer to move)")
        return True
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
    parser.add_argument("--only", help="run only these plans and refusals (names as printed, comma-separated; "
                                       "a refusal needs its base plan named too)")
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
    write_models(work)
    searched = {}  # plan name -> its search result, before any edit
    only = set(opts.only.split(",")) if opts.only else None
    for name, search, expect, *edit in PLANS:
        if only and name not in only:
            continue
        plan_path = os.path.join(work, name + ".yaml")
        searched[name] = os.path.join(work, name + ".searched.yaml")
        found = run([opts.fasop_cpp, "search", *[in_work(a, work) for a in search], "--save-plan", searched[name],
                     "--out-dir", os.path.join(work, "logs"), "--quiet"])
        if found.returncode != 0:
            print(f"FAIL  {name}: fasop-cpp search failed: {found.stderr.strip()}")
            all_ok = False
            continue
        edit_plan(searched[name], plan_path, edit[0] if edit else {}, work)
        plan = load_yaml(plan_path)
        if "fsdp" in expect:  # schedule --fsdp: how a ZeRO-3 plan shards
            plan["_fsdp"] = expect["fsdp"]
        model = model_units(plan["model"], work)
        for flavour in ("upstream", "fasop"):
            all_ok &= check_flavour(name, flavour, expect[flavour], plan_path, plan, model, trees[flavour],
                                    opts.fasop_cpp, work)
    for refusal in REFUSALS:
        if only and refusal[0] not in only:
            continue
        all_ok &= check_edited_refusal(refusal, searched, trees["upstream"], opts.fasop_cpp, work)
    for flavour, names in sorted(STOOD_IN.items()):
        print(f"stand-ins ({flavour}, not installed here or GPU-only): {', '.join(sorted(names))}")
    if trees["upstream"]:
        print(f"upstream's parse_args and validate_args took the arguments of {len(PARSED_UPSTREAM)} plan(s)")
    print(f"plans, emitted arguments and logs in {work}")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
