#!/usr/bin/env python3
"""Checks what `fasop-cpp schedule --format megatron-bridge` writes against Megatron-Bridge's source.

Usage:
    /usr/bin/python3 scripts/check-megatron-bridge-emit.py BRIDGE_SRC [--megatron MEGATRON_LM_SRC]
        [--bin build/fasop-cpp] [--only NAME,...] [--keep DIR]
    MEGATRON_BRIDGE_SRC=... MEGATRON_LM_SRC=... /usr/bin/python3 scripts/check-megatron-bridge-emit.py

BRIDGE_SRC (or MEGATRON_BRIDGE_SRC) is a checkout of github.com/NVIDIA-NeMo/Megatron-Bridge (its
src/megatron/bridge and scripts/training); MEGATRON_LM_SRC (--megatron, else the environment,
else Bridge's 3rdparty/Megatron-LM when populated) a Megatron-LM checkout holding megatron/core
and megatron/training, best the commit Bridge pins as its 3rdparty/Megatron-LM submodule.

For each plan in PLANS the script runs `fasop-cpp search --save-plan`, then `schedule --format
megatron-bridge` (arguments for scripts/training/run_recipe.py: '#' comments, then one argument
a line joined by " \\"), and checks:

  - the shell text: each line splits (shlex) into words without anything the shell would
    expand; every KEY=VALUE is a Hydra override token: a key of [A-Za-z0-9_.] and a value that
    Hydra 1.3's override grammar takes unquoted (its primitive characters) or double-quoted.
    Hydra's parser itself (hydra-core, omegaconf) is not installed here and does not run;
  - run_recipe.py's own parser (_build_parser, _collect_overrides, _common_config_overrides,
    taken out of the file with ast and run): --model and --mode parse, --mode is a choice, the
    rest are KEY=VALUE overrides; the recipe it loads, `<model>_pretrain_config`, is exported by
    megatron.bridge.recipes (its __init__ star imports and __all__ followed with ast);
  - every override path exists as Bridge's override code sees it: process_config_with_overrides
    (training/utils/omegaconf_utils.py) turns the recipe's ConfigContainer into a dict of its
    dataclass fields and applies Hydra's overrides in struct mode, so a key must be a field of
    the class the recipe puts there (ConfigContainer in training/config.py, its sections'
    classes and their Megatron-Core and megatron.training bases; for `model`, what the recipe
    assigns: to_megatron_provider() gives GPTModelProvider with TransformerConfig and
    ModelParallelConfig fields, get_model_config() gives a builder-backed GPTModelConfig whose
    TransformerConfig fields sit under model.transformer); the value parses as the field's type;
    mixed_precision names a recipe of training/mixed_precision.py's registry;
  - the values are the plan's, the recipe's literal assignments filling in what the arguments
    leave out (the recipe function and the recipes it calls, read with ast): degrees, batch,
    sequence, recomputation, distributed optimizer and Megatron-FSDP for ZeRO, precision; no
    pipeline-split argument of the recipe that Megatron-Core's TransformerConfig refuses beside a
    layout (num_layers_in_first/last_pipeline_stage, account_for_embedding/loss_in_pipeline_split,
    another virtual_pipeline_model_parallel_size), and no CUDA graph of the recipe beside full
    recomputation (TransformerConfig asserts full iteration graphs then);
  - the layout, parsed and validated by Megatron-Core's PipelineParallelLayerLayout
    (megatron/core/transformer/pipeline_parallel_layer_layout.py: the class is taken out with ast
    and run with LayerType from enums.py, as the module imports parallel_state, which needs
    torch >= 2): each pipeline rank's chunks hold exactly the plan's units, in model order.

What does not run: Bridge itself (it needs torch >= 2, Megatron-Core, Transformer Engine,
omegaconf and hydra), so neither the recipe functions nor the Hydra override parser nor
ConfigContainer.validate; a recipe's values it computes rather than assigns as literals are
unknown here, as are fields a bridge's own provider subclass adds. Benchmark recipes
(megatron.bridge.perf_recipes), which run_recipe.py prefers on a name clash, are not consulted.

Prints one line per plan ("ok    NAME: ..." or "FAIL  NAME: why", every mismatch found, joined by
"; "), then "N of M plans ...";
exits 1 on any failure, 2 with a line "check-megatron-bridge-emit: ..." when it cannot run.
"""
import argparse
import ast
import json
import os
import re
import shlex
import shutil
import sys
import tempfile
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from emit_check import add_common_options, check_each, save_and_emit, selected_plans  # noqa: E402
from python_source import SourceTree, fits  # noqa: E402


