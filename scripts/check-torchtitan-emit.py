#!/usr/bin/env python3
"""Checks what `fasop-cpp schedule --format torchtitan` writes against torchtitan's own source.

Usage:
    /usr/bin/python3 scripts/check-torchtitan-emit.py TORCHTITAN_SRC [--bin build/fasop-cpp] [--only NAME,...]
        [--keep DIR]
    TORCHTITAN_SRC=/path/to/torchtitan /usr/bin/python3 scripts/check-torchtitan-emit.py

TORCHTITAN_SRC (the argument, else the environment variable) is a checkout of
github.com/pytorch/torchtitan: the folder holding the torchtitan package, e.g.

    git --git-dir=torchtitan.git archive b5bcd76c66d0 torchtitan | tar -x -C /tmp/tt-src

For each plan in PLANS the script runs `fasop-cpp search --save-plan` on a shipped model and
cluster, then `schedule --format torchtitan` (a Python module whose function returns
Trainer.Config, torchtitan/config/README.md), and checks the module:

  - its form: imports, one function whose first statement calls the model's base config
    (configs/models/<model>.yaml's stacks.torchtitan), then only `config.<section>.<field> =
    <literal>` and `config.activation_checkpoint = ...`, then `return config`;
  - every import resolves in the tree: the module's file exists and defines or re-exports the
    name; the base config is a function of that config_registry returning Trainer.Config;
  - every field is one of its section's dataclass (the section's class is Trainer.Config's
    annotation in torchtitan/trainer.py) and its value fits the field's annotation (int, bool,
    str, float, Literal[...], list[list[str]] | None); activation_checkpoint is None or
    X.Config() of a class in ActivationCheckpointingConfig (distributed/activation_checkpoint.py);
  - the values are the plan's: degrees (ZeRO 0 replicates, DDP; ZeRO 3 shards, FSDP2), pipeline
    micro-batches (global batch / (micro-batch x dp)), tokens (micro-batch x sequence, global
    batch x sequence), sequence, bf16 parameters, recomputation, the schedule ("1F1B", or
    "Interleaved1F1B" with virtual stages), a name torch's get_schedule_class knows;
  - torchtitan's own code, taken out of its files with ast and run here: configs.py
    (TrainingConfig and ParallelismConfig are built with the emitted fields, so their
    __post_init__ checks run), ParallelDims._validate (the world size dp_replicate x dp_shard x
    cp x tp x pp is the plan's GPUs; expert_parallel_degree divides dp_shard x cp x tp), and
    pipeline_parallel.py's _get_pp_rank_to_stage_indices_mapping and _split_module on a stand-in
    model shaped as torchtitan's Decoder (children tok_embeddings, layers: a ModuleDict keyed
    "0".."L-1", norm, lm_head; L from the model flavor in torchtitan's model registry): each
    pipeline rank's stages keep exactly the plan's units (partition), in model order;
  - Trainer.Config._validate_cuda_graphs (trainer.py, taken out and run), which tyro.cli runs
    again when ConfigManager.parse_args loads the function's config: with CUDA graphs on (the
    default), pp > 1 is refused, and so is ep > 1 unless the model's token dispatcher is
    MinimalAsyncEP or HybridEP with a capacity factor; the fields are the module's over the base
    config's literals, the dispatcher the one its moe_comm_backend builds (config_utils.py);
  - Trainer.__init__'s token arithmetic (trainer.py, re-stated here: it runs inside the trainer):
    the step's tokens divide into micro-batches x dp, gradient accumulation 1, and the
    micro-batch's tokens divide by the sequence-parallel degree.

What does not run: torchtitan itself is not imported (it needs torch >= 2.6, spmd_types and
tyro; this runs on torch 1.13 on a CPU), so neither tyro's CLI nor Trainer. _split_module runs
with torch 1.13's nn, torchtitan's ModuleDict and ModuleList stood in by torch.nn's (as it
tests both). torch 1.13 has no torch.distributed.pipelining: where it is missing, the schedule
names and classes of torch's get_schedule_class are a table below.

Prints one line per plan ("ok    NAME: ..." or "FAIL  NAME: why", every mismatch found, joined by
"; "), then "N of M plans ...";
exits 1 on any failure, 2 with a line "check-torchtitan-emit: ..." when it cannot run.
"""
import argparse
import ast
import copy
import math
import os
import shutil
import sys
import tempfile
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from emit_check import add_common_options, check_each, save_and_emit, selected_plans  # noqa: E402
from python_source import SourceTree, fits  # noqa: E402


