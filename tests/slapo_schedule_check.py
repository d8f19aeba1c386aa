"""Runs fasop-cpp's generated Slapo schedules against a recording stand-in for slapo.

Usage: slapo_schedule_check.py <emit_fixture binary>. For each fixture plan the script is
written to a temporary directory, byte-compiled (py_compile), imported with fake `slapo` and
`torch` packages first on sys.path, and applied to a tree of plain Python objects named like
the Hugging Face model. Every primitive call and its target is recorded and compared with what
the plan implies. No torch needed.
"""
import importlib
import os
import py_compile
import subprocess
import sys
import tempfile

FAKE_SLAPO = '''
CALLS = []


SEEDS = []


def is_random_seed_set():
    return bool(SEEDS)


def set_random_seed(seed=2013, dp_rank=None, pp_rank=None, tp_rank=None):
    SEEDS.append((seed, tp_rank))
    CALLS.append(("set_random_seed", tp_rank))


class Schedule:
    def __init__(self, root, path, world_size, traced):
        self.root, self.path, self.world_size, self.traced = root, path, world_size, traced
        self.rank = 0
        self.mod = root
        for part in path.split(".") if path else []:
            child = self.mod[int(part)] if part.isdigit() else getattr(self.mod, part, None)
            if child is None:
                raise KeyError(f"no module {path!r} in the fake model (at {part!r})")
            self.mod = child

    def __getitem__(self, path):
        return Schedule(self.root, f"{self.path}.{path}" if self.path else path, self.world_size, self.traced)

    def shard(self, name, axis):
        assert hasattr(self.mod, name), f"{self.path} has no parameter {name}"
        CALLS.append(("shard", self.path, name, axis))

    def sync(self, mode, sync_op_or_fn, **kwargs):
        CALLS.append(("sync", self.path, mode, sync_op_or_fn))

    def fork_rng(self):
        CALLS.append(("fork_rng", self.path))

    def checkpoint(self, order_args_fn=None):
        # Keywords reordered into the layer's signature (hidden_states, attention_mask, layer_past, use_cache).
        assert order_args_fn("h", use_cache=True, attention_mask="m") == ("h", "m", None, True)
        CALLS.append(("checkpoint", self.path))

    def trace_until(self, paths, tracer=None, concrete_args=None):
        paths = [paths] if isinstance(paths, str) else list(paths)
        assert "input_ids" not in concrete_args, concrete_args
        import torch
        for path in paths:  # traced modules become fx.GraphModules, as in Slapo
            mod = self[path].mod
            mod.__class__ = type("Traced", (type(mod), torch.fx.GraphModule), {})
        self.traced.extend(paths)
        CALLS.append(("trace_until", tuple(paths)))

    def cut_pipeline_stage(self):
        parent = self.path.rsplit(".", 1)[0] if "." in self.path else ""
        # Slapo: the parent of a cut must be traced (trace_until also traces the root).
        assert parent == "" or any(parent == t or parent.startswith(t + ".") for t in self.traced), self.path
        CALLS.append(("cut_pipeline_stage", self.path))


def create_schedule(model, group=None):
    return Schedule(model, "", 1 if group is None else group.size(), [])


def build(sch, target=None, init_weights=True, **kwargs):
    CALLS.append(("build", target))
    return sch.mod, None
'''

FAKE_TORCH = '''
import contextlib

REGROUPED = []


def no_grad():
    return contextlib.nullcontext()


class fx:
    class GraphModule:
        pass
'''


class Tensor:
    """Enough of a tensor for the fused-QKV regrouping: shape, views and copy_."""

    def __init__(self, *shape):
        self.shape = shape

    def reshape(self, *shape):
        return Tensor(*shape)

    def transpose(self, a, b):
        return self

    def copy_(self, other):
        assert other.shape == self.shape, (other.shape, self.shape)
        importlib.import_module("torch").REGROUPED.append(self.shape)


class Module:
    def __init__(self, **attrs):
        self.__dict__.update(attrs)

    def forward(self, hidden_states, attention_mask=None, layer_past=None, use_cache=False):
        return hidden_states


class Top(Module):
    def forward(self, input_ids=None, past_key_values=None, attention_mask=None, position_ids=None,
                decoder_input_ids=None, labels=None, use_cache=None):
        return input_ids


def linear(n_out, n_in, bias=True):
    return Module(weight=Tensor(n_out, n_in), **({"bias": Tensor(n_out)} if bias else {}))