# (name, search arguments, what the plan must be for the name to hold).
PLANS = [
    ("llama3-8b-tp2-pp4-dp16",
     ["--model", "llama3-8b", "--cluster", "aws-h100", "--fix", "tp=2,pp=4,zero=1,recompute=full,sp=on"],
     lambda p: p["tp"] == 2 and p["pp"] == 4 and p["recompute"] == "full" and len(set(p["partition"])) > 1),
    ("qwen3-30b-a3b-tp2-pp2-ep8-fsdp",
     ["--model", "qwen3-30b-a3b", "--cluster", "aws-h100", "--fix", "tp=2,pp=2,ep=8,zero=3,recompute=full"],
     lambda p: p.get("ep", 1) == 8 and p["zero_stage"] == 3 and p["pp"] == 2),
]

KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
# Hydra 1.3 OverrideLexer, VALUE_MODE: a primitive is IDs, numbers, bools, null, whitespace and
# these characters: UNQUOTED_CHAR [/\-\\+.$%*@?|] and ':' (interpolations ${...} excluded here).
UNQUOTED = re.compile(r"[A-Za-z0-9_/\-\\+.%*@?|:]+")
QUOTED = re.compile(r'"([^"\\]|\\.)*"')
INT = re.compile(r"[+-]?(0|[1-9](_?[0-9])*)")
FLOAT = re.compile(r"[+-]?(([0-9](_?[0-9])*)?\.[0-9](_?[0-9])*|[0-9](_?[0-9])*\.?)([eE][+-]?[0-9]+)?|[+-]?(inf|nan)",
                   re.IGNORECASE)


class Mismatch(Exception):
    """The emitted arguments and Megatron-Bridge or the plan disagree."""


def expect(what, got, want):
    if got != want:
        raise Mismatch(f"{what}: {got!r}, the plan says {want!r}")


def cannot_run(message):
    print(f"check-megatron-bridge-emit: {message}", file=sys.stderr)
    sys.exit(2)


def hydra_value(text):
    """A Hydra override value as the Python value OmegaConf would hold (a quoted string, null,
    a bool, an int, a float, else the unquoted string); raises Mismatch outside the grammar."""
    if QUOTED.fullmatch(text):
        if "${" in text:
            raise Mismatch(f"value {text}: Hydra resolves ${{...}} inside quotes too")
        return re.sub(r"\\(.)", r"\1", text[1:-1])
    if not UNQUOTED.fullmatch(text):
        raise Mismatch(f"value {text!r}: Hydra's grammar takes it neither unquoted nor double-quoted")
    if text.lower() == "null":
        return None
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    if INT.fullmatch(text):
        return int(text.replace("_", ""))
    if FLOAT.fullmatch(text) and any(c.isdigit() for c in text) or text.lower().lstrip("+-") in ("inf", "nan"):
        return float(text.replace("_", ""))
    return text


def shell_words(text):
    """The arguments a shell makes of the emitted text: comment lines first, then one argument a
    line, every line but the last ending in " \\"."""
    lines = text.rstrip("\n").split("\n")
    while lines and lines[0].startswith("#"):
        lines.pop(0)
    words = []
    for number, line in enumerate(lines):
        last = number == len(lines) - 1
        if line.startswith("#"):
            raise Mismatch(f"a comment line among the arguments ({line[:40]!r}) ends the shell command")
        if not last and not line.endswith(" \\"):
            raise Mismatch(f"argument line {line[:50]!r} does not end in ' \\'")
        if last and line.endswith("\\"):
            raise Mismatch(f"the last line {line[:50]!r} ends in a continuation")
        body = line if last else line[:-2]
        quote = None
        for char in body:  # what the shell would expand outside single quotes
            if char in "'\"" and quote in (None, char):
                quote = None if quote else char
            elif char in "$`" and quote != "'":
                raise Mismatch(f"argument line {body!r}: the shell would expand {char}")
        try:
            words += shlex.split(body)
        except ValueError as error:
            raise Mismatch(f"argument line {body!r} does not split as the shell would: {error}") from None
    return words


