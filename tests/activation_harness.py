#!/usr/bin/env python3
"""Measures the activation bytes one transformer layer keeps for its backward pass,
and the transient working set of its forward and backward passes.

CPU harness for checking fasop-cpp's analytic activation formulas
(src/costmodel/analytic_policy.cc, unit_activation_bytes; Korthikanti et al. 2022)
against real PyTorch autograd. It runs one forward pass of one layer on a
micro-batch whose input requires grad, and counts what autograd keeps.

Counting ("saved_bytes")
    A pack hook (torch.autograd.graph.saved_tensors_hooks) sees every tensor an
    op saves for backward. Each underlying storage is counted once (key: the
    storage's data pointer; bytes: the storage's nbytes, so a saved view keeps
    and counts its whole storage). Excluded, and listed under
    "excluded_tensors": parameters and buffers (and any tensor on their
    storage) and tensors shared by all layers of a micro-batch (the attention
    mask, RoPE frequencies). 0-dim tensors are excluded and listed under
    "scalar_tensors". The layer input counts when an op saves it (in a stack it
    is the previous layer's output). "op" names the grad_fn(s) that saved the
    storage, found by walking the autograd graph after the forward.
    Torch-version artifacts: torch 1.13's mean.dim backward keeps its input
    (MeanBackward1._saved_self, only to read numel()); torch >= 2 keeps only
    sizes. A storage held only by such a slot is moved to
    "torch_version_artifacts": "saved_bytes" is what current torch keeps,
    "saved_bytes_as_run" what the running torch kept (the difference is 4h
    bytes a token for each eager torchtitan RMSNorm in bf16 and fp32).
    Cross-check ("retained_check_bytes"): a TorchDispatchMode records a weak
    reference to the storage of every aten op output during the forward; after
    it, the storages created by the forward that are still alive (other than
    the layer's output) are what the graph keeps. It must equal the hook count
    less the storages that existed before the forward (the input, ids, labels);
    "retained_check_ok" says whether it does.
    "transient_peak_bytes": the most bytes of storages created by the forward
    alive at once; "transient_peak_fwd_bwd_bytes": the same over forward +
    backward, less the parameters' gradients. By default both come from the
    transient measurement below ("forward_peak_live_bytes", and the larger of
    it and "backward_peak_live_bytes", which counts the incoming gradient);
    with --no-transient they come from this pass as before (torch 1.13
    artifacts included, incoming gradient not counted, None for "op").

Precision
    fp32 and bf16 both run natively on CPU (torch 1.13 and newer support every
    op used here in bfloat16), so bf16 bytes are measured, not scaled. fp16
    would keep the same bytes as bf16 (2-byte activations; the same fp32
    statistics) but CPU fp16 matmuls are missing in torch 1.13, so it is not
    run. fp32 internal tensors (norm statistics, the fp32 upcast in torchtitan's
    RMSNorm, flash attention's logsumexp, the fp32 logits/softmax of the loss)
    are counted at their real size. If a bf16 op fails on some other torch the
    script stops with the error instead of guessing.

Layers (sequence-first [s, b, h] for Megatron, batch-first [b, s, h] for torchtitan)
    gpt           Megatron-LM "local" GPT layer: pre-LayerNorm, QKV linear with
                  bias, Megatron-Core DotProductAttention (baddbmm(beta=0,
                  alpha=1/sqrt(d)) of Q K^T, causal mask + softmax, attention
                  dropout 0.1, bmm with V), output projection, bias-dropout-add
                  (hidden dropout 0.1), LayerNorm, fc1 (4h) + GELU (tanh, as
                  Megatron's bias_gelu), fc2, bias-dropout-add.
                  bias-dropout-add is Megatron's jit-fused
                  bias_dropout_add_fused_train, EMULATED as one kernel
                  (BiasDropoutAddFn): it keeps the bool mask, as the eager ops
                  would, but allocates only mask and output. The unfused core
                  attention's baddbmm input is Megatron's global memory buffer:
                  one persistent [b*a, s, s] tensor shared by all layers,
                  excluded like the mask. Python function boundaries (which
                  decide when locals die in a no-grad forward) follow
                  Megatron-Core: _forward_attention / _forward_mlp,
                  SelfAttention.forward, MLP.forward (same for llama_megatron).
                  Emulated CUDA behaviour: LayerNorm keeps fp32 mean/rstd (as
                  apex FusedLayerNorm and CUDA layer_norm do; CPU torch would
                  keep them in bf16); dropout is aten.native_dropout (bool mask,
                  what F.dropout runs on CUDA; CPU F.dropout would keep a float
                  noise tensor); in bf16 the softmax is Megatron's fused
                  scaled_upper_triang_masked_softmax (keeps its bf16 output and
                  a 1-element fp32 scale tensor), in fp32 the eager
                  masked_fill_ + softmax path (the fused kernel needs 16-bit).
    gpt, flash    as above with the core attention replaced by FlashAttnEmu, an
                  EMULATION (custom autograd.Function, exact math, O(s^2)
                  memory inside forward only) that saves exactly what
                  FlashAttention-2 / cuDNN fused attention save: q, k, v, out,
                  softmax logsumexp fp32 [b, heads, s] and an int64[2] RNG
                  state; attention dropout is regenerated, not stored. q, k, v go
                  through Transformer Engine's get_qkv_layout rule (ported in
                  te_qkv_layout): interleaved views of the QKV output are kept
                  as views ("sbh3d"), unsupported layouts are made contiguous.
    llama         torchtitan Llama 3 TransformerBlock at commit 9dec370a
                  (torchtitan/models/llama/model.py, models/norms.py): eager
                  RMSNorm (x.float(), pow, mean, rsqrt, type_as, * weight),
                  wq/wk/wv without bias, GQA with repeat_kv (expand+reshape
                  copies), complex-multiply RoPE, F.scaled_dot_product_attention
                  (torch 1.13 has none: emulated by FlashAttnEmu in its SDPA
                  flavour, which saves q, k, v, out, logsumexp and two 0-dim
                  philox tensors, and returns out as a [b,h,s,d] view of a
                  [b,s,h,d] buffer as the CUDA flash kernel does), wo, SwiGLU
                  w2(silu(w1 x) * w3 x) with torchtitan's hidden size rule
                  (multiple_of 256 of int(2*4h/3)).
    llama_megatron the same Llama layer as Megatron-Core + Transformer Engine
                  keep it, EMULATED with custom autograd.Functions: RMSNorm
                  fused into the next linear (TE LayerNormLinear keeps its
                  input, the normalized output and rsigma fp32 [s*b]); fused
                  QKV GEMM; TE fused RoPE (keeps only the shared freqs);
                  flash attention (TE layout rule: q, k are fresh RoPE outputs,
                  v a strided view of the QKV output, "not_supported", so TE
                  makes them contiguous and the QKV output is freed);
                  Megatron's fused bias_swiglu (keeps its 2f-wide input); fc2
                  keeps its input. No dropout (Llama trains with 0).
                  Assumptions, TE not being mirrored: TE version with
                  get_qkv_layout as in TE 1.x-2.x; no fp8; rng_state int64[2].
    loss_megatron final LayerNorm, output projection, Megatron-Core
                  _VocabParallelCrossEntropy at tp=1 (ported from
                  megatron/core/tensor_parallel/cross_entropy.py: logits
                  .float() inside the Function, in-place max-subtract, exp,
                  normalise; keeps the fp32 softmax, the bool target mask and
                  the int64 masked target), losses * loss_mask sum.
    loss_torchtitan final RMSNorm, output projection, then
                  F.cross_entropy(pred.flatten(0, 1).float(), labels.flatten(0, 1))
                  (torchtitan train.py at 9dec370a, with `del pred` before backward).
    embedding     Megatron LanguageModelEmbedding: word + learned position
                  embedding (position ids: arange(s) per sample, stacked into a
                  [b, s] batch as Megatron's data loader does),
                  transpose to [s, b, h], embedding dropout 0.1.

Recomputation ("recompute")
    none       plain forward.
    full       gpt/llama_megatron: Megatron's tensor_parallel.checkpoint
               (CheckpointFunction, reentrant: save_for_backward of its
               arguments) around the layer; llama: torchtitan's
               ptd_checkpoint_wrapper, i.e. torch.utils.checkpoint with
               use_reentrant=False, preserve_rng_state=False, whose inputs are
               held by closure: its pack hooks hide them from ours, so the
               harness records the checkpoint's tensor arguments explicitly
               (op "checkpoint_input") and the liveness cross-check confirms
               that nothing created by the forward stays alive.
    selective  gpt/llama_megatron: Megatron's selective recomputation of the
               core attention (_checkpointed_attention_forward:
               tensor_parallel.checkpoint(q, k, v, mask, rotary, mask-type
               int32[1])).
    op         llama: torchtitan's per-op selective activation checkpointing
               (parallelize_llama.py at 9dec370a: _save_list = {aten.mm,
               sdpa efficient/flash, reduce_scatter, abs, max}; every second
               mm in forward order is recomputed). At HEAD
               (torchtitan/distributed/activation_checkpoint.py) the save set
               is the partitioner's compute-intensive ops (mm, bmm, addmm,
               sdpa variants, ...) plus linear, topk, comms, with the same
               every-second-mm rule: for this layer it picks the same ops.
               torch 1.13 lacks create_selective_checkpoint_contexts, so this
               is an EMULATION: the layer runs under a TorchDispatchMode that
               records every aten op's outputs in order (ops inside the SDPA
               emulation are hidden; its outputs are recorded as
               aten._scaled_dot_product_flash_attention); the kept set is the
               checkpoint's inputs plus the outputs of the ops the policy
               saves (MUST_SAVE outputs are cached by SAC at forward time),
               deduplicated by storage. Nothing else survives the forward.

Transient working set ("forward_transient_peak_bytes", "backward_transient_peak_bytes")
    A separate pass per record: a fresh layer, one forward and one backward
    under MemTracker, a TorchDispatchMode. After every visible aten op and
    every emulated kernel's outputs it drops the storages that died (their
    StorageWeakRef expired, i.e. refcount zero: tensors freed during backward,
    saved tensors released by autograd, are seen as freed) and registers
    outputs on storages not alive before (one storage counted once, whole
    nbytes). Never counted: parameters, buffers, the layer's inputs, tensors
    shared across layers (mask, RoPE tables, the global memory buffer).
    Events are replayed afterwards so that parameter gradients (the storages
    that end up as .grad, "param_grad_bytes") are left out everywhere: a
    framework accumulates them into preallocated buffers. Other weight-gradient
    temporaries (e.g. grad * x before the sum for an RMSNorm weight) count.
    forward_transient_peak_bytes = max over the forward of live bytes created by
        the forward, minus the bytes still alive at the start of backward
        (= the saved bytes created by the forward, checked against the hook
        count: "transient_saved_check_ok"). It includes the layer's output
        ("output_bytes"): with the input counted in a layer's saved bytes, the
        peak during layer i's forward is sum_{j<=i} saved_j + this. For full
        recompute it is the no-grad forward's working set.
    backward_transient_peak_bytes = max over the backward of live bytes, minus the
        live bytes at its start (the saved set). The incoming gradient (a fresh
        ones tensor of the output's shape, "incoming_grad_bytes") is created by
        the first backward op of a GradSeed root and owned by the engine, so it
        is live from the start and freed when no longer used. Includes
        recomputation (full, selective, op) and activation gradients; the input's
        gradient ("input_grad_bytes") is what is left at the end.
    Emulation details that matter here (ASSUMED, not mirrored from CUDA code):
        flash attention backward allocates dq, dk, dv (inputs' dtype) plus
        softmax_d fp32 [b,a,s] and dq_accum fp32 [b,s,a,d] (FA2 mha_bwd; cuDNN
        via TE taken to be the same, GQA-native); FA2's padding of s to 128 is
        not modelled, and FA2 dk/dv_expanded for GQA never arise (torchtitan
        repeats kv; TE is taken to use cuDNN). Megatron's fused causal softmax
        backward works in place (bwd_cuda: "completely in-place"). apex layer
        norm backward allocates grad_input and fp32 part_grad_gamma/beta
        [16, h]. TE LayerNormLinear backward: dgrad GEMM output [tokens, h],
        wgrad, then rmsnorm_bwd -> dx (dgrad freed at return; TE's
        dgamma_part workspace not modelled). bias_swiglu backward allocates one
        [.., 2f] tensor; TE fused RoPE backward one output. Workspaces inside
        real aten ops (cuBLAS etc.) are not seen. torch 1.13's MeanBackward1
        artifact is avoided here: TitanRMSNorm's mean runs as
        MeanLastDimSizesOnly (torch >= 2 semantics). llama "full" is torch
        1.13's non-reentrant checkpoint (no early stop: the recomputation also
        rebuilds the output); "op" runs it with SACMode, an emulation of torch
        >= 2.4 SAC (cached outputs of saved ops replayed during recomputation).
        Megatron's reentrant CheckpointFunction keeps the recomputed output
        alive during its inner backward, as the real one does.
    Per-token decomposition ("transient.fit", "transient.envelope"): every
    layer is also run at FIT_SIZES; runs whose op sequence matches (b = 1
    differs for some layers: .contiguous() of a transposed [1, ...] tensor
    copies nothing) give each storage an exact symbolic size c1*m1 (+ c2*m2)
    over monomials s*b*{h, kv, f, v, a, a*s, 1} (kv = kv_heads * head_dim;
    a*s*b*s is "as" per token) and per-layer constants {1, h, f, kv, v, s,
    s*d, s*s, h*h, ...} (d = head_dim); GPT has kv = h and f = 4h, folded into
    h. "fit": the transient at this size as per_token coefficients (bytes per
    token = sum c*term) plus const bytes, exact at this size;
    "same_formula_at_all_fit_sizes" says whether the same peak event wins at
    every fitted size. "envelope": for every event, the live-set formula minus
    the backward-start formula, with forms dominated coefficient-wise removed:
    the transient at ANY size with this op sequence is the max over these
    forms (checked exactly at every fitted size).

Output
    --json PATH   list of records (sorted keys), every layer x recompute x
                  dtype (fp32, bf16) x two sizes.
    --summary     one line per record: saved bytes split into sbh (per-token
                  tensors at least h/a wide), sb (narrow per-token tensors:
                  statistics, masks of ids, logsumexp), a s^2 b (tensors with
                  two sequence dimensions) and constant bytes; a second line
                  with the forward and backward transients in bytes and bytes
                  per token (fitted formula at this size), and, where it has
                  more than one form, the envelope.

Run: /usr/bin/python3 tests/activation_harness.py --json /tmp/act.json --summary
"""