# (name, search arguments, what the plan must be for the name to hold).
PLANS = [
    ("llama3-8b-tp2-pp4-ddp",
     ["--model", "llama3-8b", "--cluster", "aws-h100", "--fix", "tp=2,pp=4,zero=0,recompute=full,sp=on"],
     lambda p: p["tp"] == 2 and p["pp"] == 4 and p["zero_stage"] == 0 and p["recompute"] == "full"
     and len(set(p["partition"])) > 1),
    ("llama3-8b-tp2-pp4-v2",
     ["--model", "llama3-8b", "--cluster", "aws-h100", "--fix", "tp=2,pp=4,zero=0,recompute=full,sp=on,vpp=2"],
     lambda p: p["pp"] == 4 and p.get("virtual_stages", 1) == 2),
    ("qwen3-30b-a3b-tp2-pp2-ep8-fsdp",
     ["--model", "qwen3-30b-a3b", "--cluster", "aws-h100", "--fix", "tp=2,pp=2,ep=8,zero=3,recompute=full"],
     lambda p: p.get("ep", 1) == 8 and p["zero_stage"] == 3 and p["pp"] == 2),
]

# torch.distributed.pipelining.schedules.get_schedule_class (torch 2.6 to 2.9): name -> (class,
# single-stage?, "v" or "loop" stage placement). Used only where this torch lacks it.
TORCH_SCHEDULES = {
    "1F1B": ("Schedule1F1B", True, "loop"), "GPipe": ("ScheduleGPipe", True, "loop"),
    "Interleaved1F1B": ("ScheduleInterleaved1F1B", False, "loop"),
    "LoopedBFS": ("ScheduleLoopedBFS", False, "loop"),
    "InterleavedZeroBubble": ("ScheduleInterleavedZeroBubble", False, "loop"),
    "ZBVZeroBubble": ("ScheduleZBVZeroBubble", False, "v"), "DualPipeV": ("ScheduleDualPipeV", False, "v"),
    "PipelineScheduleSingle": ("PipelineScheduleSingle", True, "loop"),
    "PipelineScheduleMulti": ("PipelineScheduleMulti", False, "loop"),
}

# What Trainer.Config._validate_cuda_graphs tests a MoE model's token dispatchers against (their
# Config classes, stood in), and the dispatcher config_utils.build_token_dispatcher_config builds
# for each moe_comm_backend.
DISPATCHERS = {name: type(name, (), {"Config": type(f"{name}.Config", (), {"non_blocking_capacity_factor": None})})
               for name in ("LocalTokenDispatcher", "MinimalAsyncEPTokenDispatcher", "HybridEPTokenDispatcher",
                            "AllToAllTokenDispatcher", "DeepEPTokenDispatcher")}
COMM_BACKENDS = {"standard": "AllToAllTokenDispatcher", "deepep": "DeepEPTokenDispatcher",
                 "hybridep": "HybridEPTokenDispatcher", "minimal_async_ep": "MinimalAsyncEPTokenDispatcher"}

# Base configs by fasop-cpp model, where the model file has no stacks.torchtitan.
BASE_CONFIGS = {
    "llama3-8b": "torchtitan.models.llama3.config_registry:llama3_8b",
    "llama3.1-70b": "torchtitan.models.llama3.config_registry:llama3_70b",
    "llama3.1-405b": "torchtitan.models.llama3.config_registry:llama3_405b",
    "qwen3-32b": "torchtitan.models.qwen3.config_registry:qwen3_32b",
    "qwen3-30b-a3b": "torchtitan.models.qwen3.config_registry:qwen3_30b_a3b",
    "deepseek-v3": "torchtitan.models.deepseek_v3.config_registry:deepseek_v3_671b",
    "gpt-oss-120b": "torchtitan.models.gpt_oss.config_registry:gpt_oss_120b",
}


class Mismatch(Exception):
    """The emitted module and torchtitan or the plan disagree."""


PROBLEMS = []  # the mismatches of the plan being checked, all reported on its one line


def expect(what, got, want):
    if got != want:
        PROBLEMS.append(f"{what}: the module has {got!r}, the plan says {want!r}")


def cannot_run(message):
    print(f"check-torchtitan-emit: {message}", file=sys.stderr)
    sys.exit(2)


# --- torchtitan's source -----------------------------------------------------------------------