# --- Megatron-Bridge and Megatron-LM source -------------------------------------------------

class Bridge:
    def __init__(self, src, megatron):
        src, megatron = os.path.abspath(src), megatron and os.path.abspath(megatron)
        if not os.path.isfile(os.path.join(src, "src", "megatron", "bridge", "__init__.py")):
            cannot_run(f"{src} holds no src/megatron/bridge; give a Megatron-Bridge checkout")
        self.runner = os.path.join(src, "scripts", "training", "run_recipe.py")
        if not os.path.isfile(self.runner):
            cannot_run(f"{src} has no scripts/training/run_recipe.py (a Bridge older than its recipe runner)")
        if not megatron:
            pinned = os.path.join(src, "3rdparty", "Megatron-LM")
            megatron = pinned if os.path.isdir(os.path.join(pinned, "megatron", "core")) else None
        if not megatron or not os.path.isdir(os.path.join(megatron, "megatron", "core")):
            cannot_run("no Megatron-LM source: give --megatron or MEGATRON_LM_SRC (megatron/core, megatron/training)")
        self.tree = SourceTree([os.path.join(src, "src"), megatron])
        self.megatron = megatron
        self.parse_args = self._runner_parser()
        self.Layout, self.LayerType = self._layout_class()

    def line_of(self, module, text):
        """file:line of the first line of `module` holding `text`."""
        path = self.tree.module_path(module)
        with open(path) as f:
            for number, line in enumerate(f, 1):
                if text in line:
                    return f"{os.path.relpath(path, self.megatron)}:{number}"
        return os.path.relpath(path, self.megatron)

    def _nodes(self, path, names):
        with open(path) as f:
            tree = ast.parse(f.read(), filename=path)
        found = {}
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in names:
                found[node.name] = node
            elif isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) in names:
                found[ast.unparse(node.targets[0])] = node
        missing = set(names) - set(found)
        if missing:
            cannot_run(f"{path} has no {', '.join(sorted(missing))}: this check knows another version")
        return tree, [found[n] for n in names]

    def _runner_parser(self):
        """run_recipe.py's argument handling, run as it is (its parser, the override collector
        and the convenience options' conversion) with recipe_metadata.py's recipe_task."""
        tree, nodes = self._nodes(self.runner, ["COMMON_OVERRIDE_FIELDS", "_HelpFormatter", "_build_parser",
                                                "_collect_overrides", "_common_config_overrides"])
        _, task = self._nodes(os.path.join(os.path.dirname(self.runner), "recipe_metadata.py"), ["recipe_task"])
        presets = self.tree.find("megatron.bridge.recipes.utils.dataset_utils", "DATASET_PRESETS")
        names = [k.value for k in presets[1].value.keys] if presets and isinstance(presets[1].value, ast.Dict) else []
        namespace = {"argparse": argparse, "json": json, "DATASET_PRESETS": dict.fromkeys(names),
                     "__doc__": ast.get_docstring(tree)}
        exec(compile(ast.Module(body=nodes + task, type_ignores=[]), self.runner, "exec"), namespace)

        def parse(argv):
            import contextlib
            import io
            parser = namespace["_build_parser"]()
            error = io.StringIO()
            try:
                with contextlib.redirect_stderr(error):
                    args, unknown = parser.parse_known_args(argv)
                    overrides = namespace["_collect_overrides"](parser, unknown)
            except SystemExit:
                raise Mismatch(f"run_recipe.py's parser: {error.getvalue().strip().splitlines()[-1]}") from None
            return args, namespace["_common_config_overrides"](args) + overrides, namespace["recipe_task"]
        return parse

    def _layout_class(self):
        """Megatron-Core's PipelineParallelLayerLayout and LayerType, run from their files."""
        enums = os.path.join(self.megatron, "megatron", "core", "transformer", "enums.py")
        namespace = {"__name__": "megatron_core_transformer_enums"}
        with open(enums) as f:
            exec(compile(f.read(), enums, "exec"), namespace)
        path = os.path.join(self.megatron, "megatron", "core", "transformer", "pipeline_parallel_layer_layout.py")
        _, (cls,) = self._nodes(path, ["PipelineParallelLayerLayout"])
        import copy
        import functools
        import logging
        layout_ns = {"copy": copy, "re": re, "lru_cache": functools.lru_cache, "logging": logging, "Optional": None,
                     "logger": logging.getLogger("layout"), "LayerType": namespace["LayerType"],
                     "safe_get_rank": lambda: 0, "parallel_state": types.SimpleNamespace()}
        import typing
        layout_ns["Optional"] = typing.Optional
        exec(compile(ast.Module(body=[cls], type_ignores=[]), path, "exec"), layout_ns)
        return layout_ns["PipelineParallelLayerLayout"], namespace["LayerType"]