import argparse
import contextlib
import json
import math
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

try:
    from torch.utils._python_dispatch import TorchDispatchMode
except ImportError:  # pragma: no cover - very old torch
    TorchDispatchMode = None

try:
    from torch.multiprocessing.reductions import StorageWeakRef
except ImportError:  # pragma: no cover
    StorageWeakRef = None

import torch.utils.checkpoint as torch_checkpoint

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}

# Two sizes, chosen so that the sequence length equals no other dimension
# (the summary recognises score tensors by two sequence dimensions), with
# vocabularies Megatron would not pad (multiples of 128).
SIZES = [
    dict(hidden=256, heads=4, kv_heads=2, sequence=192, micro_batch=2, vocab=1024),
    dict(hidden=384, heads=6, kv_heads=2, sequence=320, micro_batch=1, vocab=1536),
]


# --------------------------------------------------------------------------
# Storage helpers (torch 1.13: TypedStorage via .storage(); newer: untyped_storage())
# --------------------------------------------------------------------------

def _storage(t):
    if hasattr(t, "untyped_storage"):
        return t.untyped_storage()
    return t.storage()


def storage_key(t):
    return _storage(t).data_ptr()


def storage_nbytes(t):
    st = _storage(t)
    n = st.nbytes()
    return int(n)


def _weak(t):
    st = _storage(t)
    if StorageWeakRef is not None:
        try:
            return StorageWeakRef(st)
        except Exception:  # pragma: no cover
            pass
    return None


def _expired(w):
    return w.expired()


def dtype_name(dt):
    return str(dt).replace("torch.", "")


def flatten_tensors(obj):
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        out = []
        for o in obj:
            out.extend(flatten_tensors(o))
        return out
    return []


# --------------------------------------------------------------------------
# Op recorder: a TorchDispatchMode that sees every aten op (forward and backward)
# --------------------------------------------------------------------------

_ACTIVE_RECORDER = []


class ActiveMode(TorchDispatchMode if TorchDispatchMode is not None else object):
    """A dispatch mode that the harness's helpers find on _ACTIVE_RECORDER while it is entered."""

    def __enter__(self):
        _ACTIVE_RECORDER.append(self)
        return super().__enter__()

    def __exit__(self, *exc):
        _ACTIVE_RECORDER.pop()
        return super().__exit__(*exc)


class OpRecorder(ActiveMode):
    """Records aten op outputs: weak storage references (liveness, peaks) and,
    with keep_outputs, the ordered op list with strong references (SAC emulation)."""

    def __init__(self, excluded_keys=(), keep_outputs=False, track=True):
        super().__init__()
        self.excluded = set(excluded_keys)
        self.keep_outputs = keep_outputs
        self.track = track
        self.ops = []  # (op name, [tensors]) for the SAC policy
        self.entries = []  # [uid, weakref, nbytes, key, op]
        self.live_by_key = {}
        self.hidden = 0
        self.timeline = []  # list of frozenset(uid) after each op
        self.uid = 0

    def _track(self, tensors, opname, force=False):
        if not self.track or (self.hidden and not force):
            return
        for t in tensors:
            try:
                key = storage_key(t)
            except Exception:
                continue
            if key == 0 or key in self.excluded:
                continue
            prev = self.live_by_key.get(key)
            if prev is not None and not _expired(prev[1]):
                continue
            w = _weak(t)
            if w is None:
                continue
            entry = [self.uid, w, storage_nbytes(t), key, opname]
            self.uid += 1
            self.entries.append(entry)
            self.live_by_key[key] = entry
        alive = frozenset(e[0] for e in self.live_by_key.values() if not _expired(e[1]))
        self.timeline.append(alive)

    def record_external(self, opname, outputs, sac):
        """Called by emulated fused kernels: their outputs as one op (their
        internal ops are hidden: a fused kernel allocates only its outputs)."""
        tensors = flatten_tensors(outputs)
        if sac:
            self.ops.append((opname, tensors if self.keep_outputs else []))
        self._track(tensors, opname, force=True)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = str(func)
        tensors = flatten_tensors(out)
        if self.hidden == 0:
            self.ops.append((name, tensors if self.keep_outputs else []))
            self._track(tensors, name)
        return out

    def sizes(self):
        return {e[0]: e[2] for e in self.entries}

    def alive_created(self, skip_keys=()):
        skip = set(skip_keys)
        out = {}
        for e in self.live_by_key.values():
            if not _expired(e[1]) and e[3] not in skip:
                out[e[3]] = e[2]
        return out

    def peak(self, start=0, exclude_uids=()):
        sizes = self.sizes()
        ex = set(exclude_uids)
        best = 0
        for alive in self.timeline[start:]:
            best = max(best, sum(sizes[u] for u in alive if u not in ex))
        return best


@contextlib.contextmanager
def hidden_ops():
    """Hides the aten ops of an emulated fused kernel from the SAC op list and
    from the transient-memory tracking."""
    for r in _ACTIVE_RECORDER:
        r.hidden += 1
    try:
        yield
    finally:
        for r in _ACTIVE_RECORDER:
            r.hidden -= 1


def record_fused_op(name, outputs, sac=False):
    """Reports the outputs of an emulated fused kernel as one op to the active
    recorders, innermost first. A recorder may return substitute outputs (the
    per-op SAC emulation replays cached outputs during recomputation)."""
    for r in reversed(list(_ACTIVE_RECORDER)):
        sub = r.record_external(name, outputs, sac)
        if sub is not None:
            outputs = sub
    return outputs


# --------------------------------------------------------------------------
# Saved-tensor recorder (pack hook)
# --------------------------------------------------------------------------

class SavedRecorder:
    def __init__(self):
        self.saved = []

    def pack(self, t):
        self.saved.append(t)
        return t

    @staticmethod
    def unpack(t):
        return t

    def hooks(self):
        return torch.autograd.graph.saved_tensors_hooks(self.pack, self.unpack)


# Saved slots that torch 1.13 fills and newer torch does not (mean.dim kept its
# input only to read numel(); torch >= 2 saves sym_sizes/sym_numel instead).
TORCH_ARTIFACT_SLOTS = {("MeanBackward1", "_saved_self")}


def graph_saved_slots(roots):
    """storage key -> set of (grad_fn name, saved slot) that hold a tensor on it."""
    slots = {}
    seen = set()
    keep = []  # strong references: python wrappers of graph nodes must not be recycled
    stack = [r.grad_fn for r in roots if isinstance(r, torch.Tensor) and r.grad_fn is not None]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        keep.append(node)
        found = []
        try:
            found.extend(("saved_tensors", t) for t in flatten_tensors(node.saved_tensors))
        except Exception:
            pass
        for attr in dir(node):
            if attr.startswith("_saved_"):
                try:
                    found.extend((attr, t) for t in flatten_tensors(getattr(node, attr)))
                except Exception:
                    pass
        for attr, t in found:
            try:
                slots.setdefault(storage_key(t), set()).add((node.name(), attr))
            except Exception:
                pass
        for nxt, _ in node.next_functions:
            if nxt is not None:
                stack.append(nxt)
    return slots


def graph_op_names(roots):
    """storage key -> comma-separated grad_fn names, and the set of storage keys
    held only by TORCH_ARTIFACT_SLOTS."""
    slots = graph_saved_slots(roots)
    names = {k: ",".join(sorted({n for n, _ in v})) for k, v in slots.items()}
    artifacts = {k for k, v in slots.items() if v and v <= TORCH_ARTIFACT_SLOTS}
    return names, artifacts


def summarize_saved(tensors, excluded, op_names=None, default_op=None, artifacts=()):
    """Unique storages of `tensors`: (kept, excluded, scalars, torch-version artifacts)."""
    kept, dropped, scalars, arts = [], [], [], []
    seen = set()
    op_names = op_names or {}
    for t in tensors:
        if not isinstance(t, torch.Tensor):
            continue
        key = storage_key(t)
        if key in seen:
            continue
        seen.add(key)
        rec = {
            "shape": list(t.shape),
            "dtype": dtype_name(t.dtype),
            "bytes": storage_nbytes(t),
            "op": op_names.get(key, default_op or "?"),
            "_key": key,
        }
        if key in excluded:
            rec["reason"] = excluded[key]
            dropped.append(rec)
        elif t.dim() == 0:
            scalars.append(rec)
        elif key in artifacts:
            arts.append(rec)
        else:
            kept.append(rec)
    return kept, dropped, scalars, arts


# --------------------------------------------------------------------------
# Emulated fused kernels
# --------------------------------------------------------------------------

def _dropout_keep_mask(seed, shape, p):
    g = torch.Generator()
    g.manual_seed(int(seed))
    return torch.rand(shape, generator=g) >= p