def gpt2(layers=48, hidden=1600, heads=16):
    def block():
        attn = Module(c_attn=Module(weight=Tensor(hidden, 3 * hidden), bias=Tensor(3 * hidden)),
                      c_proj=Module(weight=Tensor(hidden, hidden), bias=Tensor(hidden)),
                      attn_dropout=Module(), resid_dropout=Module(), num_heads=heads, split_size=hidden)
        mlp = Module(c_fc=Module(weight=Tensor(hidden, 4 * hidden), bias=Tensor(4 * hidden)),
                     c_proj=Module(weight=Tensor(4 * hidden, hidden), bias=Tensor(hidden)), dropout=Module())
        return Module(ln_1=Module(), attn=attn, ln_2=Module(), mlp=mlp)
    transformer = Module(wte=Module(), wpe=Module(), drop=Module(), h=[block() for _ in range(layers)], ln_f=Module())
    return Top(transformer=transformer, lm_head=Module())


def llama(layers=32, hidden=4096, heads=32, kv_heads=32, ffn=11008):
    def block():
        attn = Module(q_proj=linear(hidden, hidden, False), k_proj=linear(hidden, hidden, False),
                      v_proj=linear(hidden, hidden, False), o_proj=linear(hidden, hidden, False),
                      num_heads=heads, num_key_value_heads=kv_heads, hidden_size=hidden)
        mlp = Module(gate_proj=linear(ffn, hidden, False), up_proj=linear(ffn, hidden, False),
                     down_proj=linear(hidden, ffn, False))
        return Module(self_attn=attn, mlp=mlp)
    model = Module(embed_tokens=Module(), layers=[block() for _ in range(layers)], norm=Module())
    return Top(model=model, lm_head=Module())


def t5(layers=24, d=1024, heads=32, ffn=4096):
    def attention(first):
        extra = {"relative_attention_bias": Module(weight=Tensor(32, heads))} if first else {}
        return Module(q=linear(d, d, False), k=linear(d, d, False), v=linear(d, d, False), o=linear(d, d, False),
                      n_heads=heads, inner_dim=d, **extra)

    def ff():
        return Module(DenseReluDense=Module(wi=linear(ffn, d, False), wo=linear(d, ffn, False), dropout=Module()))

    def block(i, decoder):
        parts = [Module(SelfAttention=attention(i == 0))]
        if decoder:
            parts.append(Module(EncDecAttention=attention(False)))
        return Module(layer=parts + [ff()])

    def stack(decoder):
        return Module(embed_tokens=Module(), block=[block(i, decoder) for i in range(layers)], final_layer_norm=Module())
    return Top(shared=Module(), encoder=stack(False), decoder=stack(True), lm_head=Module())


class Group:
    def __init__(self, n):
        self.n = n

    def size(self):
        return self.n


def run(emit_fixture, fixture, make_model, workdir):
    script = subprocess.run([emit_fixture, fixture], check=True, capture_output=True, text=True).stdout
    again = subprocess.run([emit_fixture, fixture], check=True, capture_output=True, text=True).stdout
    assert script == again, "the schedule is not deterministic"
    name = "schedule_" + fixture.replace("-", "_")
    path = os.path.join(workdir, name + ".py")
    with open(path, "w") as f:
        f.write(script)
    py_compile.compile(path, doraise=True)
    module = importlib.import_module(name)
    slapo, torch = importlib.import_module("slapo"), importlib.import_module("torch")
    slapo.CALLS.clear()
    slapo.SEEDS.clear()
    torch.REGROUPED.clear()
    model = make_model()
    module.build_schedule(model, tp_group=Group(module.TP))
    return model, list(slapo.CALLS), list(torch.REGROUPED)


def targets(calls, primitive):
    return [c[1] for c in calls if c[0] == primitive]


def check_order(calls):
    # Slapo's schedules shard, then checkpoint, then trace and cut, then build.
    order = {"set_random_seed": 0, "shard": 0, "sync": 0, "fork_rng": 0, "checkpoint": 1, "trace_until": 2, "cut_pipeline_stage": 2, "build": 3}
    phases = [order[c[0]] for c in calls]
    assert phases == sorted(phases), "primitives out of order"
    assert calls[-1] == ("build", None)