# --- the recipe, read ----------------------------------------------------------------------

class Recipe:
    """What a recipe function sets with literals, and the classes of its sections."""

    def __init__(self, bridge, name):
        self.tree = bridge.tree
        found = self.tree.find("megatron.bridge.recipes", name)
        if not found or not isinstance(found[1], ast.FunctionDef):
            raise Mismatch(f"--model: megatron.bridge.recipes exports no recipe function {name}")
        self.module, self.function = found
        self.where = self.tree.where(self.tree.module_path(self.module), self.function)
        self.values, self.classes, self.model_origin = {}, {}, None
        self._read(self.module, self.function, set())

    def _read(self, module, function, seen):
        if (module, function.name) in seen:
            return
        seen.add((module, function.name))
        path = self.tree.module_path(module)
        for node in function.body:
            if not isinstance(node, ast.Assign) or len(node.targets) != 1:
                continue
            target, value = ast.unparse(node.targets[0]), node.value
            if target == "cfg" and isinstance(value, ast.Call):
                called = self.tree.resolve_expr(module, value.func)
                if called and isinstance(called[1], ast.FunctionDef):
                    self._read(called[0], called[1], seen)
                elif ast.unparse(value.func) == "ConfigContainer":
                    for keyword in value.keywords:
                        self._section(module, path, keyword.arg, keyword.value)
            elif target.startswith("cfg.") and target.count(".") == 1:
                self._section(module, path, target[4:], value)
            elif target.startswith("cfg."):
                self._literal(path, target[4:], value)

    def _section(self, module, path, section, value):
        for key in [k for k in self.values if k.startswith(section + ".")]:
            del self.values[key]
        self.classes.pop(section, None)
        if section == "model":
            text = ast.unparse(value)
            self.model_origin = f"{text[:70]} ({self.tree.where(path, value)})"
            if text.endswith(".get_model_config()"):  # MegatronModelBridge.MODEL_CONFIG_CLASS
                self.classes["model"] = self.tree.find("megatron.bridge.models.gpt.model_config", "BridgeGPTModelConfig")
            elif ".to_megatron_provider(" in text:  # PROVIDER_CLASS None: GPTModelProvider
                self.classes["model"] = self.tree.find("megatron.bridge.models", "GPTModelProvider")
        if isinstance(value, ast.Call):
            cls = self.tree.resolve_class(module, value.func)
            if cls:
                self.classes[section] = cls
                for keyword in value.keywords:
                    if keyword.arg:
                        self._literal(path, f"{section}.{keyword.arg}", keyword.value)
            elif section == "mixed_precision" and isinstance(value.func, ast.Name):
                self.values[section] = (value.func.id, self.tree.where(path, value))
        else:
            self._literal(path, section, value)

    def _literal(self, path, key, value):
        try:
            self.values[key] = (ast.literal_eval(value), self.tree.where(path, value))
        except ValueError:
            if ast.unparse(value).startswith("torch."):
                self.values[key] = (ast.unparse(value), self.tree.where(path, value))
            else:
                self.values.pop(key, None)  # computed: unknown here