class Torchtitan:
    """torchtitan's source tree and the pieces of its code this check runs."""

    def __init__(self, src):
        if os.path.isfile(os.path.join(src, "torchtitan", "__init__.py")):
            root = src
        elif os.path.basename(os.path.normpath(src)) == "torchtitan" and os.path.isfile(os.path.join(src, "__init__.py")):
            root = os.path.dirname(os.path.normpath(src))
        else:
            cannot_run(f"{src} holds no torchtitan/__init__.py; give a torchtitan checkout")
        self.tree = SourceTree([root])
        for module in ("torchtitan.trainer", "torchtitan.config.configs", "torchtitan.distributed.parallel_dims",
                       "torchtitan.distributed.pipeline_parallel", "torchtitan.distributed.activation_checkpoint"):
            if self.tree.module_path(module) is None:
                cannot_run(f"{src} has no {module} (a torchtitan older than its Trainer.Config layout, 2026)")
        self.configs = self._exec_configs()
        self.pipeline = self._exec_functions("torchtitan.distributed.pipeline_parallel",
                                             ["_split_module", "_get_pp_rank_to_stage_indices_mapping"])
        self.validate_dims = self._exec_method("torchtitan.distributed.parallel_dims", "ParallelDims", "_validate")
        self.validate_cuda_graphs = self._exec_method("torchtitan.trainer", "Trainer", "_validate_cuda_graphs",
                                                      nested="Config", namespace=DISPATCHERS)

    def _function_nodes(self, module, names, cls=None, nested=None):
        tree = self.tree.parse(self.tree.module_path(module))
        body = tree.body
        for name in (cls, nested):
            if name:
                body = next(n.body for n in body if isinstance(n, ast.ClassDef) and n.name == name)
        found = {n.name: n for n in body if isinstance(n, ast.FunctionDef) and n.name in names}
        missing = set(names) - set(found)
        if missing:
            cannot_run(f"{module} has no {', '.join(sorted(missing))}: this check knows another torchtitan")
        return [found[n] for n in names]

    def _exec_functions(self, module, names):
        import torch
        from torch import nn
        namespace = {"copy": copy, "math": math, "torch": torch, "nn": nn, "ModuleDict": nn.ModuleDict,
                     "ModuleList": nn.ModuleList, "get_schedule_class": get_schedule_class,
                     "ScheduleZBVZeroBubble": "ScheduleZBVZeroBubble", "ScheduleDualPipeV": "ScheduleDualPipeV",
                     "logger": types.SimpleNamespace(info=lambda *a, **k: None, debug=lambda *a, **k: None)}
        code = ast.Module(body=self._function_nodes(module, names), type_ignores=[])
        exec(compile(code, self.tree.module_path(module), "exec"), namespace)
        return types.SimpleNamespace(**{n: namespace[n] for n in names})

    def _exec_method(self, module, cls, name, nested=None, namespace=None):
        node = copy.deepcopy(self._function_nodes(module, [name], cls, nested)[0])
        namespace = dict(namespace or {})
        code = ast.Module(body=[node], type_ignores=[])
        exec(compile(code, self.tree.module_path(module), "exec"), namespace)
        return namespace[name]

    def where(self, module, text):
        """file:line of the first line of `module` holding `text`."""
        path = self.tree.module_path(module)
        with open(path) as f:
            for number, line in enumerate(f, 1):
                if text in line:
                    return f"{os.path.relpath(path, self.tree.roots[0])}:{number}"
        return path

    def _exec_configs(self):
        """torchtitan/config/configs.py run as it is (it imports dataclasses, typing and torch)."""
        path = self.tree.module_path("torchtitan.config.configs")
        namespace = {"__name__": "torchtitan_config_configs"}
        try:
            with open(path) as f:
                exec(compile(f.read(), path, "exec"), namespace)
        except ImportError as error:
            cannot_run(f"{path} does not run here: {error}")
        return namespace


def get_schedule_class(name):
    """torch's get_schedule_class where this torch has it, else its table: (class name, single
    stage?, style). Raises ValueError for an unknown name, as torch does."""
    try:
        from torch.distributed.pipelining import schedules
    except ImportError:
        for known, entry in TORCH_SCHEDULES.items():
            if known.lower() == name.lower():
                return entry
        raise ValueError(f"Unknown schedule type {name}") from None
    cls = schedules.get_schedule_class(name)
    style = "v" if cls.__name__ in ("ScheduleZBVZeroBubble", "ScheduleDualPipeV") else "loop"
    return cls.__name__, issubclass(cls, schedules.PipelineScheduleSingle), style


def torchtitan_schedule_names(tree, root):
    """The pipeline_parallel_schedule values torchtitan's own sources set."""
    names = set()
    for folder, _, files in os.walk(os.path.join(root, "torchtitan")):
        for file in files:
            if not file.endswith(".py"):
                continue
            with open(os.path.join(folder, file), encoding="utf-8") as f:
                text = f.read()
            if "pipeline_parallel_schedule" not in text:
                continue
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.keyword) and node.arg == "pipeline_parallel_schedule" \
                        and isinstance(node.value, ast.Constant):
                    names.add(node.value.value)
    return names


# --- fasop-cpp -------------------------------------------------------------------------------

