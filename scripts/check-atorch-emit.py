#!/usr/bin/python3
"""Runs ATorch's own strategy code on what `fasop-cpp schedule --format atorch` writes.

Usage:
    /usr/bin/python3 scripts/check-atorch-emit.py [--atorch-src DIR] [--fasop BUILD/fasop-cpp] [--keep DIR]
        [--only NAME,...]

DIR (or the environment variable ATORCH_SRC) is ATorch's source: the folder holding its `atorch`
package. ATorch lived in dlrover's atorch/ until it moved to its own repository (November 2024);
dlrover's last commit with it, bfd04ef1df01, gives it with

    git -C dlrover archive bfd04ef1df01 atorch | tar -x -C /tmp/atorch-src   # DIR=/tmp/atorch-src/atorch

Needs torch (Debian's python3-torch 1.13 on CPU will do) and PyYAML. For each plan below the script
runs `fasop-cpp search --save-plan` on the shipped model and cluster and `schedule --format atorch`,
executes the emitted module and gives its `strategy` to ATorch's code:

  * auto_accelerate's load_strategy path: accelerate.get_strategy (the list into a Strategy, the
    semi-automatic optimisations made tunable), OptimizationLibrary.validate_strategy and
    adjust_strategy for the plan's world size (nothing may change), every name looked up in
    OptimizationLibrary;
  * parallel_mode: distributed.get_ranks_in_same_group gives each rank's tensor, data and pipe
    groups, which must have the plan's sizes and the plan's rank order (t + tp*d + tp*dp*s);
  * with pp > 1, MixedParallelOptimization.tune on a small stand-in of the family's Hugging Face
    model (same class and module names, same call order, same layer count, tiny widths): its
    pipe_config's insert_before_nodes, nstages and chunks; then ATorch's insert_split_point and
    torch.fx's split_module cut the traced graph, and each stage's layers must be the plan's
    partition. With tp > 1 the same tune runs ATorch's tensor-parallel planner (its "base" one:
    the emitted "mip" needs pyomo and glpk) on the tensor group. Every key of the emitted
    mixed_parallel config (its pipe_config and tensor_config too), and of tensor_parallel's, must
    be one that tune reads: ATorch ignores any other, a misspelt one taking its default;
  * the transforms of every optimisation and ModelContext.adjust_wrappers: what ATorch keeps
    (amp and checkpoint moved into the pipeline, ZeRO's optimizer or FSDP units) and drops;
  * record_user_defined_half_precision_dtype (amp's dtype), to_module_class_by_name (the
    checkpoint and FSDP layer class found in the model).

Then the plans fasop-cpp refuses for ATorch: each must fail with its one-line message, and ATorch's
code shows what it would have dropped (adjust_wrappers, its tensor planner on GPT-2).

Not run here, as the last line says: PiPPy's compile and its RPC runtime (pippy is not installed: its
`pipe_split` marker, MultiUseParameterConfig and LossWrapper are stood in), the MIP solve, anything
on a GPU (FSDP's and amp's transforms are asked with torch.cuda answering as an H100 would). Packages ATorch imports but these checks do not use (grpc, fairscale, transformers,
safetensors, networkx, pippy, when missing) are stood in by this script only. Prints one line per plan
and exits 1 on any mismatch.
"""
import argparse
import copy
import dataclasses
import importlib.abc
import importlib.machinery
import importlib.metadata
import os
import subprocess
import sys
import tempfile
import types

import torch
from torch import nn

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# ----------------------------------------------------------------------------------------------
# Stand-ins for what ATorch imports and this check does not exercise.
# ----------------------------------------------------------------------------------------------


class _AnyClass(type):
    """A class whose every attribute is another such class: the names a stood-in package exports."""

    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _AnyClass(name, (), {"_stand_in": True})

    def __call__(cls, *args, **kwargs):
        if not cls.__dict__.get("_stand_in"):  # a class derived from a stand-in
            return super().__call__(*args, **kwargs)
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]  # used as a decorator
        return super().__call__()


class _StandInModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = _AnyClass(name, (), {"_stand_in": True})
        setattr(self, name, value)
        return value


class _StandInFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves `roots` (top-level package names) and their submodules as stand-in modules, with the
    attributes `presets` gives by module name."""

    def __init__(self, roots, presets):
        self.roots, self.presets = set(roots), presets

    def find_spec(self, fullname, path, target=None):
        if fullname.split(".")[0] in self.roots:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _StandInModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        for name, value in self.presets.get(module.__name__, {}).items():
            setattr(module, name, value)


def _missing(name):
    try:
        importlib.import_module(name)
        return False
    except ImportError:
        return True


def _torch_on_python_311():
    """torch 1.13's sharded_tensor metadata gives a dataclass field an unhashable dataclass default,
    which Python 3.11 refuses; FSDP imports it. Hash such defaults by identity while torch's
    distributed packages load."""
    original = dataclasses._get_field

    def get_field(cls, name, *rest):
        default = cls.__dict__.get(name, dataclasses.MISSING)
        if isinstance(default, dataclasses.Field):
            default = default.default
        if dataclasses.is_dataclass(default) and not isinstance(default, type) and type(default).__hash__ is None:
            type(default).__hash__ = object.__hash__
        return original(cls, name, *rest)

    dataclasses._get_field = get_field
    try:
        importlib.import_module("torch.distributed.fsdp")
    finally:
        dataclasses._get_field = original


class _TinyDiGraph:
    """What ATorch's SimpleTopology uses of networkx.DiGraph."""

    def __init__(self):
        self._nodes, self._edges = {}, {}

    def add_node(self, node, **attributes):
        self._nodes.setdefault(node, {}).update(attributes)

    def add_edge(self, a, b, **attributes):
        self.add_node(a)
        self.add_node(b)
        self._edges.setdefault((a, b), {}).update(attributes)

    def subgraph(self, nodes):
        sub = _TinyDiGraph()
        keep = set(nodes)
        for node in nodes:
            sub.add_node(node, **self._nodes[node])
        for (a, b), attributes in self._edges.items():
            if a in keep and b in keep:
                sub.add_edge(a, b, **attributes)
        return sub

    def number_of_nodes(self):
        return len(self._nodes)

    @property
    def nodes(self):
        return self._nodes

    @property
    def edges(self):
        return self._edges