def main():
    emit_fixture = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as workdir:
        fake = os.path.join(workdir, "fake")
        for package, text in (("slapo", FAKE_SLAPO), ("torch", FAKE_TORCH)):
            os.makedirs(os.path.join(fake, package))
            with open(os.path.join(fake, package, "__init__.py"), "w") as f:
                f.write(text)
        sys.path[:0] = [fake, workdir]

        # GPT-2 XL, tp=2 pp=3, partition {18, 15, 17}, recompute: stage 0 = embedding + h.0..16,
        # stage 1 = h.17..31, stage 2 = h.32..47 + head; Slapo cuts after h.16 and h.31.
        model, calls, regrouped = run(emit_fixture, "gpt2-tp2-pp3-uneven", gpt2, workdir)
        check_order(calls)
        layers = [f"transformer.h.{i}" for i in range(48)]
        assert targets(calls, "cut_pipeline_stage") == ["transformer.h.16", "transformer.h.31"], targets(calls, "cut_pipeline_stage")
        assert [c for c in calls if c[0] == "trace_until"] == [("trace_until", ("transformer",))]
        assert targets(calls, "checkpoint") == layers
        assert [c for c in calls if c[0] == "set_random_seed"] == [("set_random_seed", 0)]  # for fork_rng
        assert targets(calls, "fork_rng") == [f"{p}.attn.attn_dropout" for p in layers]
        shards = [c for c in calls if c[0] == "shard"]
        assert len(shards) == 6 * 48, len(shards)
        assert shards[:6] == [
            ("shard", "transformer.h.0.attn.c_attn", "weight", 1), ("shard", "transformer.h.0.attn.c_attn", "bias", 0),
            ("shard", "transformer.h.0.attn.c_proj", "weight", 0), ("shard", "transformer.h.0.mlp.c_fc", "weight", 1),
            ("shard", "transformer.h.0.mlp.c_fc", "bias", 0), ("shard", "transformer.h.0.mlp.c_proj", "weight", 0)]
        syncs = [c for c in calls if c[0] == "sync"]
        assert sorted({(c[1].split(".", 3)[3], c[2], c[3]) for c in syncs}) == [
            ("attn.c_attn", "bwd_post", "all_reduce"), ("attn.c_proj", "fwd_post", "all_reduce"),
            ("mlp.c_fc", "bwd_post", "all_reduce"), ("mlp.c_proj", "fwd_post", "all_reduce")]
        assert len(syncs) == 4 * 48
        assert len(regrouped) == 2 * 48  # weight and bias of every c_attn
        assert all(b.attn.num_heads == 8 and b.attn.split_size == 800 for b in model.transformer.h)
        print("gpt2-tp2-pp3-uneven: 288 shard, 192 sync, 48 fork_rng, 48 checkpoint, cuts after h.16 and h.31")

        # LLaMA 2 7B, tp=2 pp=4 {1, 11, 11, 11}: the embedding-only stage's cut moves after layers.0.
        model, calls, _ = run(emit_fixture, "llama-tp2-pp4-embedding-stage", llama, workdir)
        check_order(calls)
        assert targets(calls, "cut_pipeline_stage") == ["model.layers.0", "model.layers.10", "model.layers.21"]
        assert targets(calls, "checkpoint") == []
        assert len(targets(calls, "shard")) == 7 * 32 and len(targets(calls, "sync")) == 7 * 32
        assert targets(calls, "fork_rng") == [f"model.layers.{i}.self_attn" for i in range(32)]
        assert all(b.self_attn.num_heads == 16 and b.self_attn.num_key_value_heads == 16 and
                   b.self_attn.hidden_size == 2048 for b in model.model.layers)
        print("llama-tp2-pp4-embedding-stage: cuts after layers.0 (moved), layers.10, layers.21")

        # T5, tp=2 pp=4 {13, 12, 13, 12}: cuts after encoder.block.11, encoder, decoder.block.11.
        model, calls, _ = run(emit_fixture, "t5-tp2-pp4", t5, workdir)
        check_order(calls)
        assert targets(calls, "cut_pipeline_stage") == ["encoder.block.11", "encoder", "decoder.block.11"]
        assert [c for c in calls if c[0] == "trace_until"] == [("trace_until", ("encoder", "decoder"))]
        assert len(targets(calls, "shard")) == 24 * 6 + 24 * 10 + 2
        assert len(targets(calls, "sync")) == 24 * 6 + 24 * 10
        assert len(targets(calls, "fork_rng")) == 24 * 2 + 24 * 3
        assert len(targets(calls, "checkpoint")) == 48
        assert model.decoder.block[3].layer[1].EncDecAttention.n_heads == 16
        print("t5-tp2-pp4: cuts after encoder.block.11, encoder, decoder.block.11")


if __name__ == "__main__":
    main()