def emit(bin_path, search_args, work):
    return save_and_emit(bin_path, search_args, work, "torchtitan", "fasop_plan.py", Mismatch)


# --- the emitted module ----------------------------------------------------------------------

def read_module(tt, path):
    """The emitted module's imports {name: (module, line)}, its base config call and its
    assignments [(target path, value node, line)]."""
    with open(path) as f:
        tree = ast.parse(f.read(), filename=path)
    imports, functions = {}, []
    for node in tree.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            continue
        if isinstance(node, ast.ImportFrom) and node.level == 0:
            for alias in node.names:
                imports[alias.asname or alias.name] = (node.module, alias.name, node.lineno)
        elif isinstance(node, ast.FunctionDef):
            functions.append(node)
        else:
            raise Mismatch(f"line {node.lineno}: {ast.unparse(node)[:60]!r} is neither an import nor the function")
    for name, (module, original, line) in imports.items():
        if tt.tree.module_path(module) is None:
            raise Mismatch(f"line {line}: `from {module} import {original}`: torchtitan has no module {module}")
        if tt.tree.find(module, original) is None:
            raise Mismatch(f"line {line}: {module} neither defines nor re-exports {original}")
    if [f.name for f in functions] != ["fasop_plan"]:
        raise Mismatch(f"functions {[f.name for f in functions]}: want one, fasop_plan (--config fasop_plan)")
    function = functions[0]
    if function.args.args or ast.unparse(function.returns or ast.Constant(None)) != "Trainer.Config":
        raise Mismatch("fasop_plan must take no arguments and return Trainer.Config")
    body = function.body
    first = body[0] if body else None
    if not (isinstance(first, ast.Assign) and ast.unparse(first.targets[0]) == "config"
            and isinstance(first.value, ast.Call) and isinstance(first.value.func, ast.Name)
            and not first.value.args and not first.value.keywords):
        raise Mismatch("fasop_plan's first statement must be `config = <base config>()`")
    if not (isinstance(body[-1], ast.Return) and ast.unparse(body[-1].value) == "config"):
        raise Mismatch("fasop_plan must end with `return config`")
    assignments = []
    for node in body[1:-1]:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Attribute)):
            raise Mismatch(f"line {node.lineno}: {ast.unparse(node)[:60]!r} is not `config.<path> = <value>`")
        path = ast.unparse(node.targets[0]).split(".")
        if path[0] != "config" or not all(p.isidentifier() for p in path):
            raise Mismatch(f"line {node.lineno}: {ast.unparse(node.targets[0])} does not set a field of config")
        assignments.append((path[1:], node.value, node.lineno))
    return imports, first.value.func.id, assignments


def check_base(tt, imports, base, plan, model):
    """The base config: imported from the model's config_registry, defined there, returning
    Trainer.Config. Returns nothing; raises Mismatch."""
    want = (model.get("stacks") or {}).get("torchtitan") or BASE_CONFIGS.get(plan["model"])
    if base not in imports:
        raise Mismatch(f"the base config {base}() is not imported")
    module, original, line = imports[base]
    if want and f"{module}:{original}" != want:
        raise Mismatch(f"base config {module}:{original}, the model's is {want}")
    found = tt.tree.find(module, original)
    if not found or not isinstance(found[1], ast.FunctionDef):
        raise Mismatch(f"{module}.{original} is not a function in torchtitan")
    if ast.unparse(found[1].returns or ast.Constant(None)) != "Trainer.Config":
        raise Mismatch(f"{module}.{original} does not return Trainer.Config")
    trainer = tt.tree.resolve_expr("torchtitan.trainer", ast.Name("Trainer"))
    if imports.get("Trainer", ("",))[0] != "torchtitan.trainer" or not trainer:
        raise Mismatch("Trainer is not imported from torchtitan.trainer")
    return found


def sections(tt):
    """Trainer.Config's fields: {section: (annotation, (module, ClassDef) or None)}."""
    _, trainer = tt.tree.find("torchtitan.trainer", "Trainer")
    config = next(n for n in trainer.body if isinstance(n, ast.ClassDef) and n.name == "Config")
    out = {}
    for name, (annotation, _, _, _) in tt.tree.fields("torchtitan.trainer", config).items():
        out[name] = (annotation, tt.tree.resolve_class("torchtitan.trainer", annotation))
    return out


def ac_policies(tt):
    """The classes whose Config ActivationCheckpointingConfig lists, and whether None is one."""
    module = "torchtitan.distributed.activation_checkpoint"
    _, node = tt.tree.find(module, "ActivationCheckpointingConfig")
    classes, allows_none = set(), False
    for sub in ast.walk(node.value):
        if isinstance(sub, ast.Subscript) and ast.unparse(sub.value) == "Annotated":
            first = sub.slice.elts[0]
            if isinstance(first, ast.Constant) and first.value is None:
                allows_none = True
            elif isinstance(first, ast.Attribute) and first.attr == "Config":
                classes.add(ast.unparse(first.value))
    return classes, allows_none