def field_path(bridge, recipe, key):
    """The annotation of override path `key` as Bridge's OmegaConf dict holds it, and a
    description of where; raises Mismatch when the dict has no such key."""
    tree = bridge.tree
    container = tree.find("megatron.bridge.training.config", "ConfigContainer")
    cls = container
    parts = key.split(".")
    annotation = None
    for depth, part in enumerate(parts):
        if cls is None:
            raise Mismatch(f"{key}: {'.'.join(parts[:depth])} is no dataclass this check can read")
        fields = tree.fields(*cls)
        if part not in fields:
            owner = f"{cls[1].name} ({tree.where(tree.module_path(cls[0]), cls[1])})"
            error = Mismatch(f"{key}: {owner} has no field {part!r}")
            error.hint = None
            if "transformer" in fields:
                inner = tree.resolve_class(fields["transformer"][2][0], fields["transformer"][0])
                if inner and part in tree.fields(*inner):
                    error = Mismatch(f"{key}: {owner} has no field {part!r}")
                    error.hint = (f"{owner} has none of the fields {{}}: they are TransformerConfig's, under "
                                  f"model.transformer (the recipe's model is {recipe.model_origin}, a builder-backed "
                                  "config), and Bridge applies overrides in OmegaConf struct mode "
                                  "(training/utils/omegaconf_utils.py, parse_hydra_overrides), where Hydra refuses "
                                  "a key the dict lacks: write model.transformer.<field>")
            raise error
        annotation, _, owner, node = fields[part]
        where = f"{owner[1].name}.{part} ({tree.where(tree.module_path(owner[0]), node)})"
        if depth == 0 and part in recipe.classes and recipe.classes[part]:
            cls = recipe.classes[part]
        else:
            cls = single_class(tree, owner[0], annotation)
    return annotation, where


def single_class(tree, module, annotation):
    """The one dataclass an annotation names (X, Optional[X], X | None), else None."""
    options = [annotation]
    if isinstance(annotation, ast.Subscript) and ast.unparse(annotation.value) in ("Optional", "typing.Optional"):
        options = [annotation.slice]
    elif isinstance(annotation, ast.BinOp):
        options = [annotation.left, annotation.right]
    classes = [c for c in (tree.resolve_class(module, o) for o in options
                           if not (isinstance(o, ast.Constant) and o.value is None)) if c]
    return classes[0] if len(classes) == 1 else None


def mixed_precision_recipes(tree):
    """Names training/mixed_precision.py's @register puts in MIXED_PRECISION_RECIPES (with the
    hyphenated aliases), and the function each maps to."""
    path = tree.module_path("megatron.bridge.training.mixed_precision")
    names = {}
    for node in tree.parse(path).body:
        if isinstance(node, ast.FunctionDef) and any(ast.unparse(d) == "register" for d in node.decorator_list):
            names[node.name] = node.name
            names[node.name.replace("_", "-")] = node.name
    return names


# --- fasop-cpp -------------------------------------------------------------------------------

def emit(bin_path, search_args, work):
    plan, model, path = save_and_emit(bin_path, search_args, work, "megatron-bridge", "plan.args", Mismatch)
    with open(path) as f:
        return plan, model, f.read()


# --- the checks -----------------------------------------------------------------------------

def check_layout(bridge, text, plan):
    """The layout as Megatron-Core parses and validates it; the units of each chunk."""
    pp, v, partition = plan["pp"], plan.get("virtual_stages", 1), plan["partition"]
    layers = sum(partition) - 2
    try:
        layout = bridge.Layout(text, pp)
        layout.validate_layer_layout(num_layers=layers, mtp_num_layers=None)
    except (AssertionError, ValueError, KeyError) as error:
        raise Mismatch(f"pipeline_model_parallel_layout {text!r}: Megatron-Core refuses it: {error}") from None
    expect("virtual stages of the layout", layout.virtual_pipeline_model_parallel_size, v)
    bridge.Layout.__init__.__globals__["parallel_state"].get_virtual_pipeline_model_parallel_world_size = \
        lambda: v if v > 1 else None
    T = bridge.LayerType
    chunks = []
    for k in range(pp * v):
        rank, stage = k % pp, k // pp
        ids = layout.get_layer_id_list(layer_type=T.decoder, vp_stage=stage if v > 1 else None, pp_rank=rank)
        held = layout.layout[rank][stage]
        chunks.append(([0] if T.embedding in held else []) + [i + 1 for i in ids]
                      + ([layers + 1] if T.loss in held else []))
    expect("units of the layout's chunks in order", [u for c in chunks for u in c], list(range(layers + 2)))
    if len(partition) == pp * v:
        got = [len(c) for c in chunks]
    else:
        got = [sum(len(chunks[k]) for k in range(pp * v) if k % pp == r) for r in range(pp)]
    expect("units per pipeline rank (partition)", got, partition)
    return [len(c) for c in chunks]