class FlashAttnEmu(torch.autograd.Function):
    """EMULATION of a flash-attention forward/backward (exact math on CPU).

    Saves what FlashAttention-2 (flash_attn_func), cuDNN fused attention (TE) and
    aten._scaled_dot_product_flash_attention save: q, k, v, out, the softmax
    logsumexp in fp32, and the RNG state (flavour "te": int64[2] rng_state;
    "sdpa": 0-dim philox seed and offset). No s x s tensor is kept.

    layout "sbhd": q [s,b,h,d], k/v [s,b,hk,d] (GQA native), out [s,b,h,d].
    layout "bhsd": q [b,h,s,d], k/v [b,hk,s,d], out [b,h,s,d] returned as a view of
    a [b,s,h,d] buffer (the CUDA kernel's layout).
    """

    @staticmethod
    def forward(ctx, q, k, v, dropout_p, layout, flavour):
        with hidden_ops():
            if layout == "sbhd":
                qb, kb, vb = (x.permute(1, 2, 0, 3) for x in (q, k, v))
            else:
                qb, kb, vb = q, k, v
            b, h, s, d = qb.shape
            rep = h // kb.shape[1]
            acc = torch.promote_types(q.dtype, torch.float32)
            kf = kb.to(acc).repeat_interleave(rep, dim=1)
            vf = vb.to(acc).repeat_interleave(rep, dim=1)
            scale = 1.0 / math.sqrt(d)
            scores = torch.matmul(qb.to(acc), kf.transpose(-1, -2)) * scale
            causal = torch.ones(s, s, dtype=torch.bool).triu(1)
            scores = scores.masked_fill(causal, float("-inf"))
            lse = torch.logsumexp(scores, dim=-1)  # [b,h,s] fp32
            probs = torch.exp(scores - lse.unsqueeze(-1))
            seed = 1234
            if dropout_p > 0:
                keep = _dropout_keep_mask(seed, probs.shape, dropout_p)
                probs = probs * keep / (1.0 - dropout_p)
            o = torch.matmul(probs, vf)  # [b,h,s,d] fp32
            if layout == "sbhd":
                out = o.permute(2, 0, 1, 3).to(q.dtype).contiguous()
                lse_saved = lse.unsqueeze(-1).contiguous()  # TE/cuDNN: [b,h,s,1]
            else:
                buf = torch.empty(b, s, h, d, dtype=q.dtype)
                buf.copy_(o.transpose(1, 2))
                out = buf.transpose(1, 2)
                lse_saved = lse.contiguous()
            if flavour == "sdpa":
                rng = (torch.tensor(seed, dtype=torch.int64), torch.tensor(0, dtype=torch.int64))
            else:
                rng = (torch.tensor([seed, 0], dtype=torch.int64),)
            del scores, probs, o, kf, vf
        res = record_fused_op("aten._scaled_dot_product_flash_attention", (out, lse_saved) + rng, sac=True)
        out, lse_saved, rng = res[0], res[1], tuple(res[2:])  # SAC replay substitutes its cached outputs
        ctx.save_for_backward(q, k, v, out, lse_saved, *rng)
        ctx.dropout_p, ctx.layout, ctx.flavour = dropout_p, layout, flavour
        ctx.mark_non_differentiable(lse_saved)
        return out, lse_saved

    @staticmethod
    def backward(ctx, dout, _dlse):
        with hidden_ops():
            grads = FlashAttnEmu._backward(ctx, dout)
            ws = FlashAttnEmu._workspace(ctx)
        # the kernel allocates dq, dk, dv and its workspace, runs, then frees the workspace
        grads = record_fused_op("flash_attention_backward", grads)
        record_fused_op("flash_attention_backward_workspace", ws)
        del ws
        return tuple(grads) + (None, None, None)

    @staticmethod
    def _workspace(ctx):
        """What the real backward kernel allocates besides dq, dk, dv (ASSUMED):
        FlashAttention-2 mha_bwd (torch SDPA flash, flavour "sdpa") allocates
        softmax_d fp32 [b, h, s_q] and dq_accum fp32 [b, s_q, h, d], and with
        fewer kv heads than heads dk_expanded, dv_expanded [b, s_k, h, d] in the
        input dtype; cuDNN fused attention through TE (flavour "te") is taken to
        allocate the same softmax sum and fp32 dQ accumulator, GQA-native (no
        expansion). FA2 rounds s_q up to 128 and d up to 32; not modelled."""
        q, k = ctx.saved_tensors[0], ctx.saved_tensors[1]
        if ctx.layout == "sbhd":
            s, b, h, d = q.shape
            hk = k.shape[2]
        else:
            b, h, s, d = q.shape
            hk = k.shape[1]
        ws = [torch.empty(b, h, s, dtype=torch.float32), torch.empty(b, s, h, d, dtype=torch.float32)]
        if ctx.flavour == "sdpa" and hk != h:
            ws += [torch.empty(b, s, h, d, dtype=q.dtype), torch.empty(b, s, h, d, dtype=q.dtype)]
        return tuple(ws)

    @staticmethod
    def _backward(ctx, dout):
        q, k, v, out, lse, *rng = ctx.saved_tensors
        seed = int(rng[0].reshape(-1)[0])
        if ctx.layout == "sbhd":
            perm = lambda x: x.permute(1, 2, 0, 3)  # noqa: E731
            qb, kb, vb, ob, dob = (perm(x) for x in (q, k, v, out, dout))
            lse = lse.squeeze(-1)
        else:
            qb, kb, vb, ob, dob = q, k, v, out, dout
        b, h, s, d = qb.shape
        hk = kb.shape[1]
        rep = h // hk
        acc = torch.promote_types(q.dtype, torch.float32)
        qf, of, dof = qb.to(acc), ob.to(acc), dob.to(acc)
        kf = kb.to(acc).repeat_interleave(rep, dim=1)
        vf = vb.to(acc).repeat_interleave(rep, dim=1)
        scale = 1.0 / math.sqrt(d)
        scores = torch.matmul(qf, kf.transpose(-1, -2)) * scale
        causal = torch.ones(s, s, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(causal, float("-inf"))
        p = torch.exp(scores - lse.unsqueeze(-1))
        if ctx.dropout_p > 0:
            z = _dropout_keep_mask(seed, p.shape, ctx.dropout_p).to(acc) / (1.0 - ctx.dropout_p)
        else:
            z = torch.ones_like(p)
        dv = torch.matmul((p * z).transpose(-1, -2), dof)
        dp = torch.matmul(dof, vf.transpose(-1, -2)) * z
        delta = (dof * of).sum(-1, keepdim=True)
        ds = p * (dp - delta) * scale
        dq = torch.matmul(ds, kf)
        dk = torch.matmul(ds.transpose(-1, -2), qf)
        dk = dk.view(b, hk, rep, s, d).sum(2)
        dv = dv.view(b, hk, rep, s, d).sum(2)
        if ctx.layout == "sbhd":
            back = lambda x: x.permute(2, 0, 1, 3)  # noqa: E731
            dq, dk, dv = back(dq), back(dk), back(dv)
        return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype)


def flash_attention(q, k, v, dropout_p, layout, flavour):
    return FlashAttnEmu.apply(q, k, v, dropout_p, layout, flavour)[0]


def te_qkv_layout(q, k, v):
    """Port of Transformer Engine's get_qkv_layout (sbhd) decision: keeps q, k, v
    as they are where TE supports their layout, else makes them contiguous."""

    def run(q, k, v):
        ptr = storage_key(q)
        ptrs_qkv = all(storage_key(x) == ptr for x in (q, k, v))
        ptrs_qk = storage_key(k) == ptr
        ptrs_kv = storage_key(k) == storage_key(v)
        shapes_qkv = all(q.shape == x.shape for x in (q, k, v))
        shapes_kv = k.shape[:-1] == v.shape[:-1]
        strides_qkv = all(q.stride() == x.stride() for x in (q, k, v))
        strides_kv = tuple(sk / k.shape[-1] for sk in k.stride()[:-1]) == tuple(
            sv / v.shape[-1] for sv in v.stride()[:-1])
        hd = q.shape[-1] * q.shape[-2]
        off3hd = all(x.storage_offset() == i * hd for i, x in enumerate((q, k, v)))
        offh3d = all(x.storage_offset() == i * q.shape[-1] for i, x in enumerate((q, k, v)))
        prods = [x.numel() for x in (q, k)]
        base = prods[0] if ptrs_qkv else 0
        khd = k.shape[-1] * k.shape[-2]
        off2hd = all(x.storage_offset() == base + i * khd for i, x in enumerate((k, v)))
        offh2d = all(x.storage_offset() == base + i * k.shape[-1] for i, x in enumerate((k, v)))
        hd_qkv = (all(x.storage_offset() == sum(prods[:i]) for i, x in enumerate((q, k, v)))
                  if ptrs_qkv else all(x.storage_offset() == 0 for x in (q, k, v)))
        hd_qk = (all(x.storage_offset() == sum(prods[:i]) for i, x in enumerate((q, k)))
                 if (not ptrs_qkv and ptrs_qk) else all(x.storage_offset() == 0 for x in (q, k)))
        hd_kv = (all(x.storage_offset() == sum(prods[1:i + 1]) for i, x in enumerate((k, v)))
                 if (not ptrs_qkv and ptrs_kv) else all(x.storage_offset() == 0 for x in (k, v)))
        if ptrs_qkv and strides_qkv and shapes_qkv and off3hd:
            return "sb3hd"
        if ptrs_qkv and strides_qkv and shapes_qkv and offh3d:
            return "sbh3d"
        if ptrs_kv and strides_kv and shapes_kv and off2hd:
            return "sbhd_sb2hd"
        if ptrs_kv and strides_kv and shapes_kv and offh2d:
            return "sbhd_sbh2d"
        if strides_kv and shapes_kv and (hd_qkv or hd_kv or hd_qk):
            return "sbhd_sbhd_sbhd"
        return "not_supported"

    layout = run(q, k, v)
    if layout == "not_supported":
        q, k, v = (x.contiguous() for x in (q, k, v))
        layout = run(q, k, v)
    return q, k, v, layout


class FusedLayerNormFn(torch.autograd.Function):
    """apex FusedLayerNormAffineFunction / CUDA layer_norm: keeps input, weight,
    bias and fp32 mean, invvar [rows]."""

    @staticmethod
    def forward(ctx, x, weight, bias, eps):
        with hidden_ops():
            xf = x.float()
            mean = xf.mean(-1)
            var = (xf - mean.unsqueeze(-1)).pow(2).mean(-1)
            invvar = torch.rsqrt(var + eps)
            y = ((xf - mean.unsqueeze(-1)) * invvar.unsqueeze(-1) * weight.float() + bias.float()).to(x.dtype)
            mean, invvar = mean.reshape(-1), invvar.reshape(-1)
        record_fused_op("fused_layer_norm", (y, mean, invvar))
        ctx.save_for_backward(x, weight, bias, mean, invvar)
        ctx.eps = eps
        return y

    @staticmethod
    def backward(ctx, gy):
        # apex cuda_layer_norm_gradient: grad_input, grad_gamma, grad_beta, and
        # fp32 part_grad_gamma/part_grad_beta [part_size=16, h] workspaces (ASSUMED).
        x, w, b, _, _ = ctx.saved_tensors
        with hidden_ops(), torch.enable_grad():
            xd, wd, bd = (t.detach().requires_grad_() for t in (x, w, b))
            y = F.layer_norm(xd.float(), xd.shape[-1:], wd.float(), bd.float(), ctx.eps).to(x.dtype)
            grads = torch.autograd.grad(y, (xd, wd, bd), gy)
            ws = (torch.empty(16, x.shape[-1], dtype=torch.float32), torch.empty(16, x.shape[-1], dtype=torch.float32))
        grads = record_fused_op("fused_layer_norm_backward", grads)
        record_fused_op("fused_layer_norm_backward_workspace", ws)
        del ws
        return tuple(grads) + (None,)