def check_fields(tt, imports, assignments):
    """Every assignment against its section's dataclass; returns {section: {field: value}} and
    the activation-checkpointing class name (or None)."""
    known = sections(tt)
    values, ac = {}, "unset"
    for path, value_node, line in assignments:
        if path == ["activation_checkpoint"]:
            policies, allows_none = ac_policies(tt)
            if isinstance(value_node, ast.Constant) and value_node.value is None and allows_none:
                ac = None
                continue
            text = ast.unparse(value_node)
            if not (isinstance(value_node, ast.Call) and not value_node.args and not value_node.keywords
                    and isinstance(value_node.func, ast.Attribute) and value_node.func.attr == "Config"
                    and isinstance(value_node.func.value, ast.Name)):
                raise Mismatch(f"line {line}: activation_checkpoint = {text}: want None or <policy>.Config()")
            name = value_node.func.value.id
            origin = imports.get(name)
            if name not in policies:
                raise Mismatch(f"line {line}: {name}.Config is not in ActivationCheckpointingConfig "
                               f"({', '.join(sorted(policies))} or None)")
            if not origin or origin[0] != "torchtitan.distributed.activation_checkpoint":
                raise Mismatch(f"line {line}: {name} is not imported from torchtitan.distributed.activation_checkpoint")
            ac = name
            continue
        if len(path) != 2:
            raise Mismatch(f"line {line}: config.{'.'.join(path)}: want config.<section>.<field>")
        section, field = path
        if section not in known:
            raise Mismatch(f"line {line}: Trainer.Config has no section {section!r}")
        annotation, resolved = known[section]
        if resolved is None:
            raise Mismatch(f"line {line}: section {section}'s class {ast.unparse(annotation)} is not in the tree")
        fields = tt.tree.fields(*resolved)
        if field not in fields:
            raise Mismatch(f"line {line}: {resolved[1].name} ({tt.tree.where(tt.tree.module_path(resolved[0]), resolved[1])}) "
                           f"has no field {field!r}")
        try:
            value = ast.literal_eval(value_node)
        except ValueError:
            raise Mismatch(f"line {line}: config.{section}.{field} = {ast.unparse(value_node)} is not a literal") from None
        ok, why = fits(fields[field][0], value)
        if not ok:
            raise Mismatch(f"line {line}: config.{section}.{field}: {why} "
                           f"(annotated {ast.unparse(fields[field][0])})")
        values.setdefault(section, {})[field] = value
    if ac == "unset":
        raise Mismatch("config.activation_checkpoint is not set (the base config's stays)")
    return values, ac


# --- the checks against the plan --------------------------------------------------------------

def registry_call(function):
    """The base config's model_registry(...) call, or None."""
    for node in ast.walk(function):
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "model_registry":
            return node
    return None


def flavor_builder(tt, base_found):
    """The function that builds the flavor the base config's model_registry call names (its
    package's flavor table maps the name to it: {"8B": llama3_8b, ...}), or None where it cannot
    be read."""
    module, function = base_found
    call = registry_call(function)
    if call is None or not call.args or not isinstance(call.args[0], ast.Constant):
        return None
    package = module.rpartition(".")[0]
    path = tt.tree.module_path(package)
    if path is None:
        return None
    for node in ast.walk(tt.tree.parse(path)):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and key.value == call.args[0].value and isinstance(value, ast.Name):
                    builder = tt.tree.find(package, value.id)
                    if builder and isinstance(builder[1], ast.FunctionDef):
                        return builder[1]
    return None


def flavor_layers(tt, base_found):
    """The number of layers of the model flavor the base config builds (model_registry("8B") ->
    its builder's `n_layers = N`), or None when it cannot be read."""
    builder = flavor_builder(tt, base_found)
    for node in ast.walk(builder) if builder else []:
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "n_layers":
            return ast.literal_eval(node.value)
    return None


def base_literals(tt, base_found):
    """The literal fields the base config sets: {section: {field: value}}, from its
    Trainer.Config(section=SectionClass(field=literal, ...)) call and `config.section.field =
    literal` statements."""
    out = {}
    for node in ast.walk(base_found[1]):
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "Trainer.Config":
            for keyword in node.keywords:
                if keyword.arg and isinstance(keyword.value, ast.Call):
                    for inner in keyword.value.keywords:
                        try:
                            out.setdefault(keyword.arg, {})[inner.arg] = ast.literal_eval(inner.value)
                        except ValueError:
                            pass
        elif isinstance(node, ast.Assign) and ast.unparse(node.targets[0]).count(".") == 2:
            _, section, field = ast.unparse(node.targets[0]).split(".")
            try:
                out.setdefault(section, {})[field] = ast.literal_eval(node.value)
            except ValueError:
                pass
    return out