def check_plan(bridge, bin_path, name, search_args, kind, keep):
    with tempfile.TemporaryDirectory() as work:
        plan, model, text = emit(bin_path, search_args, work)
        if keep:
            os.makedirs(os.path.join(keep, name), exist_ok=True)
            for file in ("plan.yaml", "plan.args"):
                shutil.copy(os.path.join(work, file), os.path.join(keep, name, file))
    if not kind(plan):
        raise Mismatch(f"the search gave another kind of plan: tp {plan['tp']} pp {plan['pp']} dp {plan['dp']} "
                       f"ep {plan.get('ep', 1)} ZeRO {plan['zero_stage']} partition {plan['partition']}")
    words = shell_words(text)
    args, overrides, recipe_task = bridge.parse_args(words)
    if args.model is None or args.recipe is not None:
        raise Mismatch("the arguments select no --model")
    expect("--mode", args.mode, "pretrain")
    want_model = (model.get("stacks") or {}).get("megatron_bridge")
    if want_model:
        expect("--model", args.model, want_model)
    recipe = Recipe(bridge, f"{args.model}_{recipe_task(args.mode)}_config")

    given, errors, nested, hint = {}, [], [], None
    for token in overrides:
        key, _, value = token.partition("=")
        if not KEY.fullmatch(key):
            raise Mismatch(f"override {token!r}: Hydra key {key!r} is not [A-Za-z0-9_.]")
        parsed = hydra_value(value)
        if key in given:
            errors.append(f"{key} is set twice")
        given[key] = parsed
        try:
            annotation, where = field_path(bridge, recipe, key)
        except Mismatch as error:
            if error.hint:
                nested.append(key)
                hint = error.hint
            else:
                errors.append(str(error))
            continue
        ok, why = fits(annotation, parsed)
        if not ok:
            errors.append(f"{key}={value}: {why}, as {where} is {ast.unparse(annotation)}")
    precision = given.get("mixed_precision", recipe.values.get("mixed_precision", (None,))[0])
    registry = mixed_precision_recipes(bridge.tree)
    if "mixed_precision" in given and given["mixed_precision"] not in registry:
        errors.append(f"mixed_precision={given['mixed_precision']}: not in MIXED_PRECISION_RECIPES "
                      f"({', '.join(sorted(n for n in registry if '_' in n)[:6])}, ...)")

    def effective(key):
        """(value, source) of a key after the overrides: the override, else the recipe's literal."""
        flat = key.replace("model.transformer.", "model.")
        for k in (key, flat, flat.replace("model.", "model.transformer.", 1)):
            if k in given:
                return given[k], "the arguments"
        if flat in recipe.values:
            return recipe.values[flat][0], f"the recipe's, {recipe.values[flat][1]}"
        return "unknown", "neither the arguments nor a literal of the recipe"

    def want(key, value, alternatives=()):
        got, source = effective(key)
        if got != value and got not in alternatives:
            errors.append(f"{key} is {got!r} ({source}), the plan says {value!r}")

    tp, dp, pp, mbs, batch = plan["tp"], plan["dp"], plan["pp"], plan["micro_batch"], plan["global_batch"]
    cp, ep, etp, v, zero = (plan.get("cp", 1), plan.get("ep", 1), plan.get("etp", 1), plan.get("virtual_stages", 1),
                            plan["zero_stage"])
    want("model.tensor_model_parallel_size", tp)
    want("model.pipeline_model_parallel_size", pp)
    want("model.context_parallel_size", cp, (None,) if cp == 1 else ())
    want("model.sequence_parallel", bool(plan.get("sequence_parallel")))
    want("train.micro_batch_size", mbs)
    want("train.global_batch_size", batch)
    want("dataset.seq_length", model["sequence"])
    if ep > 1 or effective("model.expert_model_parallel_size")[0] not in (1, None, "unknown"):
        want("model.expert_model_parallel_size", ep)
        want("model.expert_tensor_parallel_size", etp)
    if plan["recompute"] == "full":
        want("model.recompute_granularity", "full")
        want("model.recompute_method", "uniform")
        want("model.recompute_num_layers", 1)
        graphs, source = effective("model.cuda_graph_impl")
        if graphs not in ("none", "full_iteration", "unknown", None):
            errors.append(f"model.cuda_graph_impl is {graphs!r} ({source}), and Megatron-Core's TransformerConfig "
                          f"asserts \"full recompute is only supported with full iteration CUDA graph.\" "
                          f"({bridge.line_of('megatron.core.transformer.transformer_config', 'full recompute is only supported')})")
    elif plan["recompute"] == "none":
        want("model.recompute_granularity", None, ("unknown",))
    want("ddp.use_distributed_optimizer", zero >= 1)
    want("optimizer.use_distributed_optimizer", zero >= 1)
    if zero >= 2:
        want("ddp.use_megatron_fsdp", True)
        want("ddp.data_parallel_sharding_strategy", "optim_grads" if zero == 2 else "optim_grads_params")
        want("checkpoint.ckpt_format", "fsdp_dtensor")
    else:
        want("ddp.use_megatron_fsdp", False, ("unknown",))
    dtype = model.get("dtype", "fp16")
    family = "bf16" if dtype == "bf16" or dtype.startswith("fp8") else dtype
    if not isinstance(precision, str) or not registry.get(precision, precision).startswith(family):
        errors.append(f"mixed_precision {precision!r}: the model trains in {dtype}")
    chunks = None
    if pp > 1:
        layout = given.get("model.pipeline_model_parallel_layout", given.get("model.transformer.pipeline_model_parallel_layout"))
        if not isinstance(layout, str):
            errors.append("no model.pipeline_model_parallel_layout: Megatron would split the layers evenly")
        else:
            try:
                chunks = check_layout(bridge, layout, plan)
            except Mismatch as error:
                errors.append(str(error))
        want("model.virtual_pipeline_model_parallel_size", v if v > 1 else None, ("unknown",) + ((None,) if v > 1 else ()))
        for key in ("model.num_layers_in_first_pipeline_stage", "model.num_layers_in_last_pipeline_stage"):
            want(key, None, ("unknown",))  # TransformerConfig.__post_init__ refuses them beside a layout
        for key in ("model.account_for_embedding_in_pipeline_split", "model.account_for_loss_in_pipeline_split"):
            want(key, False, ("unknown", None))
    if nested:
        errors.insert(0, hint.format(", ".join(nested)))
    if errors:
        raise Mismatch("; ".join(errors))
    return (f"{plan['model']}: recipe {recipe.function.name} ({recipe.where}), model {recipe.model_origin}; "
            f"{len(given)} overrides on fields; tp {tp} pp {pp} cp {cp} ep {ep} dp {dp}, ZeRO {zero}, {precision}"
            + (f"; layout chunks {chunks} as the partition {plan['partition']}" if chunks else ""))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("bridge_src", nargs="?", default=os.environ.get("MEGATRON_BRIDGE_SRC"),
                        help="Megatron-Bridge checkout (default: $MEGATRON_BRIDGE_SRC)")
    parser.add_argument("--megatron", default=os.environ.get("MEGATRON_LM_SRC"),
                        help="Megatron-LM checkout (default: $MEGATRON_LM_SRC, else Bridge's 3rdparty/Megatron-LM)")
    add_common_options(parser, "plan.args")
    args = parser.parse_args()
    if not args.bridge_src:
        parser.error("give the Megatron-Bridge source tree as an argument or in MEGATRON_BRIDGE_SRC")
    if not os.access(args.bin, os.X_OK):
        parser.error(f"{args.bin} is not an executable fasop-cpp; build it or pass --bin")
    try:
        import yaml  # noqa: F401
    except ImportError:
        cannot_run("this Python lacks PyYAML (Debian's python3-yaml)")
    bridge = Bridge(args.bridge_src, args.megatron)
    print(f"Megatron-Bridge from {args.bridge_src}, Megatron-LM from {bridge.megatron}; "
          "Hydra's override parser not installed: not run (the token grammar is checked instead)")
    plans = selected_plans(parser, PLANS, args.only)
    binary = os.path.abspath(args.bin)
    return check_each(plans, lambda name, search, kind: check_plan(bridge, binary, name, search, kind, args.keep),
                      Mismatch, "Megatron-Bridge's source")


if __name__ == "__main__":
    sys.exit(main())