def _pippy_stand_in():
    import enum

    def pipe_split():
        """PiPPy's marker of a stage boundary in a traced graph."""

    class MultiUseParameterConfig(enum.Enum):
        TRANSMIT = 1
        REPLICATE = 2

    class LossWrapper(torch.nn.Module):
        def __init__(self, module, loss_fn):
            super().__init__()
            self.module, self.loss_fn = module, loss_fn

    return {"pipe_split": pipe_split, "MultiUseParameterConfig": MultiUseParameterConfig, "LossWrapper": LossWrapper}


def load_atorch(atorch_src):
    """Imports ATorch from `atorch_src` with stand-ins for what is missing; returns the names of
    the stood-in packages."""
    sys.path.insert(0, atorch_src)
    os.environ.setdefault("ATORCH_DISABLE_ADDON", "1")
    _torch_on_python_311()
    if _missing("packaging.version"):  # ATorch compares versions with it: the same library, vendored by pip
        import pip._vendor.packaging.version as version

        sys.modules["packaging"], sys.modules["packaging.version"] = sys.modules["pip._vendor.packaging"], version

    presets = {"safetensors.torch": {"_TYPES": {}}, "networkx": {"DiGraph": _TinyDiGraph}}
    presets.update(transformers_presets())
    pippy = _pippy_stand_in()
    presets["pippy.IR"] = pippy
    presets["pippy"] = {"IR": types.SimpleNamespace(**pippy)}
    stood_in = [name for name in ("grpc", "fairscale", "transformers", "safetensors", "networkx", "pippy")
                if _missing(name)]
    sys.meta_path.insert(0, _StandInFinder(stood_in, presets))
    real_version = importlib.metadata.version

    def version(name):  # ATorch compares the versions of some packages it imports
        if name.split(".")[0] in stood_in:
            return "4.36.2" if name == "transformers" else "0.0.1"
        return real_version(name)

    importlib.metadata.version = version
    importlib.import_module("atorch.auto.accelerate")

    import gc

    gc.freeze()  # ATorch's shape interpreters gc.collect() at every node: not over the imports again
    if not torch.distributed.is_initialized():  # a one-process gloo group: ATorch's transforms ask for it
        import atexit

        store = tempfile.NamedTemporaryFile(prefix="check-atorch-pg-", delete=False).name
        atexit.register(lambda: os.path.exists(store) and os.unlink(store))
        torch.distributed.init_process_group("gloo", init_method="file://" + store, rank=0, world_size=1)
    return stood_in


# ----------------------------------------------------------------------------------------------
# Stand-ins of the Hugging Face models: transformers' class and module names and the order in
# which each forward calls its modules (modeling_gpt2.py, modeling_llama.py, modeling_bert.py),
# with tiny widths, no rotary or position subtleties, and no masks. ATorch's trace and cuts see
# the module names and call order only, which is what the emitted split points name.
# ----------------------------------------------------------------------------------------------
HIDDEN, HEADS, VOCAB, SEQUENCE = 8, 2, 32, 4


def _attend(q, k, v, dropout):
    weights = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) / 2.0, dim=-1)
    return torch.matmul(dropout(weights), v)


class Conv1D(nn.Module):
    """transformers.pytorch_utils.Conv1D: a linear layer with its weight transposed; no torch.nn
    module, so ATorch's trace goes through it."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.randn(nx, nf) * 0.02)
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        return torch.matmul(x, self.weight) + self.bias


class GPT2Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.split_size, self.num_heads = HIDDEN, HEADS
        self.c_attn, self.c_proj = Conv1D(3 * HIDDEN, HIDDEN), Conv1D(HIDDEN, HIDDEN)
        self.attn_dropout, self.resid_dropout = nn.Dropout(0.0), nn.Dropout(0.0)

    def forward(self, hidden_states):
        q, k, v = self.c_attn(hidden_states).split(self.split_size, dim=2)
        return self.resid_dropout(self.c_proj(_attend(q, k, v, self.attn_dropout)))


class GPT2MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_fc, self.c_proj = Conv1D(4 * HIDDEN, HIDDEN), Conv1D(HIDDEN, 4 * HIDDEN)
        self.act, self.dropout = nn.GELU(), nn.Dropout(0.0)

    def forward(self, hidden_states):
        return self.dropout(self.c_proj(self.act(self.c_fc(hidden_states))))


class GPT2Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1, self.attn, self.ln_2, self.mlp = nn.LayerNorm(HIDDEN), GPT2Attention(), nn.LayerNorm(HIDDEN), GPT2MLP()

    def forward(self, hidden_states):
        hidden_states = self.attn(self.ln_1(hidden_states)) + hidden_states
        return self.mlp(self.ln_2(hidden_states)) + hidden_states


class GPT2Model(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(VOCAB, HIDDEN), nn.Embedding(SEQUENCE, HIDDEN)
        self.drop = nn.Dropout(0.0)
        self.h = nn.ModuleList(GPT2Block() for _ in range(layers))
        self.ln_f = nn.LayerNorm(HIDDEN)

    def forward(self, input_ids, position_ids):
        hidden_states = self.drop(self.wte(input_ids) + self.wpe(position_ids))
        for block in self.h:
            hidden_states = block(hidden_states)
        return self.ln_f(hidden_states)


class GPT2LMHeadModel(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.transformer = GPT2Model(layers)
        self.lm_head = nn.Linear(HIDDEN, VOCAB, bias=False)

    def forward(self, input_ids, position_ids, labels):
        return self.lm_head(self.transformer(input_ids, position_ids))


class LlamaRMSNorm(nn.Module):
    """No torch.nn module: ATorch's trace goes through it."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(HIDDEN))

    def forward(self, hidden_states):
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        return self.weight * (hidden_states * torch.rsqrt(variance + 1e-6))


class LlamaAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.num_heads = HEADS
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = (nn.Linear(HIDDEN, HIDDEN, bias=False) for _ in range(4))
        self.dropout = nn.Dropout(0.0)

    def forward(self, hidden_states):
        q, k, v = self.q_proj(hidden_states), self.k_proj(hidden_states), self.v_proj(hidden_states)
        return self.o_proj(_attend(q, k, v, self.dropout))


class LlamaMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate_proj, self.up_proj = nn.Linear(HIDDEN, 2 * HIDDEN, bias=False), nn.Linear(HIDDEN, 2 * HIDDEN, bias=False)
        self.down_proj, self.act_fn = nn.Linear(2 * HIDDEN, HIDDEN, bias=False), nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.self_attn, self.mlp = LlamaAttention(), LlamaMLP()
        self.input_layernorm, self.post_attention_layernorm = LlamaRMSNorm(), LlamaRMSNorm()

    def forward(self, hidden_states):
        hidden_states = self.self_attn(self.input_layernorm(hidden_states)) + hidden_states
        return self.mlp(self.post_attention_layernorm(hidden_states)) + hidden_states


class LlamaModel(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.embed_tokens = nn.Embedding(VOCAB, HIDDEN)
        self.layers = nn.ModuleList(LlamaDecoderLayer() for _ in range(layers))
        self.norm = LlamaRMSNorm()

    def forward(self, input_ids):
        hidden_states = self.embed_tokens(input_ids)
        for layer in self.layers:
            hidden_states = layer(hidden_states)
        return self.norm(hidden_states)


class LlamaForCausalLM(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.model = LlamaModel(layers)
        self.lm_head = nn.Linear(HIDDEN, VOCAB, bias=False)

    def forward(self, input_ids, position_ids, labels):
        return self.lm_head(self.model(input_ids))


class BertSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.num_attention_heads = HEADS
        self.query, self.key, self.value = (nn.Linear(HIDDEN, HIDDEN) for _ in range(3))
        self.dropout = nn.Dropout(0.0)

    def forward(self, hidden_states):
        return _attend(self.query(hidden_states), self.key(hidden_states), self.value(hidden_states), self.dropout)


class BertSelfOutput(nn.Module):
    def __init__(self):
        super().__init__()
        self.dense, self.LayerNorm, self.dropout = nn.Linear(HIDDEN, HIDDEN), nn.LayerNorm(HIDDEN), nn.Dropout(0.0)

    def forward(self, hidden_states, input_tensor):
        return self.LayerNorm(self.dropout(self.dense(hidden_states)) + input_tensor)


class BertAttention(nn.Module):
    """Registered by ATorch as shardable (MegatronBertAttention): a leaf of its trace."""

    def __init__(self):
        super().__init__()
        self.self, self.output = BertSelfAttention(), BertSelfOutput()

    def forward(self, hidden_states):
        return self.output(self.self(hidden_states), hidden_states)


class BertIntermediate(nn.Module):
    def __init__(self):
        super().__init__()
        self.dense, self.intermediate_act_fn = nn.Linear(HIDDEN, 4 * HIDDEN), nn.GELU()

    def forward(self, hidden_states):
        return self.intermediate_act_fn(self.dense(hidden_states))


class BertOutput(BertSelfOutput):
    def __init__(self):
        super().__init__()
        self.dense = nn.Linear(4 * HIDDEN, HIDDEN)


class BertLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention, self.intermediate, self.output = BertAttention(), BertIntermediate(), BertOutput()

    def forward(self, hidden_states):
        attention_output = self.attention(hidden_states)
        return self.output(self.intermediate(attention_output), attention_output)


class BertEmbeddings(nn.Module):
    def __init__(self):
        super().__init__()
        self.word_embeddings, self.position_embeddings = nn.Embedding(VOCAB, HIDDEN), nn.Embedding(SEQUENCE, HIDDEN)
        self.LayerNorm, self.dropout = nn.LayerNorm(HIDDEN), nn.Dropout(0.0)

    def forward(self, input_ids, position_ids):
        return self.dropout(self.LayerNorm(self.word_embeddings(input_ids) + self.position_embeddings(position_ids)))


class BertEncoder(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.layer = nn.ModuleList(BertLayer() for _ in range(layers))

    def forward(self, hidden_states):
        for layer in self.layer:
            hidden_states = layer(hidden_states)
        return hidden_states


class BertPooler(nn.Module):
    def __init__(self):
        super().__init__()
        self.dense, self.activation = nn.Linear(HIDDEN, HIDDEN), nn.Tanh()

    def forward(self, hidden_states):
        return self.activation(self.dense(hidden_states[:, 0]))


class BertModel(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.embeddings, self.encoder, self.pooler = BertEmbeddings(), BertEncoder(layers), BertPooler()

    def forward(self, input_ids, position_ids):
        sequence_output = self.encoder(self.embeddings(input_ids, position_ids))
        return sequence_output, self.pooler(sequence_output)


class BertPreTrainingHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.predictions, self.seq_relationship = nn.Linear(HIDDEN, VOCAB), nn.Linear(HIDDEN, 2)

    def forward(self, sequence_output, pooled_output):
        return self.predictions(sequence_output) + self.seq_relationship(pooled_output).sum(-1, keepdim=True).unsqueeze(1)


class BertForPreTraining(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.bert, self.cls = BertModel(layers), BertPreTrainingHeads()

    def forward(self, input_ids, position_ids, labels):
        return self.cls(*self.bert(input_ids, position_ids))


STAND_INS = {"gpt2": GPT2LMHeadModel, "llama": LlamaForCausalLM, "bert": BertForPreTraining}


def transformers_presets():
    """What ATorch imports by name from transformers, where these stand-ins replace it."""
    bert = {"BertAttention": BertAttention, "BertSelfAttention": BertSelfAttention, "BertSelfOutput": BertSelfOutput}
    return {"transformers.models.bert.modeling_bert": bert, "transformers.pytorch_utils": {"Conv1D": Conv1D},
            "transformers.modeling_utils": {"PreTrainedModel": type("PreTrainedModel", (nn.Module,), {})}}


# Each stand-in's forward takes (input_ids, position_ids, labels); the loss is the LM loss.
class TokenBatches(torch.utils.data.Dataset):
    def __init__(self, size):
        self.size = size

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        tokens = torch.randint(0, VOCAB, (SEQUENCE,))
        return tokens, torch.arange(SEQUENCE), tokens


def lm_loss(data, output):
    return nn.functional.cross_entropy(output.reshape(-1, VOCAB), data[-1].reshape(-1))


# Where each family's units are: the layer list, and the post-process's modules (the embedding's
# are the rest).
UNIT_PATHS = {
    "gpt2": ("transformer.h", ("transformer.ln_f", "lm_head")),
    "llama": ("model.layers", ("model.norm", "lm_head")),
    "bert": ("bert.encoder.layer", ("bert.pooler", "cls")),
}
LAYER_CLASSES = {"gpt2": GPT2Block, "llama": LlamaDecoderLayer, "bert": BertLayer}
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


# ----------------------------------------------------------------------------------------------
# The plans, and the checks of ATorch's code on what is emitted for them.
# ----------------------------------------------------------------------------------------------


class Case:
    def __init__(self, name, what, search, covers):
        self.name, self.what, self.search, self.covers = name, what, search, covers


PLANS = [
    Case("gpt2xl-heterogeneous", "uneven partition (FASOP's heterogeneous search, plan 2: p4d first)",
         ["--model", "gpt2xl", "--heterogeneous", "--rank", "2"], lambda p: len(set(p["partition"])) > 1),
    Case("llama2-7b-tp2-pp4-dp16", "tp, pp and dp > 1, ZeRO-1",
         ["--model", "llama2-7b", "--cluster", "aws-h100", "--fix", "tp=2,pp=4,mbs=2,recompute=none,zero=1"],
         lambda p: p["tp"] > 1 and p["pp"] > 1 and p["dp"] > 1),
    Case("bert-tp2-pp2-recompute-zero1", "recomputation and ZeRO-1 beside tp and pp",
         ["--model", "bert", "--fix", "tp=2,pp=2,recompute=full,zero=1"],
         lambda p: p["recompute"] == "full" and p["zero_stage"] == 1 and p["pp"] > 1),
    Case("llama2-7b-zero3-recompute", "ZeRO-3 (FSDP) and recomputation, dp alone",
         ["--model", "llama2-7b", "--cluster", "aws-h100", "--fix", "tp=1,pp=1,zero=3,recompute=full"],
         lambda p: p["zero_stage"] == 3 and p["recompute"] == "full"),
    Case("bert-zero2", "ZeRO-2 (FSDP's SHARD_GRAD_OP), dp alone",
         ["--model", "bert", "--fix", "tp=1,pp=1,zero=2,recompute=none"], lambda p: p["zero_stage"] == 2),
    Case("bert-tp2", "tp alone (tensor_parallel)", ["--model", "bert", "--fix", "tp=2,pp=1,zero=1,recompute=none"],
         lambda p: p["tp"] > 1 and p["pp"] == 1),
]

class Mismatch(Exception):
    pass


def expect(condition, message):
    if not condition:
        raise Mismatch(message)


class ReadKeys(dict):
    """An emitted config (and the dicts in it) that records which of its keys ATorch's code reads
    (get, [], in). A key it never reads, misspelt or unknown to ATorch, is ignored there: ATorch
    takes its default instead (nstages: the pipe group's size, pipe_schedule: Interleaved1F1B)."""

    def __init__(self, config):
        super().__init__((key, ReadKeys(value) if isinstance(value, dict) else value) for key, value in config.items())
        self.read = set()

    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self.read.add(key)
        return super().get(key, default)

    def __contains__(self, key):
        self.read.add(key)
        return super().__contains__(key)

    def unread(self, prefix=""):
        """The keys never read, as paths ("pipe_config.nstage"), in the dicts that were read."""
        out = [prefix + str(key) for key in self if key not in self.read]
        for key, value in dict.items(self):
            if isinstance(value, ReadKeys) and key in self.read:
                out += value.unread(f"{prefix}{key}.")
        return out


def tune_reading(optimization, context, config, strategy, emitted):
    """optimization.tune(context, config, strategy), then every key of the `emitted` config (its
    name in the strategy) must have been read by ATorch's tune: a misspelt key fails, also where
    tune fails without it."""
    config = ReadKeys(config)
    try:
        result = optimization.tune(context, config, strategy)
    finally:
        unread = config.unread()
        expect(not unread, f"{emitted}: ATorch's {type(optimization).__name__}.tune reads no {', '.join(unread)}")
    return result


class GpuAnswers:
    """torch.cuda's answers as an H100 gives them, while ATorch's transforms look (FSDP refuses
    to be configured without a GPU, amp asks whether bf16 is supported); nothing runs on it."""

    def __enter__(self):
        self.saved = torch.cuda.is_available, torch.cuda.is_bf16_supported
        torch.cuda.is_available, torch.cuda.is_bf16_supported = (lambda: True), (lambda: True)

    def __exit__(self, *exc):
        torch.cuda.is_available, torch.cuda.is_bf16_supported = self.saved


def run(command):
    return subprocess.run(command, capture_output=True, text=True)


def load_model_file(name):
    import yaml

    with open(os.path.join(ROOT, "configs", "models", name + ".yaml")) as f:
        spec = yaml.safe_load(f)
    units = []
    for layer in spec["layers"]:
        units += [layer] * layer.get("repeat", 1)
    return spec, units


def emit(fasop, case, work):
    """search --save-plan, then schedule --format atorch; the plan (YAML) and the emitted module's
    names, as Python executes them."""
    import runpy

    import yaml

    plan_path, py_path = os.path.join(work, case.name + ".yaml"), os.path.join(work, case.name + ".py")
    searched = run([fasop, "search", *case.search, "--out-dir", os.path.join(work, "logs"),
                    "--save-plan", plan_path, "--quiet"])
    expect(searched.returncode == 0, f"search failed: {searched.stderr.strip()}")
    scheduled = run([fasop, "schedule", "--plan", plan_path, "--format", "atorch", "-o", py_path])
    expect(scheduled.returncode == 0, f"schedule failed: {scheduled.stderr.strip()}")
    with open(plan_path) as f:
        plan = yaml.safe_load(f)
    return plan, runpy.run_path(py_path)


def model_context(family, layers, batch):
    from atorch.auto.model_context import ModelContext

    return ModelContext(model=STAND_INS[family](layers), optim_func=torch.optim.SGD, dataset=TokenBatches(batch),
                        loss_func=lm_loss, prepare_input=lambda data, device: data,
                        model_input_format="unpack_sequence", dataloader_args={"batch_size": batch},
                        optim_args={"lr": 0.1})


def check_parser(namespace, world):
    """auto_accelerate's load_strategy path up to where it builds the model: the list into a
    Strategy, validated, adjusted to the world size (nothing may change)."""
    from atorch.auto import accelerate
    from atorch.auto.opt_lib.optimization_library import SEMIAUTO_STRATEGIES, OptimizationLibrary

    status, strategy = accelerate.get_strategy(namespace["strategy"])
    expect(status, "get_strategy refused the list")
    library = OptimizationLibrary()
    expect(library.validate_strategy(strategy), "validate_strategy refused it")
    for name in strategy.opt_names():
        expect(library[name] is not None, f"OptimizationLibrary has no {name}")
    before = [(name, copy.deepcopy(config)) for name, config, _ in strategy]
    saved = accelerate.is_distributed
    accelerate.is_distributed = lambda: True  # keep the distributed-only optimisations
    try:
        status, strategy = accelerate.adjust_strategy(
            strategy, types.SimpleNamespace(node_num=1, nproc_per_node=world), False, library)
    finally:
        accelerate.is_distributed = saved
    expect(status, "adjust_strategy refused it")
    expect([(name, config) for name, config, _ in strategy] == before, "adjust_strategy changed it")
    for name, config, tunable in strategy:  # ATorch tunes the semi-automatic ones with their config
        expect(tunable == (name in SEMIAUTO_STRATEGIES), f"{name} tunable={tunable}")
    found, parallel_mode = strategy.get_parallel_mode()
    expect(found and parallel_mode == namespace["parallel_mode"], "parallel_mode is not the module's")
    return strategy, library


def check_groups(parallel_mode, tp, dp, pp):
    """Every rank's groups from ATorch's get_ranks_in_same_group: the plan's sizes and order."""
    from atorch.distributed.distributed import _DistributedContext, get_ranks_in_same_group

    world = tp * dp * pp
    _DistributedContext.WORLD_SIZE = world
    names = {name for name, _ in parallel_mode[0]}
    expect(names == {n for n, size in (("tensor", tp), ("data", dp), ("pipe", pp)) if size > 1 or n == "data"},
           f"parallel_mode names {sorted(names)}")
    for rank in range(world):
        t, d, s = rank % tp, rank // tp % dp, rank // (tp * dp)
        want = {"tensor": [i + tp * d + tp * dp * s for i in range(tp)],
                "data": [t + tp * i + tp * dp * s for i in range(dp)],
                "pipe": [t + tp * d + tp * dp * i for i in range(pp)]}
        got = get_ranks_in_same_group(parallel_mode, rank)
        for name in names:
            expect(got[name] == want[name], f"rank {rank}'s {name} group {got[name]}, the plan's {want[name]}")
    return "/".join(f"{name} {size}" for name, size in parallel_mode[0])


def check_amp(strategy, dtype):
    from atorch.auto.accelerate import record_user_defined_half_precision_dtype
    from atorch.auto.auto_accelerate_context import AutoAccelerateContext

    AutoAccelerateContext.counter += 1  # one auto_accelerate call per plan
    record_user_defined_half_precision_dtype(strategy)
    got = getattr(AutoAccelerateContext, "half_precision_dtype", {}).get(AutoAccelerateContext.counter)
    expect(got == DTYPES.get(dtype), f"ATorch's half precision dtype {got}, the model's {dtype}")
    return dtype


def unit_parameters(family, units, model):
    """Each parameter's unit (index into `units`): a layer's are under its path, the post-process's
    under the family's head paths, the embedding's are the rest."""
    layer_path, post_paths = UNIT_PATHS[family]
    layer_units = [u for u, unit in enumerate(units) if unit["role"] == "transformer"]
    embedding = next(u for u, unit in enumerate(units) if unit["role"] == "embedding")
    post = next((u for u, unit in enumerate(units) if unit["role"] == "post_process"), None)
    unit_of = {}
    for name, _ in model.named_parameters():
        plain = name[len("module."):]
        if plain.startswith(layer_path + "."):
            unit_of[name] = layer_units[int(plain[len(layer_path) + 1:].split(".")[0])]
        else:
            unit_of[name] = post if plain.startswith(post_paths) else embedding
    return unit_of


def build_stages(context, compiler_configs):
    """What MixedParallelOptimization.apply_wrapper does before PiPPy: the traced graph, ATorch's
    insert_split_point, a GraphModule; then torch.fx's split_module cuts it at the pipe_split
    markers into stage modules, as PiPPy's Pipe does. Returns the number of stage modules and the
    stage of each parameter: where the node calling its module runs, or for a parameter read
    directly (get_attr), where it is first used (PiPPy moves it there)."""
    from torch.fx.passes.split_module import split_module

    from atorch.auto.opt_lib.utils import insert_split_point
    from atorch.modules.distributed_modules.modules_registry import _SHARDABLE_OPERATORS

    pipe_split = sys.modules["pippy.IR"].pipe_split
    graph = context.capture_compute_graph(backend="meta_fx", leaf_modules=list(_SHARDABLE_OPERATORS.values()))
    graph = insert_split_point(graph, compiler_configs["insert_before_nodes"], compiler_configs["expected_num_stages"])
    stage, stage_of = 0, {}
    for node in list(graph.nodes):
        if node.op == "call_function" and node.target is pipe_split:
            stage += 1
            graph.erase_node(node)
        else:
            stage_of[node] = stage
    parameter_stage = {}
    for node in graph.nodes:
        if node.op == "call_module":
            for name, _ in context.model.get_submodule(node.target).named_parameters():
                parameter_stage.setdefault(f"{node.target}.{name}", stage_of[node])
        elif node.op == "get_attr":
            parameter_stage.setdefault(node.target, min(stage_of[user] for user in node.users))
    stages = split_module(torch.fx.GraphModule(context.model, graph), context.model, lambda node: stage_of[node])
    built = sum(name.startswith("submod_") for name, _ in stages.named_children())
    return built, parameter_stage


def check_pipeline(namespace, strategy, plan, family, units, world):
    """MixedParallelOptimization.tune with the emitted config on the stand-in; then the stages."""
    from atorch.auto.opt_lib.mixed_parallel_optimization import MixedParallelOptimization
    from atorch.auto.opt_lib.optimization import DistributedGraphMixin

    entry = dict((name, config) for name, config, _ in strategy)["mixed_parallel"]
    config = copy.deepcopy(entry)
    expect(config["parallel_mode"] == namespace["parallel_mode"], "mixed_parallel's parallel_mode differs")
    tensor = config.get("tensor_config")
    expect((tensor is not None) == (plan["tp"] > 1), f"tensor_config {tensor} with tp {plan['tp']}")
    if tensor is not None:
        expect(tensor == {"shard_planner": "mip"}, f"tensor_config {tensor}")
        tensor["shard_planner"] = "base"  # the MIP solve needs pyomo and glpk
    layers = sum(unit["role"] == "transformer" for unit in units)
    context = model_context(family, layers, namespace["dataloader_args"]["batch_size"])
    optimization = MixedParallelOptimization()
    DistributedGraphMixin.__init__(optimization, num_nodes=1, num_devices_per_node=world)  # the plan's devices
    status, best, context = tune_reading(optimization, context, config, strategy, "mixed_parallel")
    expect(status, "MixedParallelOptimization.tune failed")
    expect(config["pipe_config"]["insert_before_modules"] == namespace["pipeline_split_before"], "split points")
    compiler = best["pipe_config"]["compiler_configs"]
    chunks = plan["global_batch"] // (plan["micro_batch"] * plan["dp"])
    expect(compiler["expected_num_stages"] == plan["pp"], f"nstages {compiler['expected_num_stages']}")
    expect(compiler["chunks"] == chunks, f"chunks {compiler['chunks']}, the plan's {chunks} micro-batches")
    expect(compiler["pipe_schedule"] == "1F1B", f"schedule {compiler['pipe_schedule']}")
    expect(context.get_input_batch_size({"ddp_size": plan["dp"], "chunks": chunks}) == plan["micro_batch"],
           "ATorch's micro-batch is not the plan's")
    expect(best["parallel_mode"] == namespace["parallel_mode"] and not best["ddp"], "parallel_mode or ddp")
    wanted = [module.replace(".", "_") for module in namespace["pipeline_split_before"]]
    expect(compiler["insert_before_nodes"] == wanted,
           f"ATorch split before {compiler['insert_before_nodes']}, emitted {wanted}")
    built, parameter_stage = build_stages(context, compiler)
    unit_of = unit_parameters(family, units, context.model)
    expect(set(parameter_stage) == set(unit_of), "parameters the traced graph does not use")
    anchors = {}  # a unit's stage: where its largest weight goes
    sizes = dict((name, p.numel()) for name, p in context.model.named_parameters())
    for name in sorted(unit_of, key=lambda name: -sizes[name]):
        anchors.setdefault(unit_of[name], parameter_stage[name])
    stage_units = [anchors[u] for u in range(len(units))]
    got = [stage_units.count(s) for s in range(built)]
    expect(built == plan["pp"] and stage_units == sorted(stage_units) and got == plan["partition"],
           f"ATorch's {built} stages hold {got} units, the plan's partition is {plan['partition']}")
    spilled = sum(parameter_stage[name] != anchors[unit] for name, unit in unit_of.items())
    summary = f"mixed_parallel.tune: {len(wanted)} split nodes -> {built} stages of {got} units" + \
        (f" ({spilled} norm weights on the stage before theirs)" if spilled else "") + \
        f", chunks {chunks} of {plan['micro_batch']}, 1F1B"
    if tensor is not None:
        sharded = best["tp_config"]["replacement_map"]
        in_layers = sum("_layer" in node or "_h_" in node for node in sharded)
        expect(in_layers > 0, "ATorch's tensor planner shards nothing in the layers")
        summary += f"; base TP planner shards {len(sharded)} modules ({in_layers} in layers)"
    return best, summary


def check_tensor_parallel(strategy, plan, family, units, parallel_mode):
    """TensorParallelOptimization.tune with the emitted config (base planner) on the tensor group."""
    from atorch.auto.opt_lib.optimization import DistributedGraphMixin
    from atorch.auto.opt_lib.tensor_parallel_optimization import TensorParallelOptimization
    from atorch.distributed.distributed import get_ranks_in_same_group

    config = dict(dict((name, config) for name, config, _ in strategy)["tensor_parallel"])
    expect(config == {"shard_planner": "mip"}, f"tensor_parallel config {config}")
    config.update(shard_planner="base", tp_ranks=get_ranks_in_same_group(parallel_mode, 0)["tensor"])
    layers = sum(unit["role"] == "transformer" for unit in units)
    context = model_context(family, layers, plan["micro_batch"] * plan["dp"])
    optimization = TensorParallelOptimization()
    DistributedGraphMixin.__init__(optimization, num_nodes=1, num_devices_per_node=plan["tp"] * plan["dp"])
    status, best, _ = tune_reading(optimization, context, config, strategy, "tensor_parallel")
    expect(status and best["replacement_map"], "TensorParallelOptimization.tune shards nothing")
    return best, f"tensor_parallel.tune (base planner, tensor group {config['tp_ranks']}): " \
                 f"{len(best['replacement_map'])} modules sharded"


def check_wrappers(strategy, library, tuned, plan, family, units):
    """Every optimisation's transform as auto_accelerate's last step runs them (the tuned config for
    the tuned ones), then ModelContext.adjust_wrappers: what ATorch keeps and what it drops."""
    from atorch.auto.opt_lib.utils import to_module_class_by_name

    context = model_context(family, sum(unit["role"] == "transformer" for unit in units), 8)
    with GpuAnswers():
        for name, config, _ in strategy:
            library[name].transform(context, tuned.get(name, config))
    context.adjust_wrappers()
    pre, post = context.pre_wrappers, context.post_wrappers
    layer = LAYER_CLASSES[family]
    kept = []
    if plan["pp"] > 1:
        compiler = pre["mp"][1]["pipe_config"]["compiler_configs"]
        expect(compiler.get("checkpoint", False) == (plan["recompute"] == "full"), "pipeline recomputation")
        expect(compiler["amp_config"]["dtype"] in DTYPES.values(), "amp not in the pipeline")
        expect("ddp" not in post and "amp_native" not in post and "checkpoint" not in post, f"post {list(post)}")
        kept.append("mp (amp" + (" and checkpoint" if compiler.get("checkpoint") else "") + " moved into the pipe)")
    elif plan["tp"] > 1:
        expect("tp" in pre, f"no tp wrapper: {list(pre)}")
        kept.append("tp")
    if plan["zero_stage"] == 1:
        expect(context.optim_func.__name__ == "OSS" and "group" in context.optim_args, "zero1's optimizer")
        kept.append("OSS optimizer (zero1)")
    if plan["zero_stage"] >= 2:
        from torch.distributed.fsdp import ShardingStrategy

        fsdp = pre["fsdp"][1]
        units_cls = to_module_class_by_name(context.model, fsdp["atorch_wrap_cls"])
        expect(list(units_cls) == [layer] and "ddp" not in post, "FSDP's units")
        sharding = fsdp.get("sharding_strategy", ShardingStrategy.FULL_SHARD)
        expect(sharding == (ShardingStrategy.SHARD_GRAD_OP if plan["zero_stage"] == 2 else ShardingStrategy.FULL_SHARD),
               f"FSDP's {sharding} for ZeRO-{plan['zero_stage']}")
        kept.append(f"fsdp {sharding.name} units {layer.__name__}")
    if plan["recompute"] == "full" and plan["pp"] == 1:
        expect(list(to_module_class_by_name(context.model, post["checkpoint"][1])) == [layer], "checkpoint class")
        kept.append(f"checkpoint {layer.__name__}")
    if plan["zero_stage"] == 0 and plan["pp"] == 1 and plan["dp"] > 1:
        expect("ddp" in post, "no DDP")
        kept.append("ddp")
    return "wrappers: " + ", ".join(kept)


def check_plan(fasop, case, work):
    plan, namespace = emit(fasop, case, work)
    expect(case.covers(plan), f"the searched plan is not {case.what}: {plan}")
    spec, units = load_model_file(plan["model"])
    family, tp, dp, pp = spec["family"], plan["tp"], plan["dp"], plan["pp"]
    world = tp * dp * pp
    strategy, library = check_parser(namespace, world)
    parts = [check_groups(namespace["parallel_mode"], tp, dp, pp) + f" over {world} ranks in plan order",
             "amp " + check_amp(strategy, spec.get("dtype", "fp16"))]
    tuned = {}
    if pp > 1:
        tuned["mixed_parallel"], summary = check_pipeline(namespace, strategy, plan, family, units, world)
        parts.append(summary)
    elif tp > 1:
        tuned["tensor_parallel"], summary = check_tensor_parallel(
            strategy, plan, family, units, namespace["parallel_mode"])
        parts.append(summary)
    parts.append(check_wrappers(strategy, library, tuned, plan, family, units))
    layout = f"tp {tp} dp {dp} pp {pp} mbs {plan['micro_batch']} {plan['partition']} zero {plan['zero_stage']} " \
             f"rc {plan['recompute']}"
    return f"{case.name} ({case.what}): {layout}; " + "; ".join(parts)


def evidence_zero2_pipe():
    """ATorch's adjust_wrappers beside mixed_parallel: zero2's FSDP wrapper goes."""
    from atorch.auto.opt_lib.mixed_parallel_optimization import MixedParallelOptimization
    from atorch.auto.opt_lib.zero_optimization import Zero2Optimization

    context = model_context("llama", 2, 8)
    with GpuAnswers():
        Zero2Optimization().transform(context, {"atorch_wrap_cls": ("LlamaDecoderLayer",)})
    expect("fsdp" in context.pre_wrappers, "zero2 made no FSDP wrapper")
    MixedParallelOptimization().transform(context, {"pipe_config": {"compiler_configs": {}}, "tp_config": None,
                                                    "ddp": False, "parallel_mode": ([("pipe", 2)], None)})
    context.adjust_wrappers()
    expect("fsdp" not in context.pre_wrappers, "ATorch kept zero2 beside its pipeline")
    return "ATorch's adjust_wrappers drops zero2's fsdp wrapper beside mixed_parallel"


def evidence_checkpoint_tp():
    """ATorch's adjust_wrappers beside tensor_parallel: the checkpoint wrapper goes."""
    from atorch.auto.opt_lib.checkpoint_optimization import CheckpointOptimization
    from atorch.auto.opt_lib.tensor_parallel_optimization import TensorParallelOptimization

    context = model_context("bert", 2, 8)
    CheckpointOptimization().transform(context, ("BertLayer",))
    TensorParallelOptimization().transform(context, {"replacement_map": {}})
    context.adjust_wrappers()
    expect("checkpoint" not in context.post_wrappers, "ATorch kept the checkpoint beside tensor parallelism")
    return "ATorch's adjust_wrappers drops the BertLayer checkpoint beside tensor_parallel"


def evidence_gpt2_tp():
    """ATorch's tensor planner on GPT-2: nothing inside the blocks is shardable."""
    from atorch.auto.opt_lib.optimization import DistributedGraphMixin
    from atorch.auto.opt_lib.tensor_parallel_optimization import TensorParallelOptimization

    optimization = TensorParallelOptimization()
    DistributedGraphMixin.__init__(optimization, num_nodes=1, num_devices_per_node=2)
    status, best, _ = optimization.tune(model_context("gpt2", 2, 8), {"shard_planner": "base", "tp_ranks": [0, 1]}, None)
    sharded = sorted(best.get("replacement_map", {}))
    expect(status and not any("_h_" in node for node in sharded), f"ATorch shards GPT-2's blocks: {sharded}")
    return f"ATorch's tensor planner shards only {sharded} of GPT-2, nothing in transformer.h"


class Refused:
    """A plan fasop-cpp refuses for ATorch: its message's words, and ATorch's code showing what it
    would have dropped."""

    def __init__(self, name, message, search, evidence):
        self.name, self.what, self.search, self.evidence = name, message, search, evidence


REFUSED = [
    Refused("llama2-7b-zero2-pp2", "zero_stage 2 with pp 2",
            ["--model", "llama2-7b", "--cluster", "aws-h100", "--fix", "tp=1,pp=2,zero=2,recompute=none"],
            evidence_zero2_pipe),
    Refused("bert-tp2-recompute", "recompute full with tp 2 and pp 1",
            ["--model", "bert", "--fix", "tp=2,pp=1,zero=1,recompute=full"], evidence_checkpoint_tp),
    Refused("gpt2xl-tp2", "Conv1D", ["--model", "gpt2xl", "--fix", "tp=2"], evidence_gpt2_tp),
]


def check_refused(fasop, case, work):
    plan_path = os.path.join(work, case.name + ".yaml")
    searched = run([fasop, "search", *case.search, "--out-dir", os.path.join(work, "logs"),
                    "--save-plan", plan_path, "--quiet"])
    expect(searched.returncode == 0, f"search failed: {searched.stderr.strip()}")
    scheduled = run([fasop, "schedule", "--plan", plan_path, "--format", "atorch"])
    message = scheduled.stderr.strip()
    expect(scheduled.returncode == 2 and case.what in message and len(message.splitlines()) == 1,
           f"schedule exited {scheduled.returncode}: {message!r}")
    return f"{case.name}: refused ({message.split(': ', 2)[-1][:90]}...); {case.evidence()}"


def atorch_source(argument):
    src = argument or os.environ.get("ATORCH_SRC")
    if not src:
        sys.exit("check-atorch-emit: give ATorch's source with --atorch-src DIR or ATORCH_SRC (see --help)")
    if os.path.isdir(os.path.join(src, "atorch", "atorch")):  # dlrover's checkout, or its atorch/ parent
        src = os.path.join(src, "atorch")
    if not os.path.isfile(os.path.join(src, "atorch", "auto", "accelerate.py")):
        sys.exit(f"check-atorch-emit: {src} holds no atorch/auto/accelerate.py")
    return os.path.abspath(src)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--atorch-src", help="ATorch's source (default: $ATORCH_SRC)")
    parser.add_argument("--fasop", default=os.path.join(ROOT, "build", "fasop-cpp"), help="the fasop-cpp binary")
    parser.add_argument("--keep", help="write the plans and strategies here (default: a temporary folder)")
    parser.add_argument("--only", help="check only the plans of these names (as printed, comma-separated)")
    args = parser.parse_args()
    src = atorch_source(args.atorch_src)
    stood_in = load_atorch(src)
    import logging

    from atorch.common.log_utils import default_logger

    default_logger.setLevel(logging.ERROR)  # not the root logger: ATorch prints its graphs when that is above WARNING
    print(f"ATorch from {src}; stood in (not installed): {', '.join(stood_in) or 'nothing'}; torch {torch.__version__}")
    work = args.keep or tempfile.mkdtemp(prefix="check-atorch-")
    os.makedirs(work, exist_ok=True)
    failures = 0
    cases = [(case, check_plan) for case in PLANS] + [(case, check_refused) for case in REFUSED]
    if args.only:
        cases = [(case, check) for case, check in cases if case.name in args.only.split(",")]
    for case, check in cases:
        try:
            print("PASS " + check(args.fasop, case, work), flush=True)
        except Exception as error:  # a mismatch, or ATorch's code failing on the emitted material
            failures += 1
            if os.environ.get("CHECK_ATORCH_TRACE"):
                import traceback

                traceback.print_exc()
            kind = "" if isinstance(error, Mismatch) else f"{type(error).__name__}: "
            print(f"FAIL {case.name} ({case.what}): {kind}{error}", flush=True)
    print("Not run here: PiPPy's compile of the stages and its RPC runtime, ATorch's MIP tensor planner "
          "(pyomo, glpk), anything on a GPU.")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