def moe_comm_backend(tt, base_found):
    """The moe_comm_backend the base config's model_registry call gives its flavor builder (its
    keyword, else the builder's default), or None for a model without one."""
    call = registry_call(base_found[1])
    if call is None:
        return None
    for keyword in call.keywords:
        if keyword.arg == "moe_comm_backend" and isinstance(keyword.value, ast.Constant):
            return keyword.value.value
    builder = flavor_builder(tt, base_found)
    if builder is None:
        return None
    args = builder.args
    for arg, default in zip(args.args[len(args.args) - len(args.defaults):], args.defaults):
        if arg.arg == "moe_comm_backend":
            return ast.literal_eval(default)
    return None


def stand_in_model(layers):
    """torchtitan's Decoder as _split_module sees it: its four children."""
    from torch import nn
    model = nn.Module()
    model.tok_embeddings = nn.Embedding(4, 2)
    model.layers = nn.ModuleDict({str(i): nn.Linear(2, 2) for i in range(layers)})
    model.norm = nn.LayerNorm(2)
    model.lm_head = nn.Linear(2, 4)
    return model


def check_stages(tt, parallel, plan, layers):
    """Each rank's stages as torchtitan builds them: their units, against the partition."""
    pp, v, partition = plan["pp"], plan.get("virtual_stages", 1), plan["partition"]
    schedule = parallel["pipeline_parallel_schedule"]
    stages = parallel.get("module_fqns_per_model_part")
    if stages is None:
        raise Mismatch("module_fqns_per_model_part is not set: torchtitan would split the layers evenly")
    if len(stages) != pp * v:
        raise Mismatch(f"{len(stages)} stage lists, the plan runs pp {pp} x virtual stages {v}")
    names = ["tok_embeddings"] + [f"layers.{i}" for i in range(layers)] + ["norm", "lm_head"]
    unit_of = {n: (0 if n == "tok_embeddings" else layers + 1 if n in ("norm", "lm_head") else int(n[7:]) + 1)
               for n in names}
    listed = [n for stage in stages for n in stage]
    unknown = [n for n in listed if n not in unit_of]
    if unknown:
        raise Mismatch(f"module names {unknown[:3]} name no module of the model (_split_module ignores them)")
    if listed != names:
        raise Mismatch(f"module names in stage order are not the model's, each once: {listed[:4]}...")
    model = stand_in_model(layers)
    chunk_units = {}
    for rank in range(pp):
        for index in tt.pipeline._get_pp_rank_to_stage_indices_mapping(rank, pp, schedule, len(stages)):
            chunk = tt.pipeline._split_module(model, stages[index])
            units = ([0] if chunk.tok_embeddings is not None else []) + [int(k) + 1 for k in chunk.layers.keys()]
            if (chunk.norm is None) != (chunk.lm_head is None):
                raise Mismatch(f"stage {index} keeps one of norm and lm_head (unit {layers + 1} is both)")
            units += [layers + 1] if chunk.norm is not None else []
            if index % pp != rank:
                raise Mismatch(f"rank {rank} builds stage {index}; the plan runs chunk k on rank k % pp")
            chunk_units[index] = units
    ordered = [u for index in range(len(stages)) for u in chunk_units[index]]
    expect("units of the stages in order", ordered, list(range(layers + 2)))
    if len(partition) == pp * v:
        got = [len(chunk_units[i]) for i in range(len(stages))]
    else:
        got = [sum(len(chunk_units[i]) for i in range(len(stages)) if i % pp == r) for r in range(pp)]
    expect("units per pipeline rank (partition)", got, partition)
    return [len(chunk_units[i]) for i in range(len(stages))]