def _rmsnorm_ref(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(x.dtype)


class TELayerNormLinearFn(torch.autograd.Function):
    """Transformer Engine LayerNormLinear with RMSNorm (no fp8, no bias): keeps the
    input, the normalized output ln_out, rsigma fp32 [rows], and the weights."""

    @staticmethod
    def forward(ctx, x, ln_weight, weight, eps):
        with hidden_ops():
            xf = x.float()
            rsigma = torch.rsqrt(xf.pow(2).mean(-1) + eps).reshape(-1)
            ln_out = (xf * rsigma.view(x.shape[:-1]).unsqueeze(-1) * ln_weight.float()).to(x.dtype)
        record_fused_op("te_rmsnorm", (ln_out, rsigma))
        with hidden_ops():
            out = F.linear(ln_out, weight)
        record_fused_op("te_gemm", (out,))
        ctx.save_for_backward(x, ln_weight, weight, ln_out, rsigma)
        ctx.eps = eps
        return out

    @staticmethod
    def backward(ctx, gy):
        # TE _LayerNormLinear.backward: dgrad GEMM (new [tokens, h] tensor), wgrad
        # GEMM (the weight's gradient), then rmsnorm_bwd(dgrad, ...) -> dx, dgamma;
        # dgrad is freed on return. (rmsnorm_bwd's small dgamma_part workspace is
        # not modelled.)
        x, lw, w, ln_out, _ = ctx.saved_tensors
        with hidden_ops():
            dgrad = gy.matmul(w)
        (dgrad,) = record_fused_op("te_dgrad_gemm", (dgrad,))
        with hidden_ops():
            gw = gy.reshape(-1, gy.shape[-1]).t().matmul(ln_out.reshape(-1, ln_out.shape[-1]))
        (gw,) = record_fused_op("te_wgrad_gemm", (gw,))
        with hidden_ops(), torch.enable_grad():
            xd, lwd = x.detach().requires_grad_(), lw.detach().requires_grad_()
            ln = _rmsnorm_ref(xd, lwd, ctx.eps)
            gx, glw = torch.autograd.grad(ln, (xd, lwd), dgrad)
        gx, glw = record_fused_op("te_rmsnorm_backward", (gx, glw))
        del dgrad
        return gx, glw, gw, None


class SwiGLUFn(torch.autograd.Function):
    """Megatron's fused bias_swiglu (no bias): keeps only its input [.., 2f]."""

    @staticmethod
    def forward(ctx, y):
        with hidden_ops():
            a, b = torch.chunk(y, 2, -1)
            out = F.silu(a) * b
        ctx.save_for_backward(y)
        return record_fused_op("bias_swiglu", (out,))[0]

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        with hidden_ops(), torch.enable_grad():
            yd = y.detach().requires_grad_()
            a, b = torch.chunk(yd, 2, -1)
            (gy,) = torch.autograd.grad(F.silu(a) * b, (yd,), g)
        return record_fused_op("bias_swiglu_backward", (gy,))[0]


class FusedRoPEFn(torch.autograd.Function):
    """TE fused_apply_rotary_pos_emb (sbhd, rotate-half): keeps only freqs."""

    @staticmethod
    def _rot(t, freqs, sign):
        d = freqs.shape[-1]
        cos, sin = freqs.cos().to(t.dtype), freqs.sin().to(t.dtype)
        x1, x2 = t[..., : d // 2], t[..., d // 2:]
        rot = torch.cat((-x2, x1), dim=-1)
        return t * cos + sign * rot * sin

    @staticmethod
    def forward(ctx, t, freqs):
        ctx.save_for_backward(freqs)
        with hidden_ops():
            out = FusedRoPEFn._rot(t, freqs, 1.0)
        return record_fused_op("fused_rope", (out,))[0]

    @staticmethod
    def backward(ctx, g):
        (freqs,) = ctx.saved_tensors
        with hidden_ops():
            # the rotation is orthogonal: its transpose is the rotation by -angle
            gt = FusedRoPEFn._rot(g, -freqs, 1.0)
        return record_fused_op("fused_rope_backward", (gt,))[0], None


class ScaledUpperTriangMaskedSoftmax(torch.autograd.Function):
    """Megatron's fused causal softmax kernel: keeps its (16-bit) output and a
    1-element fp32 scale tensor."""

    @staticmethod
    def forward(ctx, inputs, scale):
        scale_t = torch.tensor([scale])
        with hidden_ops():
            s = inputs.shape[-1]
            mask = torch.ones(s, s, dtype=torch.bool).triu(1)
            x = (inputs.float() * scale).masked_fill(mask, float("-inf"))
            out = torch.softmax(x, -1).to(inputs.dtype)
        record_fused_op("scaled_upper_triang_masked_softmax", (out,))
        ctx.save_for_backward(out, scale_t)
        return out

    @staticmethod
    def backward(ctx, g):
        # Megatron's bwd_cuda: output_grads.contiguous(), then "backward pass is
        # completely in-place": the input gradient is written into output_grads.
        out, scale_t = ctx.saved_tensors
        g = g.contiguous()
        with hidden_ops():
            of, gf = out.float(), g.float()
            gi = (of * (gf - (gf * of).sum(-1, keepdim=True)) * float(scale_t[0])).to(g.dtype)
            g.copy_(gi)
            del gi, of, gf
        return record_fused_op("scaled_upper_triang_masked_softmax_backward", (g,))[0], None


class MegatronCheckpoint(torch.autograd.Function):
    """megatron.core.tensor_parallel.random.CheckpointFunction (reentrant):
    runs under no_grad and save_for_backward()s its tensor arguments.
    (It also stashes CPU/CUDA RNG states as ctx attributes, not counted.)"""

    @staticmethod
    def forward(ctx, run_function, *args):
        ctx.run_function = run_function
        with torch.no_grad():
            outputs = run_function(*args)
        ctx.save_for_backward(*args)
        return outputs

    @staticmethod
    def backward(ctx, *grads):
        inputs = ctx.saved_tensors
        detached = [x.detach().requires_grad_(x.requires_grad) for x in inputs]
        with torch.enable_grad():
            outputs = ctx.run_function(*detached)
        if isinstance(outputs, torch.Tensor):
            outputs = (outputs,)
        torch.autograd.backward(outputs, grads)
        return (None,) + tuple(x.grad if x.requires_grad else None for x in detached)


class VocabParallelCrossEntropyTP1(torch.autograd.Function):
    """megatron/core/tensor_parallel/cross_entropy.py _VocabParallelCrossEntropy at
    tp=1 (the all_reduces are identities), label_smoothing 0."""

    @staticmethod
    def forward(ctx, vocab_parallel_logits, target):
        vocab_parallel_logits = vocab_parallel_logits.float()
        logits_max = torch.max(vocab_parallel_logits, dim=-1)[0]
        vocab_start_index, vocab_end_index = 0, vocab_parallel_logits.size(-1)
        vocab_parallel_logits -= logits_max.unsqueeze(dim=-1)
        target_mask = (target < vocab_start_index) | (target >= vocab_end_index)
        masked_target = target.clone() - vocab_start_index
        masked_target[target_mask] = 0
        partition_vocab_size = vocab_parallel_logits.size()[-1]
        logits_2d = vocab_parallel_logits.view(-1, partition_vocab_size)
        masked_target_1d = masked_target.view(-1)
        arange_1d = torch.arange(start=0, end=logits_2d.size()[0], device=logits_2d.device)
        predicted_logits_1d = logits_2d[arange_1d, masked_target_1d]
        predicted_logits_1d = predicted_logits_1d.clone().contiguous()
        predicted_logits = predicted_logits_1d.view_as(target)
        predicted_logits[target_mask] = 0.0
        exp_logits = vocab_parallel_logits
        torch.exp(vocab_parallel_logits, out=exp_logits)
        sum_exp_logits = exp_logits.sum(dim=-1)
        loss = torch.log(sum_exp_logits) - predicted_logits
        exp_logits.div_(sum_exp_logits.unsqueeze(dim=-1))
        ctx.save_for_backward(exp_logits, target_mask, masked_target_1d)
        return loss

    @staticmethod
    def backward(ctx, grad_output):
        softmax, target_mask, masked_target_1d = ctx.saved_tensors
        grad_input = softmax
        partition_vocab_size = softmax.size()[-1]
        grad_2d = grad_input.view(-1, partition_vocab_size)
        arange_1d = torch.arange(start=0, end=grad_2d.size()[0], device=grad_2d.device)
        softmax_update = 1.0 - target_mask.view(-1).float()
        grad_2d[arange_1d, masked_target_1d] -= softmax_update
        grad_input.mul_(grad_output.unsqueeze(dim=-1))
        return grad_input, None


def native_dropout(x, p):
    """What F.dropout runs on CUDA in training: aten.native_dropout (bool mask)."""
    if p == 0:
        return x
    return torch.native_dropout(x, p, True)[0]


class BiasDropoutAddFn(torch.autograd.Function):
    """Megatron's bias_dropout_add_fused_train (jit-fused, the default
    --bias-dropout-fusion): residual + dropout(x + bias) as one kernel. Keeps
    only the bool dropout mask (what the eager ops keep too), but allocates only
    the mask and the output (eager would also materialise x + bias and the
    dropout output). Backward: one grad * mask / (1 - p) tensor for x, its sum
    for the bias, the incoming gradient itself for the residual."""

    @staticmethod
    def forward(ctx, x, bias, residual, p):
        with hidden_ops():
            y, mask = torch.native_dropout(x + bias if bias is not None else x, p, True)
            out = residual + y
            del y
        out, mask = record_fused_op("bias_dropout_add_fused", (out, mask))
        ctx.save_for_backward(mask)
        ctx.p, ctx.has_bias = p, bias is not None
        return out

    @staticmethod
    def backward(ctx, g):
        (mask,) = ctx.saved_tensors
        with hidden_ops():
            gx = g * mask * (1.0 / (1.0 - ctx.p))
        (gx,) = record_fused_op("bias_dropout_add_backward", (gx,))
        gb = None
        if ctx.has_bias:
            with hidden_ops():
                gb = gx.reshape(-1, gx.shape[-1]).sum(0)
            (gb,) = record_fused_op("bias_dropout_add_bias_grad", (gb,))
        return gx, gb, g, None


def bias_dropout_add(x, bias, residual, p):
    """Megatron's bias_dropout_add_fused_train: residual + dropout(x + bias)."""
    if p == 0:
        return residual + (x + bias if bias is not None else x)
    return BiasDropoutAddFn.apply(x, bias, residual, p)


# --------------------------------------------------------------------------
# Layers
# --------------------------------------------------------------------------

class MegatronGPTLayer(nn.Module):
    """Megatron-Core GPT layer, local spec (see module docstring)."""

    def __init__(self, h, a, attention, recompute, dtype, p=0.1):
        super().__init__()
        self.h, self.a, self.hn = h, a, h // a
        self.attention, self.recompute, self.p = attention, recompute, p
        self.fp16 = dtype != torch.float32
        self.ln1_w, self.ln1_b = nn.Parameter(torch.ones(h)), nn.Parameter(torch.zeros(h))
        self.ln2_w, self.ln2_b = nn.Parameter(torch.ones(h)), nn.Parameter(torch.zeros(h))
        self.qkv = nn.Linear(h, 3 * h, bias=True)
        self.proj = nn.Linear(h, h, bias=True)
        self.fc1 = nn.Linear(h, 4 * h, bias=True)
        self.fc2 = nn.Linear(4 * h, h, bias=True)

    def core_attention(self, q, k, v, attention_mask, mask_type=None):
        if self.attention == "flash":
            # TEDotProductAttention (sbhd): TE's layout rule, then the fused kernel.
            q, k, v, _ = te_qkv_layout(q, k, v)
            ctx = flash_attention(q, k, v, self.p, "sbhd", "te")
            return ctx.view(ctx.shape[0], ctx.shape[1], -1)
        # megatron/core/transformer/dot_product_attention.py DotProductAttention.forward
        sq, b, np_, hn = q.shape
        sk = k.shape[0]
        query = q.reshape(sq, b * np_, -1)
        key = k.view(sk, b * np_, -1)
        # parallel_state.get_global_memory_buffer().get_tensor(...): one persistent
        # buffer shared by all layers (baddbmm with beta=0 only reads its shape)
        buf = self.global_memory_buffer
        assert buf.shape == (b * np_, sq, sk) and buf.dtype == q.dtype
        matmul_result = torch.baddbmm(buf, query.transpose(0, 1), key.transpose(0, 1).transpose(1, 2),
                                      beta=0.0, alpha=1.0 / math.sqrt(hn))
        scores = matmul_result.view(b, np_, sq, sk)
        if self.fp16:
            probs = ScaledUpperTriangMaskedSoftmax.apply(scores.view(-1, sq, sk), 1.0).view(b, np_, sq, sk)
        else:  # FusedScaleMaskSoftmax.forward_torch_softmax with attention_mask_func
            probs = torch.softmax(scores.masked_fill_(attention_mask, -10000.0), dim=-1)
        probs = native_dropout(probs, self.p)
        value = v.view(v.size(0), b * np_, -1)
        probs = probs.view(b * np_, sq, -1)
        context = torch.bmm(probs, value.transpose(0, 1))
        context = context.view(b, np_, sq, hn).permute(2, 0, 1, 3).contiguous()
        return context.view(sq, b, np_ * hn)

    # Function boundaries (and so the lifetime of Python locals, which is what a
    # no-grad forward's working set depends on) follow Megatron-Core:
    # TransformerLayer.forward -> _forward_attention / _forward_mlp,
    # SelfAttention.forward, MLP.forward.

    def self_attention(self, hidden_states, attention_mask):
        s, b, h = hidden_states.shape
        mixed = self.qkv(hidden_states).view(s, b, self.a, 3 * self.hn)
        q, k, v = torch.split(mixed, [self.hn, self.hn, self.hn], dim=3)
        q = q.reshape(s, b, -1, self.hn)
        if self.recompute == "selective":
            mask_type = torch.tensor([2], dtype=torch.int)  # AttnMaskType.causal as int32[1]
            ctx = MegatronCheckpoint.apply(
                lambda q_, k_, v_, m_, t_: self.core_attention(q_, k_, v_, m_), q, k, v, attention_mask, mask_type)
        else:
            ctx = self.core_attention(q, k, v, attention_mask)
        return F.linear(ctx, self.proj.weight), self.proj.bias  # skip_bias_add: bias goes to bias_dropout_add

    def mlp(self, hidden_states):
        intermediate = self.fc1(hidden_states)
        intermediate = F.gelu(intermediate, approximate="tanh")
        return F.linear(intermediate, self.fc2.weight), self.fc2.bias

    def _forward_attention(self, hidden_states, attention_mask):
        residual = hidden_states
        input_layernorm_output = FusedLayerNormFn.apply(hidden_states, self.ln1_w, self.ln1_b, 1e-5)
        attention_output_with_bias = self.self_attention(input_layernorm_output, attention_mask)
        return bias_dropout_add(*attention_output_with_bias, residual, self.p)

    def _forward_mlp(self, hidden_states):
        residual = hidden_states
        pre_mlp_layernorm_output = FusedLayerNormFn.apply(hidden_states, self.ln2_w, self.ln2_b, 1e-5)
        mlp_output_with_bias = self.mlp(pre_mlp_layernorm_output)
        return bias_dropout_add(*mlp_output_with_bias, residual, self.p)

    def forward(self, x, attention_mask):
        hidden_states = self._forward_attention(x, attention_mask)
        return self._forward_mlp(hidden_states)


def torchtitan_ffn_hidden(dim, multiple_of=256, ffn_dim_multiplier=None):
    hidden_dim = int(2 * (4 * dim) / 3)
    if ffn_dim_multiplier is not None:
        hidden_dim = int(ffn_dim_multiplier * hidden_dim)
    return multiple_of * ((hidden_dim + multiple_of - 1) // multiple_of)


def precompute_freqs_cis(dim, end, theta=10000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, device=freqs.device)
    freqs = torch.outer(t, freqs).float()
    return torch.polar(torch.ones_like(freqs), freqs)


def reshape_for_broadcast(freqs_cis, x):
    ndim = x.ndim
    seqlen = x.shape[1]
    freqs_cis = freqs_cis[0:seqlen]
    assert freqs_cis.shape == (seqlen, x.shape[-1])
    shape = [d if i == 1 or i == ndim - 1 else 1 for i, d in enumerate(x.shape)]
    return freqs_cis.view(*shape)


def apply_rotary_emb(xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = reshape_for_broadcast(freqs_cis, xq_)
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


def repeat_kv(x, n_rep):
    bs, slen, n_kv_heads, head_dim = x.shape
    if n_rep == 1:
        return x
    return (torch.unsqueeze(x, dim=3).expand(bs, slen, n_kv_heads, n_rep, head_dim)
            .reshape(bs, slen, n_kv_heads * n_rep, head_dim))


_EMULATE_TORCH2_MEAN = [False]


class MeanLastDimSizesOnly(torch.autograd.Function):
    """x.mean(-1, keepdim=True) as torch >= 2 differentiates it: the backward keeps
    only the input's sizes (torch 1.13's MeanBackward1 keeps the input) and
    computes grad.expand(sizes) / n. Used by the transient measurement only."""

    @staticmethod
    def forward(ctx, x):
        ctx.shape = x.shape
        return x.mean(-1, keepdim=True)

    @staticmethod
    def backward(ctx, g):
        return g.expand(ctx.shape) / ctx.shape[-1]


class TitanRMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, x):
        if _EMULATE_TORCH2_MEAN[0]:
            return x * torch.rsqrt(MeanLastDimSizesOnly.apply(x.pow(2)) + self.eps)
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        output = self._norm(x.float()).type_as(x)
        return output * self.weight


class TitanAttention(nn.Module):
    def __init__(self, dim, n_heads, n_kv_heads):
        super().__init__()
        self.n_heads, self.n_kv_heads = n_heads, n_kv_heads
        self.n_rep = n_heads // n_kv_heads
        self.head_dim = dim // n_heads
        self.wq = nn.Linear(dim, n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(n_heads * self.head_dim, dim, bias=False)

    def forward(self, x, freqs_cis):
        bs, seqlen, _ = x.shape
        xq, xk, xv = self.wq(x), self.wk(x), self.wv(x)
        xq = xq.view(bs, seqlen, -1, self.head_dim)
        xk = xk.view(bs, seqlen, -1, self.head_dim)
        xv = xv.view(bs, seqlen, -1, self.head_dim)
        xq, xk = apply_rotary_emb(xq, xk, freqs_cis=freqs_cis)
        keys = repeat_kv(xk, self.n_rep)
        values = repeat_kv(xv, self.n_rep)
        xq = xq.transpose(1, 2)
        xk = keys.transpose(1, 2)
        xv = values.transpose(1, 2)
        # F.scaled_dot_product_attention(xq, xk, xv, is_causal=True) on CUDA: flash
        output = flash_attention(xq, xk, xv, 0.0, "bhsd", "sdpa")
        output = output.transpose(1, 2).contiguous()
        output = output.view(bs, seqlen, -1)
        return self.wo(output)


class TitanFeedForward(nn.Module):
    def __init__(self, dim, hidden_dim):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden_dim, bias=False)
        self.w2 = nn.Linear(hidden_dim, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden_dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class TitanTransformerBlock(nn.Module):
    def __init__(self, dim, n_heads, n_kv_heads, ffn_hidden):
        super().__init__()
        self.attention = TitanAttention(dim, n_heads, n_kv_heads)
        self.feed_forward = TitanFeedForward(dim, ffn_hidden)
        self.attention_norm = TitanRMSNorm(dim)
        self.ffn_norm = TitanRMSNorm(dim)

    def forward(self, x, freqs_cis):
        h = x + self.attention(self.attention_norm(x), freqs_cis)
        out = h + self.feed_forward(self.ffn_norm(h))
        return out


class MegatronLlamaLayer(nn.Module):
    """Megatron-Core + Transformer Engine Llama layer (emulated fused kernels)."""

    def __init__(self, h, a, kv, f, recompute):
        super().__init__()
        self.h, self.a, self.kv, self.hn, self.f = h, a, kv, h // a, f
        self.recompute = recompute
        self.ln1_w = nn.Parameter(torch.ones(h))
        self.w_qkv = nn.Parameter(torch.randn((a + 2 * kv) * (h // a), h) * 0.02)
        self.w_proj = nn.Parameter(torch.randn(h, h) * 0.02)
        self.ln2_w = nn.Parameter(torch.ones(h))
        self.w_fc1 = nn.Parameter(torch.randn(2 * f, h) * 0.02)
        self.w_fc2 = nn.Parameter(torch.randn(h, f) * 0.02)

    def core_attention(self, q, k, v):
        q, k, v, _ = te_qkv_layout(q, k, v)
        ctx = flash_attention(q, k, v, 0.0, "sbhd", "te")
        return ctx.view(ctx.shape[0], ctx.shape[1], -1)

    # Function boundaries as in Megatron-Core (see MegatronGPTLayer); the input and
    # pre-MLP layernorms are IdentityOps (fused into TE LayerNormLinear).

    def self_attention(self, hidden_states, freqs):
        s, b, h = hidden_states.shape
        ng, r, hn = self.kv, self.a // self.kv, self.hn
        mixed = TELayerNormLinearFn.apply(hidden_states, self.ln1_w, self.w_qkv, 1e-5)
        mixed = mixed.view(s, b, ng, (r + 2) * hn)
        q, k, v = torch.split(mixed, [r * hn, hn, hn], dim=3)
        q = q.reshape(s, b, -1, hn)
        q = FusedRoPEFn.apply(q, freqs)
        k = FusedRoPEFn.apply(k, freqs)
        if self.recompute == "selective":
            mask_type = torch.tensor([2], dtype=torch.int)
            ctx = MegatronCheckpoint.apply(lambda q_, k_, v_, t_: self.core_attention(q_, k_, v_), q, k, v, mask_type)
        else:
            ctx = self.core_attention(q, k, v)
        return F.linear(ctx, self.w_proj)

    def mlp(self, hidden_states):
        intermediate = TELayerNormLinearFn.apply(hidden_states, self.ln2_w, self.w_fc1, 1e-5)
        intermediate = SwiGLUFn.apply(intermediate)
        return F.linear(intermediate, self.w_fc2)

    def forward(self, x, freqs):
        # bias_dropout_add without bias and with p = 0 is residual + x
        hidden_states = bias_dropout_add(self.self_attention(x, freqs), None, x, 0.0)
        return bias_dropout_add(self.mlp(hidden_states), None, hidden_states, 0.0)


class MegatronLossHead(nn.Module):
    def __init__(self, h, v):
        super().__init__()
        self.ln_w, self.ln_b = nn.Parameter(torch.ones(h)), nn.Parameter(torch.zeros(h))
        self.output = nn.Linear(h, v, bias=False)

    def forward(self, x, labels, loss_mask):
        ln = FusedLayerNormFn.apply(x, self.ln_w, self.ln_b, 1e-5)
        logits = self.output(ln)  # [s, b, v]
        labels = labels.transpose(0, 1).contiguous()
        losses = VocabParallelCrossEntropyTP1.apply(logits, labels)
        del logits
        losses = losses.transpose(0, 1).contiguous()
        # pretrain_gpt loss_func
        return torch.sum(losses.view(-1).float() * loss_mask.view(-1)) / loss_mask.sum()


class TitanLossHead(nn.Module):
    def __init__(self, h, v):
        super().__init__()
        self.norm = TitanRMSNorm(h)
        self.output = nn.Linear(h, v, bias=False)

    def forward(self, x, labels, _loss_mask):
        pred = self.output(self.norm(x))
        loss = F.cross_entropy(pred.flatten(0, 1).float(), labels.flatten(0, 1))
        del pred
        return loss


class MegatronEmbedding(nn.Module):
    def __init__(self, h, v, max_seq, p=0.1):
        super().__init__()
        self.word_embeddings = nn.Embedding(v, h)
        self.position_embeddings = nn.Embedding(max_seq, h)
        self.p = p

    def forward(self, input_ids, position_ids):
        emb = self.word_embeddings(input_ids) + self.position_embeddings(position_ids)
        emb = emb.transpose(0, 1).contiguous()
        return native_dropout(emb, self.p)


# --------------------------------------------------------------------------
# One measurement
# --------------------------------------------------------------------------

LAYER_MODES = [
    ("gpt", "unfused", ["none", "selective", "full"]),
    ("gpt", "flash", ["none", "selective", "full"]),
    ("llama", "flash", ["none", "op", "full"]),
    ("llama_megatron", "flash", ["none", "selective", "full"]),
    ("loss_megatron", "none", ["none"]),
    ("loss_torchtitan", "none", ["none"]),
    ("embedding", "none", ["none"]),
]


def torchtitan_sac_policy(ops):
    """torchtitan 9dec370a _custom_policy: indices of ops whose outputs are saved."""
    save_list = {"aten.mm.default", "aten._scaled_dot_product_efficient_attention.default",
                 "aten._scaled_dot_product_flash_attention", "aten._scaled_dot_product_flash_attention.default",
                 "_c10d_functional.reduce_scatter_tensor.default", "aten.abs.default", "aten.max.default"}
    mm_count = 0
    saved = []
    for i, (name, _) in enumerate(ops):
        if name == "aten.mm.default":
            mm_count += 1
        if name in save_list and not (name == "aten.mm.default" and mm_count % 2 == 0):
            saved.append(i)
    return saved


def build(layer, attention, recompute, size, dtype):
    h, a, kv, s, b, v = (size[k] for k in ("hidden", "heads", "kv_heads", "sequence", "micro_batch", "vocab"))
    torch.manual_seed(0)
    shared = {}
    info = dict(ffn_hidden=None, kv_heads=kv, dropout=False)
    if layer == "gpt":
        mod = MegatronGPTLayer(h, a, attention, recompute, dtype)
        info.update(ffn_hidden=4 * h, kv_heads=a, dropout=True)
        if attention == "unfused":
            mod.global_memory_buffer = torch.empty(b * a, s, s, dtype=dtype)
            shared["global_memory_buffer"] = mod.global_memory_buffer
        mask = torch.ones(1, 1, s, s, dtype=torch.bool).triu(1)  # Megatron's [1,1,s,s] causal mask
        shared["attention_mask"] = mask
        x = torch.randn(s, b, h, dtype=dtype)
        inputs = [x, mask]
    elif layer == "llama":
        f = torchtitan_ffn_hidden(h)
        mod = TitanTransformerBlock(h, a, kv, f)
        info.update(ffn_hidden=f)
        freqs = precompute_freqs_cis(h // a, s)  # complex64; registered after .to(dtype)
        x = torch.randn(b, s, h, dtype=dtype)
        inputs = [x, freqs]
    elif layer == "llama_megatron":
        f = torchtitan_ffn_hidden(h)
        mod = MegatronLlamaLayer(h, a, kv, f, recompute)
        info.update(ffn_hidden=f)
        hn = h // a
        inv = 1.0 / (10000 ** (torch.arange(0, hn, 2).float() / hn))
        fr = torch.outer(torch.arange(s).float(), inv)
        freqs = torch.cat((fr, fr), dim=-1).view(s, 1, 1, hn)  # Megatron rotary_pos_emb [s,1,1,d]
        shared["rotary_pos_emb"] = freqs
        x = torch.randn(s, b, h, dtype=dtype)
        inputs = [x, freqs]
    elif layer in ("loss_megatron", "loss_torchtitan"):
        if layer == "loss_megatron":
            mod = MegatronLossHead(h, v)
            x = torch.randn(s, b, h, dtype=dtype)
        else:
            mod = TitanLossHead(h, v)
            x = torch.randn(b, s, h, dtype=dtype)
        labels = torch.randint(0, v, (b, s))
        loss_mask = torch.ones(b, s, dtype=torch.float32)
        inputs = [x, labels, loss_mask]
    elif layer == "embedding":
        mod = MegatronEmbedding(h, v, s)
        info.update(dropout=True)
        ids = torch.randint(0, v, (b, s))
        # Megatron's GPTDataset gives each sample its position ids; the data loader stacks them.
        pos = torch.arange(s, dtype=torch.long).unsqueeze(0).repeat(b, 1)
        inputs = [ids, pos]
        x = None
    else:
        raise ValueError(layer)
    mod = mod.to(dtype)
    if layer == "llama":
        mod.register_buffer("freqs_cis", freqs)  # torchtitan: a model buffer, complex64
    if x is not None:
        x.requires_grad_(True)
    mod.train()
    return mod, inputs, shared, info


def excluded_keys(mod, shared):
    ex = {}
    for n, p in mod.named_parameters():
        ex[storage_key(p)] = "parameter " + n
    for n, bf in mod.named_buffers():
        ex[storage_key(bf)] = "buffer " + n
    for n, t in shared.items():
        ex[storage_key(t)] = "shared across layers: " + n
    return ex


def run_forward(mod, layer, recompute, inputs):
    if recompute == "full":
        if layer == "llama":  # torchtitan ptd_checkpoint_wrapper: non-reentrant
            kwargs = {"use_reentrant": False, "preserve_rng_state": False}
            return torch_checkpoint.checkpoint(mod, *inputs, **kwargs)
        return MegatronCheckpoint.apply(lambda *a: mod(*a), *inputs)
    return mod(*inputs)


def measure(layer, attention, recompute, size, dtype_key, peaks=True):
    dtype = DTYPES[dtype_key]
    mod, inputs, shared, info = build(layer, attention, recompute, size, dtype)
    ex = excluded_keys(mod, shared)
    input_keys = {storage_key(t) for t in inputs if isinstance(t, torch.Tensor)}
    record = dict(layer=layer, recompute=recompute, dtype=dtype_key, attention=attention,
                  hidden=size["hidden"], heads=size["heads"], kv_heads=info["kv_heads"],
                  ffn_hidden=info["ffn_hidden"], vocab=size["vocab"], sequence=size["sequence"],
                  micro_batch=size["micro_batch"], dropout=info["dropout"])

    if recompute == "op":
        # torchtitan per-op SAC, emulated: checkpoint inputs + outputs of saved ops.
        rec = OpRecorder(excluded_keys=ex, keep_outputs=True, track=False)
        with torch.no_grad(), rec:
            mod(*inputs)
        tensors, names = [], {}
        for t in inputs:
            if isinstance(t, torch.Tensor):
                tensors.append(t)
                names.setdefault(storage_key(t), "checkpoint_input")
        for i in torchtitan_sac_policy(rec.ops):
            name, outs = rec.ops[i]
            for t in outs:
                tensors.append(t)
                names.setdefault(storage_key(t), "sac_save:" + name.replace("aten.", "").replace(".default", ""))
        kept, dropped, scalars, arts = summarize_saved(tensors, ex, names)
        record.update(method="sac_emulation", retained_check_bytes=None, retained_check_ok=None,
                      transient_peak_bytes=None, transient_peak_fwd_bwd_bytes=None)
        record["saved_created_bytes"] = sum(r["bytes"] for r in kept + scalars if r["_key"] not in input_keys)
        return finish(record, kept, dropped, scalars, arts)

    saved = SavedRecorder()
    rec = OpRecorder(excluded_keys=set(ex) | input_keys) if StorageWeakRef is not None else None
    ctx = rec if rec is not None else contextlib.nullcontext()
    with saved.hooks(), ctx:
        out = run_forward(mod, layer, recompute, inputs)
    explicit = []
    if recompute == "full" and layer == "llama":
        explicit = [t for t in inputs if isinstance(t, torch.Tensor)]
    if recompute == "full" and layer == "llama":
        names, artifacts = {storage_key(t): "checkpoint_input (closure of non-reentrant checkpoint)"
                            for t in explicit}, set()
    else:
        names, artifacts = graph_op_names([out])
    kept, dropped, scalars, arts = summarize_saved(list(saved.saved) + explicit, ex, names, artifacts=artifacts)
    record["method"] = "saved_tensors_hooks"
    record["saved_created_bytes"] = sum(r["bytes"] for r in kept + scalars if r["_key"] not in input_keys)
    if rec is not None:
        alive = rec.alive_created(skip_keys={storage_key(out)})
        retained = sum(alive.values())
        created_saved = sum(r["bytes"] for r in kept + scalars + arts if r["_key"] not in input_keys)
        record["retained_check_bytes"] = retained
        record["retained_check_ok"] = retained == created_saved
        record["transient_peak_bytes"] = rec.peak() if peaks else None
    else:
        record.update(retained_check_bytes=None, retained_check_ok=None, transient_peak_bytes=None)
    record["transient_peak_fwd_bwd_bytes"] = None
    if peaks and rec is not None:
        saved.saved.clear()
        grad = None if out.dim() == 0 else torch.ones_like(out)
        with rec:
            out.backward(grad)
        grads = {storage_key(p.grad) for p in mod.parameters() if p.grad is not None}
        ex_uids = [e[0] for e in rec.entries if e[3] in grads and not _expired(e[1])]
        record["transient_peak_fwd_bwd_bytes"] = rec.peak(exclude_uids=ex_uids)
    return finish(record, kept, dropped, scalars, arts)


def finish(record, kept, dropped, scalars, arts):
    strip = lambda lst: [{k: v for k, v in r.items() if k != "_key"} for r in lst]  # noqa: E731
    record["saved_tensors"] = strip(kept)
    record["saved_bytes"] = sum(r["bytes"] for r in kept)
    record["torch_version_artifacts"] = strip(arts)
    record["saved_bytes_as_run"] = record["saved_bytes"] + sum(r["bytes"] for r in arts)
    record["torch_version"] = torch.__version__
    record["excluded_tensors"] = strip(dropped)
    record["scalar_tensors"] = strip(scalars)
    record["breakdown"] = breakdown(record)
    return record


def breakdown(rec):
    """Splits saved bytes into coefficients of s*b*h (per-token tensors at least
    a head (h/a elements) wide), s*b (narrower per-token tensors), a*s^2*b (tensors with
    two sequence dimensions) and constant bytes (no per-token storage)."""
    s, b, h, a = rec["sequence"], rec["micro_batch"], rec["hidden"], rec["heads"]
    main = narrow = score = const = 0
    for t in rec["saved_tensors"]:
        shape, nb = t["shape"], t["bytes"]
        itemsize = torch.empty(0, dtype=getattr(torch, t["dtype"])).element_size()
        if sum(1 for d in shape if d == s) >= 2:
            score += nb
        elif nb % (s * b * itemsize) == 0:
            if nb // (s * b * itemsize) >= h // a:
                main += nb
            else:
                narrow += nb
        else:
            const += nb
    return {"sbh": main / (s * b * h), "sb": narrow / (s * b), "as2b": score / (a * s * s * b), "const": const}


# --------------------------------------------------------------------------
# Transient working set (forward and backward), per layer
# --------------------------------------------------------------------------

class MemTracker(ActiveMode):
    """Live-storage accounting. After every visible aten op (and every emulated
    fused kernel) it first drops the storages that died since the last op
    (StorageWeakRef.expired(), i.e. the storage's refcount reached zero), then
    registers the op's outputs that live on storages it has not seen alive,
    and appends one event (phase, op, new uids, freed uids). Storages in
    `excluded` (parameters, buffers, the layer's inputs, tensors shared across
    layers) are never counted. Peaks are computed afterwards by replaying the
    events, so that storages found to be parameter gradients at the end can be
    left out of every running sum."""

    def __init__(self, excluded_keys):
        super().__init__()
        self.excluded = set(excluded_keys)
        self.live = {}  # storage key -> uid
        self.tensors = []  # uid -> dict(bytes, weak, key, op, shape, dtype)
        self.events = []  # (phase, op, added uids, freed uids)
        self.hidden = 0
        self.phase = "forward"
        self.untracked_inputs = {}  # key -> (op, shape, dtype, bytes): inputs of ops never seen created

    def _sweep(self):
        freed = [uid for key, uid in self.live.items() if self.tensors[uid]["weak"].expired()]
        for uid in freed:
            del self.live[self.tensors[uid]["key"]]
        return freed

    def step(self, name, tensors=(), force=False):
        new = []
        for t in tensors:
            try:
                key = storage_key(t)
            except Exception:
                continue
            if key == 0 or key in self.excluded:
                continue
            uid = self.live.get(key)
            if uid is not None and not self.tensors[uid]["weak"].expired():
                continue
            new.append((key, t))
        if not new and not force:
            # nothing allocated: the running sum can only have dropped, so no
            # event is needed for the peak (frees are applied at the next event)
            return
        freed = self._sweep()
        added = []
        for key, t in new:
            if key in self.live:
                continue
            w = _weak(t)
            if w is None:
                continue
            uid = len(self.tensors)
            self.tensors.append(dict(bytes=storage_nbytes(t), weak=w, key=key, op=name,
                                     shape=list(t.shape), dtype=dtype_name(t.dtype), phase=self.phase))
            self.live[key] = uid
            added.append(uid)
        self.events.append((self.phase, name, tuple(added), tuple(freed)))

    def mark(self, name):
        self.step("<%s>" % name, force=True)
        return len(self.events) - 1

    def record_external(self, opname, outputs, sac):
        self.step(opname, flatten_tensors(outputs))
        return None

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if self.hidden == 0:
            name = str(func)
            self.step(name, flatten_tensors(out))
            for t in flatten_tensors(list(args) + list((kwargs or {}).values())):
                try:
                    key = storage_key(t)
                except Exception:
                    continue
                if key and key not in self.excluded and key not in self.live and key not in self.untracked_inputs:
                    self.untracked_inputs[key] = (name, list(t.shape), dtype_name(t.dtype), storage_nbytes(t))
        return out

    def replay(self, exclude_uids=()):
        """Running live bytes after each event, and the live uid set at chosen events."""
        ex = set(exclude_uids)
        live, cur, sums = set(), 0, []
        for _, _, added, freed in self.events:
            for u in freed:
                if u in live:
                    live.discard(u)
                    cur -= self.tensors[u]["bytes"]
            for u in added:
                if u not in ex:
                    live.add(u)
                    cur += self.tensors[u]["bytes"]
            sums.append(cur)
        return sums

    def live_at(self, index, exclude_uids=()):
        ex = set(exclude_uids)
        live = set()
        for _, _, added, freed in self.events[:index + 1]:
            live.difference_update(freed)
            live.update(u for u in added if u not in ex)
        return live

    def signature(self):
        return tuple((ph, name, tuple((self.tensors[u]["dtype"], len(self.tensors[u]["shape"])) for u in added))
                     for ph, name, added, _ in self.events)


SAC_SAVE_OPS = {"aten.mm.default", "aten._scaled_dot_product_efficient_attention.default",
                "aten._scaled_dot_product_flash_attention", "aten._scaled_dot_product_flash_attention.default",
                "_c10d_functional.reduce_scatter_tensor.default", "aten.abs.default", "aten.max.default"}


class SACMode(ActiveMode):
    """EMULATION of torch >= 2.4 per-op selective activation checkpointing
    (create_selective_checkpoint_contexts) with torchtitan's policy (see
    torchtitan_sac_policy), for the transient measurement. It is entered inside
    the function that torch 1.13's non-reentrant checkpoint runs: on the first
    call (forward) it caches a detached alias of the outputs of the ops the
    policy saves (MUST_SAVE); on the second call (recomputation during
    backward) it returns those cached outputs instead of running the op and
    drops its reference (as SAC pops its cache), so only the recomputed graph
    keeps them. Ops hidden inside the emulated kernels are not seen."""

    def __init__(self):
        super().__init__()
        self.hidden = 0
        self.calls = 0
        self.cache = []
        self.pos = 0
        self.mm = 0

    def begin(self):
        self.calls += 1
        self.pos = 0
        self.mm = 0

    def _saves(self, name):
        if name == "aten.mm.default":
            self.mm += 1
            return self.mm % 2 == 1
        return name in SAC_SAVE_OPS

    def _cached(self, compute):
        def detach(o):
            with hidden_ops():
                return tuple(t.detach() for t in o) if isinstance(o, tuple) else o.detach()
        if self.calls > 1:
            out = self.cache[self.pos]
            self.cache[self.pos] = None
            self.pos += 1
            return detach(out)
        out = compute()
        self.cache.append(detach(out))
        return out

    def record_external(self, opname, outputs, sac):
        if not sac or self.hidden or not self._saves(opname):
            return None
        return self._cached(lambda: tuple(outputs))

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if self.hidden or not self._saves(str(func)):
            return func(*args, **(kwargs or {}))
        return self._cached(lambda: func(*args, **(kwargs or {})))


class GradSeed(torch.autograd.Function):
    """Identity-like root for backward: its backward allocates the incoming
    gradient (ones of the output's shape), so that the engine, not Python,
    owns it and it is freed as soon as the layer's backward no longer needs it."""

    @staticmethod
    def forward(ctx, x):
        ctx.shape, ctx.dtype = x.shape, x.dtype
        return x.new_zeros(())

    @staticmethod
    def backward(ctx, _g):
        return torch.ones(ctx.shape, dtype=ctx.dtype)


def run_forward_transient(mod, layer, recompute, inputs):
    if recompute == "op":  # torchtitan per-op SAC: non-reentrant checkpoint + SAC emulation
        sac = SACMode()

        def fn(*a):
            sac.begin()
            with sac:
                return mod(*a)
        return torch_checkpoint.checkpoint(fn, *inputs, use_reentrant=False, preserve_rng_state=False)
    return run_forward(mod, layer, recompute, inputs)


def measure_transient(layer, attention, recompute, size, dtype_key):
    """One forward + backward of one layer under MemTracker (see the module
    docstring, "Transient working set")."""
    dtype = DTYPES[dtype_key]
    _EMULATE_TORCH2_MEAN[0] = True
    try:
        mod, inputs, shared, info = build(layer, attention, recompute, size, dtype)
        ex = set(excluded_keys(mod, shared))
        ex |= {storage_key(t) for t in inputs if isinstance(t, torch.Tensor)}
        tr = MemTracker(ex)
        with tr:
            out = run_forward_transient(mod, layer, recompute, inputs)
        tr.mark("forward_end")
        out_key = storage_key(out)
        out_uid = tr.live.get(out_key)
        seed = GradSeed.apply(out)
        root = torch.ones_like(seed)  # 0-dim root of the seed, not the layer's
        tr.excluded |= {storage_key(seed), storage_key(root)}
        del out
        tr.phase = "backward"
        with tr:
            i_start = tr.mark("backward_start")
            seed.backward(root)
            del seed, root
        i_end = tr.mark("backward_end")
    finally:
        _EMULATE_TORCH2_MEAN[0] = False
    grad_keys = {}
    for n, p in mod.named_parameters():
        if p.grad is not None:
            grad_keys[storage_key(p.grad)] = storage_nbytes(p.grad)
    pg_uids = {tr.live[k] for k in grad_keys if k in tr.live}
    input_grad = sum(storage_nbytes(t.grad) for t in inputs
                     if isinstance(t, torch.Tensor) and t.grad is not None)
    sums = tr.replay(exclude_uids=pg_uids)
    fwd_idx = [i for i, e in enumerate(tr.events) if e[0] == "forward"]
    bwd_idx = list(range(i_start, i_end + 1))
    i_fpk = max(fwd_idx, key=lambda i: (sums[i], -i))
    i_bpk = max(bwd_idx, key=lambda i: (sums[i], -i))
    start = sums[i_start]
    res = dict(
        tracker=tr, pg_uids=pg_uids, i_start=i_start, i_fpk=i_fpk, i_bpk=i_bpk, sums=sums,
        forward_transient_peak_bytes=sums[i_fpk] - start,
        backward_transient_peak_bytes=sums[i_bpk] - start,
        param_grad_bytes=sum(grad_keys.values()),
        param_grads_missed=len(grad_keys) - len(pg_uids),
        forward_peak_live_bytes=sums[i_fpk],
        backward_start_live_bytes=start,
        backward_peak_live_bytes=sums[i_bpk],
        backward_end_live_bytes=sums[i_end],
        output_bytes=tr.tensors[out_uid]["bytes"] if out_uid is not None else 0,
        incoming_grad_bytes=next((tr.tensors[u]["bytes"] for e in tr.events[i_start + 1:] for u in e[2]), 0),
        input_grad_bytes=input_grad,
        forward_peak_op=tr.events[i_fpk][1],
        backward_peak_op=tr.events[i_bpk][1],
        untracked_inputs=sorted(tr.untracked_inputs.values()),
        n_events=len(tr.events),
    )
    return res


# Monomials a storage's bytes may be made of. Per-token ones carry s*b.
# Symbols: h hidden, kv = kv_heads * head_dim (GQA K/V width), f FFN hidden,
# v vocabulary, a heads, s sequence, b micro-batch.
TOKEN_TERMS = ["h", "kv", "f", "v", "a", "as", "1"]
CONST_TERMS = ["1", "h", "f", "kv", "v", "s", "s*d", "s*s", "h*h", "h*f", "h*kv", "h*v"]  # d = head_dim


def _symbols(size, info):
    h, a = size["hidden"], size["heads"]
    kvh = info["kv_heads"]
    return dict(h=h, a=a, s=size["sequence"], b=size["micro_batch"], v=size["vocab"],
                kv=kvh * (h // a), f=info["ffn_hidden"] or 4 * h)


def _monomials(layer, sym):
    """(name, value) of the monomials allowed for this layer family. GPT has
    kv = h and f = 4h, so both fold into h there."""
    s, b = sym["s"], sym["b"]
    tok = {"h": sym["h"], "kv": sym["kv"], "f": sym["f"], "v": sym["v"], "a": sym["a"],
           "as": sym["a"] * s, "1": 1}
    const = _const_values(sym)
    drop = set()
    if layer == "gpt":
        drop |= {"kv", "f", "h*kv", "h*f"}
    if layer not in ("loss_megatron", "loss_torchtitan", "embedding"):
        drop |= {"v", "h*v"}
    if layer in ("loss_megatron", "loss_torchtitan", "embedding"):
        drop |= {"kv", "f", "a", "as", "h*kv", "h*f", "s*d"}
    out = [("tok:" + k, tok[k] * s * b) for k in TOKEN_TERMS if k not in drop]
    out += [("const:" + k, const[k]) for k in CONST_TERMS if k not in drop]
    return out


def _const_values(sym):
    s, h = sym["s"], sym["h"]
    return {"1": 1, "h": h, "f": sym["f"], "kv": sym["kv"], "v": sym["v"], "s": s, "s*d": s * (h // sym["a"]),
            "s*s": s * s, "h*h": h * h, "h*f": h * sym["f"], "h*kv": h * sym["kv"], "h*v": h * sym["v"]}


def _fit_one(ys, monos):
    """Expresses a storage's bytes, measured at several sizes, as c1*m1 (+ c2*m2)
    with rational coefficients, exactly at every size; None if no such fit."""
    from fractions import Fraction
    n = len(ys)
    names = [m for m, _ in monos[0]]
    vals = [[v for _, v in mo] for mo in monos]
    for j in range(len(names)):
        if vals[0][j] == 0:
            continue
        c = Fraction(ys[0], vals[0][j])
        if c > 0 and all(Fraction(ys[i]) == c * vals[i][j] for i in range(n)):
            return {names[j]: c}
    for j in range(len(names)):
        for k in range(j + 1, len(names)):
            sol = None
            for i1 in range(n):
                for i2 in range(i1 + 1, n):
                    det = vals[i1][j] * vals[i2][k] - vals[i2][j] * vals[i1][k]
                    if det:
                        cj = Fraction(ys[i1] * vals[i2][k] - ys[i2] * vals[i1][k], det)
                        ck = Fraction(vals[i1][j] * ys[i2] - vals[i2][j] * ys[i1], det)
                        sol = (cj, ck)
                        break
                if sol:
                    break
            if not sol or sol[0] == 0 or sol[1] == 0:
                continue
            cj, ck = sol
            if all(Fraction(ys[i]) == cj * vals[i][j] + ck * vals[i][k] for i in range(n)):
                return {names[j]: cj, names[k]: ck}
    return None


def _num(x):
    return int(x) if x.denominator == 1 else float(x)


def fit_transients(layer, runs):
    """runs: list of (size, info, res) with the same event signature. Gives
    every storage a symbolic size and returns, per run, the symbolic forward and
    backward transients (peak live set minus live set at backward start)."""
    from fractions import Fraction
    monos = [_monomials(layer, _symbols(sz, info)) for sz, info, _ in runs]
    trs = [r["tracker"] for _, _, r in runs]
    n_uid = len(trs[0].tensors)
    pg = runs[0][2]["pg_uids"]
    syms = []
    for u in range(n_uid):  # parameter gradients are left out of every sum: no size needed
        syms.append({} if u in pg else _fit_one([t.tensors[u]["bytes"] for t in trs], monos))
    out = []
    for (sz, info, r), mo in zip(runs, monos):
        tr = r["tracker"]
        val = dict(mo)
        start = tr.live_at(r["i_start"], r["pg_uids"])

        def expr(idx):
            live = tr.live_at(idx, r["pg_uids"])
            tot, unresolved = {}, 0
            for u in live ^ start:
                sign = 1 if u in live else -1
                if syms[u] is None:
                    unresolved += sign * tr.tensors[u]["bytes"]
                    continue
                for m, c in syms[u].items():
                    tot[m] = tot.get(m, Fraction(0)) + sign * c
            tot = {m: c for m, c in tot.items() if c != 0}
            check = sum(c * val[m] for m, c in tot.items()) + unresolved
            return tot, unresolved, check

        res = {}
        for key, idx in (("forward", r["i_fpk"]), ("backward", r["i_bpk"])):
            tot, unresolved, check = expr(idx)
            measured = r[key + "_transient_peak_bytes"]
            assert check == measured, (layer, key, check, measured)
            res[key] = dict(
                per_token={m[4:]: _num(c) for m, c in sorted(tot.items()) if m.startswith("tok:")},
                const={m[6:]: _num(c) for m, c in sorted(tot.items()) if m.startswith("const:")},
                unresolved_bytes=unresolved)
        out.append(res)
    env = _envelopes(runs, syms)
    for res in out:
        res["envelope"] = env
    return out


def _envelopes(runs, syms):
    """Symbolic live bytes after every event (all runs of a group share the event
    sequence), less the live set at backward start; the forms not dominated
    coefficient-wise by another form of the same phase. The transient at any
    size with this op sequence is the max over these forms."""
    from fractions import Fraction
    r0 = runs[0][2]
    if any(x is None for x in syms):
        return None
    tr, pg = r0["tracker"], r0["pg_uids"]
    if any(r["pg_uids"] != pg or r["i_start"] != r0["i_start"] for _, _, r in runs):
        return None
    live, cur, forms = set(), {}, []
    for idx, (ph, name, added, freed) in enumerate(tr.events):
        for u in freed:
            if u in live:
                live.discard(u)
                for m, c in syms[u].items():
                    cur[m] = cur.get(m, Fraction(0)) - c
        for u in added:
            if u not in pg:
                live.add(u)
                for m, c in syms[u].items():
                    cur[m] = cur.get(m, Fraction(0)) + c
        forms.append((ph, name, dict(cur)))
    start = forms[r0["i_start"]][2]
    env = {}
    for phase in ("forward", "backward"):
        cand = {}
        for idx, (ph, name, f) in enumerate(forms):
            if ph != phase:
                continue
            d = {m: c - start.get(m, 0) for m, c in f.items()}
            d.update({m: -c for m, c in start.items() if m not in f})
            d = tuple(sorted((m, c) for m, c in d.items() if c != 0))
            cand.setdefault(d, name)
        keys = list(cand)
        dom = lambda a, b: all(c <= dict(b).get(m, 0) for m, c in a) and all(  # noqa: E731
            dict(a).get(m, 0) <= c for m, c in b)
        keep = [a for a in keys if not any(b != a and dom(a, b) for b in keys)]
        fits = []
        for a in keep:
            da = dict(a)
            fits.append(dict(at_op=cand[a], unresolved_bytes=0,
                             per_token={m[4:]: _num(c) for m, c in sorted(da.items()) if m.startswith("tok:")},
                             const={m[6:]: _num(c) for m, c in sorted(da.items()) if m.startswith("const:")}))
        for sz, info, r in runs:
            sym = _symbols(sz, info)
            assert max(formula_bytes(f, sym) for f in fits) == r[phase + "_transient_peak_bytes"], (phase, sz)
        env[phase] = fits
    return env


def formula_bytes(fit, sym):
    """Evaluates a fitted transient (per_token, const) at the symbols `sym`."""
    tok = {"h": sym["h"], "kv": sym["kv"], "f": sym["f"], "v": sym["v"], "a": sym["a"],
           "as": sym["a"] * sym["s"], "1": 1}
    const = _const_values(sym)
    x = sum(c * tok[m] for m, c in fit["per_token"].items()) * sym["s"] * sym["b"]
    return x + sum(c * const[m] for m, c in fit["const"].items()) + fit["unresolved_bytes"]


def format_formula(fit):
    parts = []
    for m in TOKEN_TERMS:
        c = fit["per_token"].get(m)
        if c:
            c = ("%g" % c)
            parts.append(c if m == "1" else (m if c == "1" else c + m))
    txt = " + ".join(parts).replace("+ -", "- ") or "0"
    extra = []
    for m, c in fit["const"].items():
        extra.append("%g%s" % (c, "" if m == "1" else "*" + m))
    if fit["unresolved_bytes"]:
        extra.append("%d B unresolved" % fit["unresolved_bytes"])
    return txt + (" (+ %s B)" % " + ".join(extra) if extra else "")


# Extra small sizes for fitting each storage's size symbolically (kv < heads,
# even head_dim; b = 1 and b > 1 groups, since .contiguous() of a transposed
# [b=1, ...] tensor copies nothing and so changes the op sequence).
FIT_SIZES = [
    dict(hidden=64, heads=4, kv_heads=2, sequence=24, micro_batch=2, vocab=200),
    dict(hidden=96, heads=6, kv_heads=3, sequence=20, micro_batch=3, vocab=136),
    dict(hidden=128, heads=8, kv_heads=2, sequence=28, micro_batch=2, vocab=328),
    dict(hidden=160, heads=4, kv_heads=2, sequence=18, micro_batch=2, vocab=96),
    dict(hidden=64, heads=4, kv_heads=2, sequence=36, micro_batch=1, vocab=120),
    dict(hidden=96, heads=4, kv_heads=2, sequence=26, micro_batch=1, vocab=260),
    dict(hidden=128, heads=8, kv_heads=4, sequence=22, micro_batch=1, vocab=152),
    dict(hidden=192, heads=6, kv_heads=3, sequence=30, micro_batch=1, vocab=88),
]


def transient_fields(layer, attention, recompute, dtype_key, main_sizes):
    """Transient fields for the records of one (layer, recompute, dtype) at
    main_sizes (list of (index, size)): measured at those sizes and at
    FIT_SIZES, fitted per event-signature group."""
    runs = []
    for tag, size in [("main", s) for s in main_sizes] + [("fit", s) for s in FIT_SIZES]:
        info = build_info(layer, size)
        runs.append((tag, size, info, measure_transient(layer, attention, recompute, size, dtype_key)))
    groups = {}
    for i, (_, size, info, r) in enumerate(runs):
        groups.setdefault(r["tracker"].signature(), []).append(i)
    fits = {}
    for members in groups.values():
        if len(members) < 4:
            continue
        sub = [(runs[i][1], runs[i][2], runs[i][3]) for i in members]
        for i, f in zip(members, fit_transients(layer, sub)):
            fits[i] = (f, members)
    results = []
    for i, (tag, size, info, r) in enumerate(runs):
        if tag != "main":
            continue
        tr = r["tracker"]
        d = {k: v for k, v in r.items() if k not in ("tracker", "pg_uids", "i_start", "i_fpk", "i_bpk", "sums")}
        sb = size["sequence"] * size["micro_batch"]
        d["forward_transient_bytes_per_token"] = r["forward_transient_peak_bytes"] / sb
        d["backward_transient_bytes_per_token"] = r["backward_transient_peak_bytes"] / sb
        for key, idx in (("forward", r["i_fpk"]), ("backward", r["i_bpk"])):
            live = tr.live_at(idx, r["pg_uids"])
            d[key + "_peak_live_tensors"] = [
                dict(shape=tr.tensors[u]["shape"], dtype=tr.tensors[u]["dtype"], bytes=tr.tensors[u]["bytes"],
                     op=tr.tensors[u]["op"], created_in=tr.tensors[u]["phase"]) for u in sorted(live)]
        if i in fits:
            f, members = fits[i]
            f = dict(f)
            env = f.pop("envelope")
            if env is not None:
                sym = _symbols(size, info)
                for key in ("forward", "backward"):
                    env[key] = sorted(env[key], key=lambda e: (-formula_bytes(e, sym), format_formula(e)))
            d["fit"] = f
            d["envelope"] = env
            d["fit_sizes"] = len(members)
            # does this size's peak formula give the measured transient at every size of its group?
            for key in ("forward", "backward"):
                ok = all(formula_bytes(f[key], _symbols(runs[j][1], runs[j][2])) ==
                         runs[j][3][key + "_transient_peak_bytes"] for j in members)
                d["fit"][key]["same_formula_at_all_fit_sizes"] = ok
        else:
            d["fit"] = None
            d["envelope"] = None
        results.append(d)
    return results


def build_info(layer, size):
    h = size["hidden"]
    if layer == "gpt":
        return dict(kv_heads=size["heads"], ffn_hidden=4 * h)
    if layer in ("llama", "llama_megatron"):
        return dict(kv_heads=size["kv_heads"], ffn_hidden=torchtitan_ffn_hidden(h))
    return dict(kv_heads=size["kv_heads"], ffn_hidden=None)


# --------------------------------------------------------------------------
# Self checks of the emulated kernels' backward passes
# --------------------------------------------------------------------------

def self_check():
    torch.manual_seed(0)
    ok = True

    def close(a, b, name, tol=1e-4):
        nonlocal ok
        err = (a - b).abs().max().item()
        if err > tol:
            print("self-check FAILED: %s (max err %g)" % (name, err), file=sys.stderr)
            ok = False

    b, h, hk, s, d = 2, 4, 2, 8, 16
    for layout in ("bhsd", "sbhd"):
        shp = (b, h, s, d) if layout == "bhsd" else (s, b, h, d)
        kshp = (b, hk, s, d) if layout == "bhsd" else (s, b, hk, d)
        q = torch.randn(*shp, dtype=torch.float64, requires_grad=True)
        k = torch.randn(*kshp, dtype=torch.float64, requires_grad=True)
        v = torch.randn(*kshp, dtype=torch.float64, requires_grad=True)
        g = torch.randn(*shp, dtype=torch.float64)
        for p in (0.0, 0.3):
            out = flash_attention(q, k, v, p, layout, "te")
            gq, gk, gv = torch.autograd.grad(out, (q, k, v), g)
            perm = (lambda x: x) if layout == "bhsd" else (lambda x: x.permute(1, 2, 0, 3))
            qb, kb, vb = perm(q), perm(k).repeat_interleave(h // hk, 1), perm(v).repeat_interleave(h // hk, 1)
            sc = (qb @ kb.transpose(-1, -2)) / math.sqrt(d)
            sc = sc.masked_fill(torch.ones(s, s, dtype=torch.bool).triu(1), float("-inf"))
            pr = torch.softmax(sc, -1)
            if p > 0:
                pr = pr * _dropout_keep_mask(1234, pr.shape, p) / (1 - p)
            ref = pr @ vb
            ref = ref if layout == "bhsd" else ref.permute(2, 0, 1, 3)
            close(out, ref, "flash fwd %s p=%g" % (layout, p), 1e-9)
            rq, rk, rv = torch.autograd.grad(ref, (q, k, v), g)
            close(gq, rq, "flash dq %s p=%g" % (layout, p), 1e-9)
            close(gk, rk, "flash dk %s p=%g" % (layout, p), 1e-9)
            close(gv, rv, "flash dv %s p=%g" % (layout, p), 1e-9)
    logits = torch.randn(5, 3, 11, dtype=torch.float64, requires_grad=True)
    tgt = torch.randint(0, 11, (5, 3))
    l1 = VocabParallelCrossEntropyTP1.apply(logits, tgt).sum()
    (g1,) = torch.autograd.grad(l1, logits)
    l2 = F.cross_entropy(logits.view(-1, 11).float(), tgt.view(-1), reduction="sum")
    (g2,) = torch.autograd.grad(l2, logits)
    close(l1.float(), l2, "megatron CE loss")
    close(g1.float(), g2.float(), "megatron CE grad")
    x = torch.randn(6, 2, 8, dtype=torch.float64, requires_grad=True)
    w, bb = torch.randn(8, dtype=torch.float64, requires_grad=True), torch.randn(8, dtype=torch.float64, requires_grad=True)
    gy = torch.randn(6, 2, 8, dtype=torch.float64)
    y1 = FusedLayerNormFn.apply(x, w, bb, 1e-5)
    close(y1, F.layer_norm(x, (8,), w, bb, 1e-5), "layernorm fwd", 1e-5)
    wl = torch.randn(12, 8, dtype=torch.float64, requires_grad=True)
    y1 = TELayerNormLinearFn.apply(x, w, wl, 1e-5)
    y2 = F.linear(_rmsnorm_ref(x, w, 1e-5), wl)
    g1 = torch.autograd.grad(y1, (x, w, wl), torch.randn_like(y1))
    close(y1, y2, "te layernorm linear fwd", 1e-5)
    gg = torch.randn_like(y1)
    ga = torch.autograd.grad(TELayerNormLinearFn.apply(x, w, wl, 1e-5), (x, w, wl), gg)
    gb = torch.autograd.grad(F.linear(_rmsnorm_ref(x, w, 1e-5), wl), (x, w, wl), gg)
    for i in range(3):
        close(ga[i].float(), gb[i].float(), "te layernorm linear grad %d" % i, 1e-4)
    del g1, gy
    t = torch.randn(5, 2, 3, 8, dtype=torch.float64, requires_grad=True)
    fr = torch.randn(5, 1, 1, 4, dtype=torch.float64)
    fr = torch.cat((fr, fr), dim=-1)  # Megatron's rotary_pos_emb: both halves share angles
    out = FusedRoPEFn.apply(t, fr)
    gt = torch.randn_like(out)
    (g1,) = torch.autograd.grad(out, t, gt)
    (g2,) = torch.autograd.grad(FusedRoPEFn._rot(t, fr, 1.0), t, gt)
    close(g1, g2, "rope grad", 1e-9)
    # fused bias-dropout-add vs the eager ops (same RNG draw)
    x = torch.randn(6, 2, 8, dtype=torch.float64, requires_grad=True)
    bb = torch.randn(8, dtype=torch.float64, requires_grad=True)
    res = torch.randn(6, 2, 8, dtype=torch.float64, requires_grad=True)
    gy = torch.randn(6, 2, 8, dtype=torch.float64)
    torch.manual_seed(7)
    y1 = BiasDropoutAddFn.apply(x, bb, res, 0.3)
    ga = torch.autograd.grad(y1, (x, bb, res), gy)
    torch.manual_seed(7)
    y2 = res + torch.native_dropout(x + bb, 0.3, True)[0]
    gb = torch.autograd.grad(y2, (x, bb, res), gy)
    close(y1, y2, "bias_dropout_add fwd", 1e-12)
    for i in range(3):
        close(ga[i], gb[i], "bias_dropout_add grad %d" % i, 1e-12)
    # in-place fused causal softmax backward
    sc = torch.randn(3, 5, 5, dtype=torch.float32, requires_grad=True)
    gy = torch.randn(3, 5, 5)
    (g1,) = torch.autograd.grad(ScaledUpperTriangMaskedSoftmax.apply(sc, 0.5), sc, gy.clone())
    ref = torch.softmax((sc * 0.5).masked_fill(torch.ones(5, 5, dtype=torch.bool).triu(1), float("-inf")), -1)
    (g2,) = torch.autograd.grad(ref, sc, gy)
    close(g1, g2, "fused softmax grad", 1e-5)
    # torch >= 2 mean backward emulation
    x = torch.randn(4, 3, 8, dtype=torch.float64, requires_grad=True)
    gy = torch.randn(4, 3, 1, dtype=torch.float64)
    (g1,) = torch.autograd.grad(MeanLastDimSizesOnly.apply(x), x, gy)
    (g2,) = torch.autograd.grad(x.mean(-1, keepdim=True), x, gy)
    close(g1, g2, "mean backward", 1e-12)
    return ok


# --------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------

def summary_line(r):
    bd = r["breakdown"]
    parts = ["%.3f sbh" % bd["sbh"], "%.2f sb" % bd["sb"]]
    if bd["as2b"]:
        parts.append("%.3f as^2b" % bd["as2b"])
    if bd["const"]:
        parts.append("%d B" % bd["const"])
    peak = r.get("transient_peak_fwd_bwd_bytes")
    chk = r.get("retained_check_ok")
    return ("%-15s %-7s %-9s %-4s h=%d a=%d kv=%d f=%s s=%d b=%d v=%d: saved=%d B = %s%s%s" % (
        r["layer"], r["attention"], r["recompute"], r["dtype"], r["hidden"], r["heads"], r["kv_heads"],
        r["ffn_hidden"], r["sequence"], r["micro_batch"], r["vocab"], r["saved_bytes"], " + ".join(parts),
        "" if peak is None else "  peak(fwd)=%d peak(fwd+bwd)=%d" % (r["transient_peak_bytes"], peak),
        "" if chk is None else ("  check=ok" if chk else "  check=MISMATCH(%d)" % r["retained_check_bytes"])))


def transient_summary_line(r):
    if r.get("forward_transient_peak_bytes") is None:
        return None
    t = r["transient"]
    fit, env = t.get("fit"), t.get("envelope")
    out, envs = [], []
    for key, tag in (("forward", "fwd"), ("backward", "bwd")):
        f = fit[key] if fit else None
        out.append("%s=%d B = %.2f B/tok%s" % (
            tag, r[key + "_transient_peak_bytes"], r[key + "_transient_bytes_per_token"],
            (" = [%s]/tok" % format_formula(f)) if f else ""))
        if env and len(env[key]) > 1:
            envs.append("%s max{%s}" % (tag, " | ".join(format_formula(e) for e in env[key])))
    line = "    transient %s; %s; param_grad=%d B%s" % (
        out[0], out[1], r["param_grad_bytes"], "" if r["transient_saved_check_ok"] else "  saved-check=MISMATCH")
    if envs:
        line += "\n      envelope per token: " + "; ".join(envs)
    return line


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", help="write the records to this file")
    ap.add_argument("--summary", action="store_true", help="print one line per record")
    ap.add_argument("--layers", default=None, help="comma-separated subset of layers")
    ap.add_argument("--dtypes", default="fp32,bf16")
    ap.add_argument("--sizes", default="0,1", help="indices into SIZES")
    ap.add_argument("--no-peak", action="store_true", help="skip transient peaks and the backward pass")
    ap.add_argument("--no-check", action="store_true", help="skip the emulated kernels' self-check")
    ap.add_argument("--no-transient", action="store_true", help="skip the transient working-set measurement")
    ap.add_argument("--verbose", action="store_true", help="print the saved tensors of each record")
    args = ap.parse_args(argv)
    torch.set_num_threads(max(1, min(2, torch.get_num_threads())))

    if not args.no_check and not self_check():
        return 1
    layers = set(args.layers.split(",")) if args.layers else None
    size_idx = [int(i) for i in args.sizes.split(",")]
    transients = {}
    if not (args.no_transient or args.no_peak) and StorageWeakRef is not None and TorchDispatchMode is not None:
        for dk in args.dtypes.split(","):
            for layer, attention, modes in LAYER_MODES:
                if layers and layer not in layers:
                    continue
                for mode in modes:
                    res = transient_fields(layer, attention, mode, dk, [SIZES[i] for i in size_idx])
                    for si, t in zip(size_idx, res):
                        transients[(layer, attention, mode, dk, si)] = t
    records = []
    for si in size_idx:
        size = SIZES[si]
        for dk in args.dtypes.split(","):
            for layer, attention, modes in LAYER_MODES:
                if layers and layer not in layers:
                    continue
                for mode in modes:
                    t = transients.get((layer, attention, mode, dk, si))
                    r = measure(layer, attention, mode, size, dk, peaks=not args.no_peak and t is None)
                    if t is not None:
                        r["transient_peak_bytes"] = t["forward_peak_live_bytes"]
                        r["transient_peak_fwd_bwd_bytes"] = max(t["forward_peak_live_bytes"],
                                                                t["backward_peak_live_bytes"])
                        for k in ("forward_transient_peak_bytes", "backward_transient_peak_bytes",
                                  "param_grad_bytes", "forward_transient_bytes_per_token",
                                  "backward_transient_bytes_per_token"):
                            r[k] = t.pop(k)
                        r["transient"] = t
                        r["transient_saved_check_ok"] = t["backward_start_live_bytes"] == r["saved_created_bytes"]
                    else:
                        r.update(forward_transient_peak_bytes=None, backward_transient_peak_bytes=None,
                                 param_grad_bytes=None, transient=None, transient_saved_check_ok=None)
                    records.append(r)
                    if args.summary:
                        print(summary_line(r))
                        line = transient_summary_line(r)
                        if line:
                            print(line)
                    if args.verbose:
                        for t in r["saved_tensors"]:
                            print("    %-22s %-9s %10d  %s" % (t["shape"], t["dtype"], t["bytes"], t["op"]))
                        for t in r["torch_version_artifacts"]:
                            print("    (torch %s only) %-22s %-9s %10d  %s" % (torch.__version__, t["shape"], t["dtype"],
                                                                         t["bytes"], t["op"]))
                        for t in r["excluded_tensors"] + r["scalar_tensors"]:
                            print("    (excl) %-15s %-9s %10d  %s %s" % (t["shape"], t["dtype"], t["bytes"], t["op"],
                                                                    t.get("reason", "0-dim")))
    bad = [r for r in records if r.get("retained_check_ok") is False or r.get("transient_saved_check_ok") is False]
    for r in bad:
        print("retained/saved-storage cross-check mismatch: %s %s %s %s" % (r["layer"], r["attention"],
                                                                            r["recompute"], r["dtype"]),
              file=sys.stderr)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(records, fh, sort_keys=True, indent=1)
            fh.write("\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