def check_plan(tt, bin_path, name, search_args, kind, keep):
    PROBLEMS.clear()
    with tempfile.TemporaryDirectory() as work:
        plan, model, module_path = emit(bin_path, search_args, work)
        if keep:
            os.makedirs(os.path.join(keep, name), exist_ok=True)
            for file in ("plan.yaml", "fasop_plan.py"):
                shutil.copy(os.path.join(work, file), os.path.join(keep, name, file))
        if not kind(plan):
            raise Mismatch(f"the search gave another kind of plan: tp {plan['tp']} pp {plan['pp']} dp {plan['dp']} "
                           f"ep {plan.get('ep', 1)} v {plan.get('virtual_stages', 1)} ZeRO {plan['zero_stage']} "
                           f"partition {plan['partition']}")
        imports, base, assignments = read_module(tt, module_path)
        base_found = check_base(tt, imports, base, plan, model)
        values, ac = check_fields(tt, imports, assignments)
    par, train = values.get("parallelism", {}), values.get("training", {})
    tp, dp, pp, mbs, batch = plan["tp"], plan["dp"], plan["pp"], plan["micro_batch"], plan["global_batch"]
    cp, ep, v, zero, seq = plan.get("cp", 1), plan.get("ep", 1), plan.get("virtual_stages", 1), plan["zero_stage"], \
        model["sequence"]

    # torchtitan's own dataclasses and their __post_init__ checks, on the emitted fields.
    try:
        tt.configs["TrainingConfig"](**train)
        tt.configs["ParallelismConfig"](**par)
    except (TypeError, ValueError) as error:
        raise Mismatch(f"configs.py refuses the fields: {error}") from None
    get = lambda field, default: par.get(field, default)  # noqa: E731  a default is torchtitan's
    replicate, shard = get("data_parallel_replicate_degree", 1), get("data_parallel_shard_degree", -1)
    if zero == 0:
        expect("(replicate, shard) for ZeRO 0 (DDP)", (replicate, shard), (dp, 1))
    elif zero == 3:
        expect("(replicate, shard) for ZeRO 3 (FSDP2)", (replicate, shard), (1, dp))
    else:
        expect(f"replicate x shard for ZeRO {zero}", replicate * shard, dp)
    expect("tensor_parallel_degree", get("tensor_parallel_degree", 1), tp)
    if tp > 1:
        expect("enable_sequence_parallel", get("enable_sequence_parallel", True), bool(plan.get("sequence_parallel")))
    expect("context_parallel_degree", get("context_parallel_degree", 1), cp)
    expect("expert_parallel_degree", get("expert_parallel_degree", 1), ep)
    expect("pipeline_parallel_degree", get("pipeline_parallel_degree", 1), pp)
    dims = types.SimpleNamespace(dp_replicate=replicate, dp_shard=shard, cp=get("context_parallel_degree", 1),
                                 tp=get("tensor_parallel_degree", 1), pp=get("pipeline_parallel_degree", 1),
                                 ep=get("expert_parallel_degree", 1), world_size=tp * cp * dp * pp)
    try:
        tt.validate_dims(dims)  # ParallelDims._validate: world size, and ep divides dp_shard x cp x tp
    except (AssertionError, ValueError) as error:
        PROBLEMS.append(f"ParallelDims._validate on {tp * cp * dp * pp} GPUs: {error}")

    # Trainer.Config.__post_init__'s CUDA-graph rules (trainer.py), which tyro.cli re-runs on the
    # loaded config (config/manager.py, ConfigManager.parse_args): the fields as the module leaves
    # them, the base config's literals where it sets none.
    literals = base_literals(tt, base_found)
    effective = {s: {**literals.get(s, {}), **values.get(s, {})} for s in ("training", "parallelism")}
    defaults = tt.configs["TrainingConfig"]()
    backend = moe_comm_backend(tt, base_found) or "standard"
    dispatcher = DISPATCHERS[COMM_BACKENDS.get(backend, "AllToAllTokenDispatcher")].Config()
    spec = types.SimpleNamespace(model=types.SimpleNamespace(
        traverse=lambda cls: [(None, dispatcher, None, None)] if ep > 1 else []))
    config = types.SimpleNamespace(
        training=types.SimpleNamespace(disable_cuda_graphs=effective["training"].get(
            "disable_cuda_graphs", defaults.disable_cuda_graphs)),
        parallelism=types.SimpleNamespace(pipeline_parallel_degree=get("pipeline_parallel_degree", 1),
                                          expert_parallel_degree=get("expert_parallel_degree", 1)),
        model_spec=spec)
    try:
        tt.validate_cuda_graphs(config)
    except ValueError as error:
        PROBLEMS.append(f"Trainer.Config._validate_cuda_graphs "
                        f"({tt.where('torchtitan.trainer', 'def _validate_cuda_graphs')}), which tyro.cli runs again "
                        f"on the loaded config (ConfigManager.parse_args): {error} (training.disable_cuda_graphs is "
                        f"{config.training.disable_cuda_graphs}" + (f", moe_comm_backend {backend})" if ep > 1 else ")"))

    micro_batches = batch // (mbs * dp)
    chunks = None
    if pp > 1:
        schedule = par.get("pipeline_parallel_schedule")
        expect("pipeline_parallel_schedule", schedule, "1F1B" if v == 1 else "Interleaved1F1B")
        try:
            _, single, _ = get_schedule_class(schedule)
        except ValueError as error:
            raise Mismatch(f"pipeline_parallel_schedule {schedule!r}: {error}") from None
        if single != (v == 1):
            raise Mismatch(f"{schedule} runs {'one stage' if single else 'several stages'} a rank; the plan has {v}")
        expect("num_pp_microbatches", par.get("num_pp_microbatches"), micro_batches)
        layers = flavor_layers(tt, base_found)
        if layers is not None:
            expect("transformer layers (torchtitan's model flavor)", layers + 2, sum(plan["partition"]))
        chunks = check_stages(tt, par, plan, sum(plan["partition"]) - 2)
    else:
        for field in ("pipeline_parallel_schedule", "num_pp_microbatches", "module_fqns_per_model_part"):
            if field in par:
                raise Mismatch(f"pp 1, yet parallelism.{field} is set")
    expect("num_tokens_per_microbatch_per_dp_rank", train.get("num_tokens_per_microbatch_per_dp_rank"), mbs * seq)
    expect("num_tokens_per_train_step", train.get("num_tokens_per_train_step"), batch * seq)
    expect("max_context_length", train.get("max_context_length"), seq)
    dtype = model.get("dtype", "fp16")
    expect("mixed_precision_param", train.get("mixed_precision_param"),
           "bfloat16" if dtype == "bf16" or dtype.startswith("fp8") else "float32")
    expect("activation_checkpoint", ac, {"full": "FullAC", "selective": "SelectiveAC"}.get(plan["recompute"]))

    # Trainer.__init__ (trainer.py): tokens per dp rank = micro-batch tokens x pp micro-batches,
    # the step's tokens a multiple of that x dp; gradient accumulation is the quotient.
    accumulation = None
    if train.get("num_tokens_per_microbatch_per_dp_rank") and train.get("num_tokens_per_train_step"):
        per_rank = train["num_tokens_per_microbatch_per_dp_rank"] * (par.get("num_pp_microbatches", 1) if pp > 1 else 1)
        step = train["num_tokens_per_train_step"]
        if not per_rank * replicate * shard or step % (per_rank * replicate * shard) != 0:
            PROBLEMS.append(f"Trainer: num_tokens_per_train_step {step} is no multiple of {per_rank} x dp {dp}")
        accumulation = step // max(per_rank * replicate * shard, 1)
        expect("gradient accumulation x pp micro-batches (sequences a rank a step / mbs)",
               accumulation * (par.get("num_pp_microbatches", 1) if pp > 1 else 1), micro_batches)
        divisor = (tp if par.get("enable_sequence_parallel", True) else 1) * (2 * cp if cp > 1 else 1)
        if train["num_tokens_per_microbatch_per_dp_rank"] % divisor:
            PROBLEMS.append(f"Trainer: micro-batch tokens do not divide by {divisor} (sequence/context parallelism)")
    if PROBLEMS:
        raise Mismatch("; ".join(PROBLEMS))
    mesh = f"dp_replicate {replicate} x dp_shard {shard} x cp {cp} x tp {tp} x pp {pp}"
    return (f"{plan['model']}: {mesh} = {tp * cp * dp * pp} GPUs, ep {ep}; "
            + (f"{len(chunks)} stages {chunks} by _split_module as the partition {plan['partition']}, "
               f"{par['pipeline_parallel_schedule']} x {micro_batches} micro-batches; " if chunks else "")
            + f"tokens {mbs * seq}/micro-batch, {batch * seq}/step, accumulation {accumulation}; AC {ac}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("torchtitan_src", nargs="?", default=os.environ.get("TORCHTITAN_SRC"),
                        help="torchtitan checkout (default: $TORCHTITAN_SRC)")
    add_common_options(parser, "fasop_plan.py")
    args = parser.parse_args()
    if not args.torchtitan_src:
        parser.error("give the torchtitan source tree as an argument or in TORCHTITAN_SRC")
    if not os.access(args.bin, os.X_OK):
        parser.error(f"{args.bin} is not an executable fasop-cpp; build it or pass --bin")
    try:
        import torch  # noqa: F401
        import yaml  # noqa: F401
    except ImportError as error:
        cannot_run(f"this Python lacks {error.name} (Debian's python3-torch, python3-yaml)")
    tt = Torchtitan(os.path.abspath(args.torchtitan_src))
    print(f"torchtitan from {args.torchtitan_src}; schedule names its configs use: "
          f"{', '.join(sorted(torchtitan_schedule_names(tt.tree, tt.tree.roots[0])))}")
    plans = selected_plans(parser, PLANS, args.only)
    binary = os.path.abspath(args.bin)
    return check_each(plans, lambda name, search, kind: check_plan(tt, binary, name, search, kind, args.keep), Mismatch,
                      "torchtitan's source")


if __name__ == "__main__":
    sys.exit(main())
