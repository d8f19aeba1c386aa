#include "costmodel/activation_memory.h"

#include <algorithm>

#include "specs/moe_spec.h"
#include "specs/precision.h"

namespace fasop {

ActivationMode activation_mode(const PlanKey& key, const MemorySettings& settings) {
  return activation_mode(key, key.tp, settings);
}

ActivationMode activation_mode(const PlanKey& key, int tp, const MemorySettings& settings) {
  ActivationMode mode{.full_recompute = key.recompute,
                      .selective = key.recomputed_modules(),
                      .sequence_parallel = key.sequence_parallel && tp > 1,
                      .cp = key.cp,
                      .etp = key.etp,
                      .stack = settings.stack,
                      .cross_entropy_fusion = settings.cross_entropy_fusion && settings.stack == TrainingStack::kMegatron,
                      .transformer_engine = settings.transformer_engine};
  if (settings.stack == TrainingStack::kTorchtitan) {
    // torchtitan's selective checkpointing is per op, not Megatron's modules; its tensor
    // parallelism always shards the norms' sequence.
    mode.op_selective = mode.selective != 0;
    mode.selective = 0;
    mode.sequence_parallel = tp > 1;
    mode.compiled = settings.compiled;
    mode.compiled_loss = settings.compiled_loss;
    mode.async_tp = settings.async_tp && tp > 1;
  }
  return mode;
}

namespace {

/// The dimensions one formula needs, per token of one GPU. Symbols as in Korthikanti et al.:
/// e element bytes, h hidden, a heads, t tp, sp the sequence split of what tp replicates (t with
/// sequence parallelism, else 1), s the tokens of a sequence on this GPU (1/cp of it).
struct Dims {
  double e, h, qw, kvw, f, a, t, sp, s, v;
  /// Bytes a GEMM's input is kept in for its weight gradient: Transformer Engine keeps fp8
  /// (MXFP8, NVFP4) training's quantized copy (Megatron; e otherwise).
  double g;
  double norm_stat_bytes;  ///< per token and norm: LayerNorm's fp32 mean and rstd, RMSNorm's rstd
};

Dims dims_of(const ModelSpec& m, int tp, const ActivationMode& mode) {
  const double t = tp;
  return {.e = activation_bytes(m.dtype),
          .h = double(m.hidden),
          .qw = m.query_width(),
          .kvw = m.kv_width(),
          .f = double(m.ffn_hidden),
          .a = double(m.heads),
          .t = t,
          .sp = mode.sequence_parallel ? t : 1,
          .s = double(m.sequence) / mode.cp,
          .v = double(padded_vocab_shard(m.vocab, tp, kMegatronVocabMultiple)),
          .g = is_quantized(m.dtype) && mode.stack == TrainingStack::kMegatron ? gemm_input_bytes(m.dtype)
                                                                                 : activation_bytes(m.dtype),
          .norm_stat_bytes = m.norm == Norm::kLayerNorm ? 8.0 : 4.0};
}

/// Bytes a MoE layer's MLP keeps for its backward pass, for `tokens` tokens of its tensor-parallel
/// group (Megatron-Core's MoELayer): the router's fp32 scores (4 bytes an expert a local
/// token); the busiest GPU's permuted tokens (its experts' input, 2 bytes x hidden) and their
/// activations as a dense MLP keeps them (SwiGLU: gate, up and product, 6 bytes x the expert's
/// width; else 4); the shared expert as a dense MLP. Less what selective recomputation drops.
double moe_activation_bytes(const ModelSpec& m, double tokens, double tp, int etp, RecomputeModules recomputed) {
  const MoeSpec& moe = m.moe;
  if (recomputed & kRecomputeMoe) return 0;  // checkpointed whole: only its input, the norm's output, stays
  const bool gated = is_gated(m.activation);
  const double expert_tokens = busiest_expert_tokens(moe, tokens, int(tp), etp);
  // moe_act drops the activation's output (the second GEMM's input, 2 bytes x width) and keeps
  // the first GEMM's output it is recomputed from.
  const double expert_mlp = (gated ? 6 : 4) - (recomputed & kRecomputeMoeAct ? 2 : 0);
  const double shared = recomputed & kRecomputeSharedExperts ? 0 : (gated ? 6 : 4) * tokens * moe.shared_expert_ffn_hidden / tp;
  return 4 * tokens / tp * moe.experts + expert_tokens * (2.0 * m.hidden + expert_mlp * double(moe.expert_ffn_hidden) / etp) +
         shared;
}

/// Bytes an MLA layer's attention keeps for its backward pass, for `tokens` tokens of its
/// tensor-parallel group, in place of a dense layer's queries, keys, values and attention
/// output. Assumed from Megatron-Core's MLASelfAttention without recomputation
/// (recompute_modules mla_up_proj would drop the up-projections' outputs): the input of each
/// latent's norm and the norm's output, which the fused TELayerNormColumnParallelLinear keeps
/// for its weight gradient (2 + 2 bytes x (q_lora_rank + kv_lora_rank), on the rank's own
/// tokens with sequence parallelism); the rotary key before rotation (2 x qk_rope_head_dim, the
/// same); the queries, keys and values that flash attention keeps (2 x the heads' (query width
/// + key width + value width) / tp) and its output, the output projection's input (2 x heads x
/// v_head_dim / tp); with mla_up_proj recomputed, the output alone. Flash attention's softmax
/// statistics (fp32, one per head and query) are left out.
double mla_activation_bytes(const ModelSpec& m, double tokens, double tp, double sp, RecomputeModules recomputed) {
  const MlaSpec& mla = m.mla;
  const double local_heads = m.heads / tp;
  const double latents = (4.0 * (double(mla.q_lora_rank) + mla.kv_lora_rank) + 2.0 * mla.qk_rope_head_dim) * tokens / sp;
  // mla_up_proj discards the queries, keys and values after the attention (Megatron-Core's
  // CheckpointWithoutOutput) and keeps the output.
  const double qkv = recomputed & kRecomputeMlaUpProj ? 0 : 2 * mla.q_head_dim() + mla.v_head_dim;
  return latents + 2 * tokens * local_heads * (qkv + mla.v_head_dim);
}

/// A Megatron-Core attention's bytes per token on one GPU (queries, keys, values, the output
/// the projection keeps, and flash attention's fp32 log-sum-exp or the unfused kernels' score
/// matrices), over tp. Unfused attention expands grouped keys and values to every head and
/// keeps the softmax output (with attention dropout its mask and output too) for each of the
/// s keys; selective recomputation of core_attn drops the scores or the log-sum-exp.
double megatron_attention_token_bytes(const ModelSpec& m, const Dims& d, const ActivationMode& mode) {
  const bool core_recomputed = mode.selective & kRecomputeCoreAttn;
  // The projection's input is attention's output; quantized training keeps a copy of its own.
  const double projection_copy = d.g < d.e ? d.g * d.qw : 0;
  // Per-head query and key norms keep their inputs and statistics.
  const double qk_norms = m.qk_layernorm ? d.e * (d.qw + d.kvw) + d.norm_stat_bytes * (d.a + m.kv_heads) : 0;
  if (m.flash_attention) {
    // Recomputed, the checkpoint keeps its inputs: with rotary positions the values are a view
    // of the QKV GEMM's output, which stays whole (otherwise TE copies them out and frees it).
    const double pinned_qkv = core_recomputed && m.rotary_positions() ? d.e * (d.qw + d.kvw) : 0;
    return (2 * d.e * d.qw + 2 * d.e * d.kvw + pinned_qkv + projection_copy + qk_norms + (core_recomputed ? 0 : 4 * d.a)) /
           d.t;
  }
  const double score_bytes = m.attention_dropout > 0 ? 2 * d.e + 1 : d.e;
  return (4 * d.e * d.qw + projection_copy + qk_norms + (core_recomputed ? 0 : score_bytes * d.a * d.s)) / d.t;
}

/// A Megatron-Core transformer layer's kept bytes (Korthikanti et al. 2022, per layer: sbh(10 +
/// 24/t) + 5as^2b/t with unfused attention and dropout): the two norms' inputs and outputs
/// (the next GEMM's input) and statistics, the two hidden dropouts' one-byte masks, all split
/// by sp; attention; the MLP's first GEMM output and activation output (SwiGLU's two halves: 3
/// widths, else 2), split by t. Selective recomputation's layernorm drops the norms' outputs,
/// mlp the MLP's part; moe and MLA keep their own.
double megatron_layer_bytes(const ModelSpec& m, const LayerUnit& unit, const Dims& d, double tokens,
                            const ActivationMode& mode) {
  const RecomputeModules recomputed = mode.selective;
  const double masks = m.hidden_dropout > 0 ? 2 * d.h : 0;
  const double norm_outputs = recomputed & kRecomputeLayernorm ? 0 : 2 * d.g * d.h;
  const double replicated = tokens * (2 * d.e * d.h + norm_outputs + masks + 2 * d.norm_stat_bytes) / d.sp;
  const double attention = m.mla.enabled() ? mla_activation_bytes(m, tokens, d.t, d.sp, recomputed)
                                           : tokens * megatron_attention_token_bytes(m, d, mode);
  // The first GEMM's output (SwiGLU's two halves) and the activation's, the second GEMM's input.
  const double mlp_token = ((is_gated(m.activation) ? 2 : 1) * d.e + d.g) * d.f / d.t;
  const double dense_mlp = recomputed & kRecomputeMlp ? 0 : tokens * mlp_token;
  const double mlp = unit.moe ? moe_activation_bytes(m, tokens, d.t, mode.etp, recomputed) : dense_mlp;
  const double bytes = replicated + attention + mlp;
  return unit.cross_attention ? bytes + replicated + attention : bytes;
}

/// torchtitan's Llama block (eager PyTorch ops, FSDP2 and DTensor tensor parallelism):
/// - RMSNorm keeps its fp32 upcast, the normalised tensor and (as the next GEMMs' input, which
///   tensor parallelism all-gathers) its output; compiled, its input and rstd alone;
/// - attention keeps queries, keys and values (grouped keys and values repeated to every head
///   before scaled_dot_product_attention), its output and log-sum-exp;
/// - the SwiGLU MLP keeps w1's and w3's outputs, silu's output and their product (compiled: the
///   two GEMM outputs).
/// Per-op selective checkpointing keeps the block's input and what its policy saves: the
/// outputs of the 1st, 3rd, 5th and 7th matmul (wq, wv, w1, w2; w2's before its reduce-scatter,
/// whole over the sequence), attention's output and log-sum-exp, and the reduce-scatters'
/// outputs under tensor parallelism. Eager PyTorch caches every output the policy saves;
/// compiled, the partitioner saves only what the backward pass reads, which w2's output and
/// the reduce-scatter after it are not (the residual add's gradient needs neither).
double torchtitan_layer_token_bytes(const Dims& d, const ActivationMode& mode) {
  const bool tp = d.t > 1;
  if (mode.op_selective) {
    const double mlp_output = mode.compiled ? 0 : d.e * d.h + (tp ? d.e * d.h / d.t : 0);
    return d.e * d.h / d.sp + (2 * d.e * d.qw + d.e * d.kvw + 4 * d.a + d.e * d.f) / d.t + mlp_output +
           (tp ? d.e * d.h / d.t : 0);
  }
  const double gathered_input = tp ? d.e * d.h : 0;  // the all-gathered GEMM input, whole over the sequence
  const double norm = mode.compiled ? (d.e * d.h + 4) / d.sp + gathered_input : ((4 + d.e) * d.h + 4) / d.sp + d.e * d.h;
  const double attention = (4 * d.e * d.qw + 4 * d.a) / d.t;
  const double mlp = (mode.compiled ? 2 : 4) * d.e * d.f / d.t;
  return 2 * norm + attention + mlp;
}

/// The post-process unit's kept bytes per token: the final norm's input, output and statistics
/// (torchtitan's eager RMSNorm as in its blocks) and the loss's fp32 softmax (Megatron's
/// vocab-parallel cross entropy) or log-softmax (torchtitan), plus the labels and masks.
double head_token_bytes(const Dims& d, const ActivationMode& mode) {
  if (mode.stack == TrainingStack::kTorchtitan)
    return ((4 + d.e) * d.h + 4) / d.sp + d.e * d.h + (mode.compiled_loss ? d.e : 4) * d.v + 8;
  // The fused cross entropy keeps the 16-bit logits its gradient overwrites.
  const double logits = mode.cross_entropy_fusion ? d.e * d.v : 4 * d.v;
  return (2 * d.e * d.h + d.norm_stat_bytes) / d.sp + logits + 13;
}

/// A transformer layer's transients per token, over what it keeps.
struct LayerTransient {
  double forward = 0, backward = 0;
};

/// A transformer layer's transients per token as tests/activation_harness.py measures them (bf16
/// at tp 1: coefficients of h, f and the scores' a x s; other precisions scale with e / 2):
/// - forward, without full recomputation: 4h (the residual and a norm's output beside the next
///   op's); under full recomputation the no-grad forward's largest working set, 2h + 6f (SwiGLU)
///   or 20h (GELU at f = 4h, as 2h + 4.5f); unfused scores raise them to -20h + 2as (selective:
///   -24h + 7as, recomputed: 8h + 7as) once a x s is large;
/// - backward: the MLP's gradients over its freed inputs, 2h + 4f (SwiGLU) or 11h (GELU, as 2h +
///   2.25f); unfused scores -18h + 2as (selective -16h + 7as); full recomputation rebuilds the
///   layer's kept activations first (Megatron's reentrant checkpoint; torch's), adding them;
/// - torchtitan's eager block: forward 6h (the residual stays live through the MLP), backward
///   2h + 4f; per-op checkpointing 2h + 6f forward and 20h - 2kv + 10f + 8 backward, its
///   recomputed ops' outputs; full recomputation 4h + 6f forward. Compiled blocks take
///   Megatron's fused figures.
/// With tensor parallelism the h terms divide by sp, the f and score terms by t.
LayerTransient layer_transient_token_bytes(const ModelSpec& m, const Dims& d, const ActivationMode& mode,
                                           double saved_without_recompute) {
  const double unit = d.e / 2;  // the harness's bf16 coefficients at this precision
  const double h = unit * d.h / d.sp, f = unit * d.f / d.t, kv = unit * d.kvw / d.t;
  const bool gated = is_gated(m.activation);
  const double as = m.flash_attention ? 0 : unit * d.a * d.s / d.t;
  const bool eager_torchtitan = mode.stack == TrainingStack::kTorchtitan && !mode.compiled;
  const double mlp_backward = gated ? 2 * h + 4 * f : 2 * h + 2.25 * f;
  LayerTransient t;
  if (eager_torchtitan && mode.op_selective) return {2 * h + 6 * f, 20 * h - 2 * kv + 10 * f + 8};
  if (mode.full_recompute) {
    const double no_grad_forward = eager_torchtitan ? 4 * h + 6 * f : gated ? 2 * h + 6 * f : 2 * h + 4.5 * f;
    t.forward = std::max(no_grad_forward, as > 0 ? 8 * h + 7 * as : 0);
    t.backward = std::max(saved_without_recompute + mlp_backward, as > 0 ? 18 * h + 7 * as : 0);
    return t;
  }
  const bool core_recomputed = mode.selective & kRecomputeCoreAttn;
  t.forward = eager_torchtitan ? 6 * h : 4 * h;
  t.backward = mlp_backward;
  if (as > 0) {
    // Transformer Engine's unfused attention allocates the raw scores its softmax reads.
    const double raw_scores = mode.transformer_engine && mode.stack == TrainingStack::kMegatron ? 2 * as : 0;
    t.forward = std::max(t.forward, (core_recomputed ? -24 * h + 7 * as : -20 * h + 2 * as) + raw_scores);
    t.backward = std::max(t.backward, (core_recomputed ? -16 * h + 7 * as : -18 * h + 2 * as) + raw_scores);
  }
  return t;
}

}  // namespace

double unit_activation_bytes(const ModelSpec& m, const LayerUnit& unit, int tp, int mbs, const ActivationMode& mode) {
  const Dims d = dims_of(m, tp, mode);
  const double tokens = d.s * mbs;
  const bool torchtitan = mode.stack == TrainingStack::kTorchtitan;
  switch (unit.role) {
    case LayerRole::kEmbedding:
      // The token ids (int64), learned positions' ids too, and, with dropout, its one-byte mask.
      return tokens * (8 + (m.learned_positions() && !torchtitan ? 8 : 0) +
                       (m.hidden_dropout > 0 && !torchtitan ? d.h / d.sp : 0));
    case LayerRole::kPostProcess:
      // Each MTP module also keeps its embedding's output, its norms' inputs and eh_proj's
      // 2h-wide input, its layer's, and its own logits.
      return tokens * head_token_bytes(d, mode) +
             m.mtp_layers * (tokens * (5 * d.e * d.h / d.sp + 4 * d.v) +
                             unit_activation_bytes(m, m.mtp_transformer_unit(), tp, mbs, mode));
    case LayerRole::kTransformer:
      if (mode.full_recompute) return tokens * d.e * d.h / d.sp;  // the layer's input; the rest is recomputed
      if (torchtitan && !unit.moe && !m.mla.enabled() && !unit.cross_attention)
        return tokens * torchtitan_layer_token_bytes(d, mode);
      return megatron_layer_bytes(m, unit, d, tokens, mode);
  }
  return 0;
}

UnitTransient unit_transient_bytes(const ModelSpec& m, const LayerUnit& unit, int tp, int mbs, const ActivationMode& mode) {
  return unit_activation_memory(m, unit, tp, mbs, mode).transient;
}

UnitActivationMemory unit_activation_memory(const ModelSpec& m, const LayerUnit& unit, int tp, int mbs,
                                            const ActivationMode& mode) {
  const Dims d = dims_of(m, tp, mode);
  const double tokens = d.s * mbs;
  UnitActivationMemory memory;
  memory.kept_bytes = unit_activation_bytes(m, unit, tp, mbs, mode);
  UnitTransient& transient = memory.transient;
  switch (unit.role) {
    case LayerRole::kEmbedding:
      break;
    case LayerRole::kPostProcess:
      if (mode.stack == TrainingStack::kTorchtitan && mode.compiled_loss) {
        // Compiled, the cross entropy reads the 16-bit logits it keeps and writes their 16-bit gradient.
        transient.backward_bytes = tokens * d.e * d.v;
      } else if (mode.stack == TrainingStack::kTorchtitan && d.t > 1) {
        // PyTorch's loss parallelism (vocabulary-sharded logits, torch.distributed.tensor.
        // parallel.loss): its log-softmax keeps the fp32 copy and the shifted logits beside the
        // exponent and the output (14 bytes a logit with the bf16 ones at the peak); its fused
        // backward makes the one-hot gradient, the exponent of the output, their sum and product.
        transient.forward_bytes = tokens * (d.e + 8) * d.v;
        transient.backward_bytes = tokens * 12 * d.v;
      } else if (mode.stack == TrainingStack::kTorchtitan) {
        // The 16-bit logits and their fp32 copy (none for fp32 logits) beside the log-softmax;
        // backward, the loss's and the log-softmax's fp32 gradients beside it.
        transient.forward_bytes = tokens * (d.e < 4 ? d.e + 4 : 4) * d.v;
        transient.backward_bytes = tokens * 8 * d.v;
      } else if (!mode.cross_entropy_fusion && d.e < 4) {
        // Megatron's cross entropy upcasts the 16-bit logits (both live until the loss is
        // computed) and works in place on the fp32 copy; its gradient is cast back. The fused
        // one works in place on the 16-bit logits; fp32 logits need no copy.
        transient.forward_bytes = tokens * d.e * d.v;
        transient.backward_bytes = tokens * d.e * d.v;
      }
      break;
    case LayerRole::kTransformer: {
      ActivationMode kept = mode;
      kept.full_recompute = false;
      kept.selective = 0;
      kept.op_selective = false;
      const bool recomputes = mode.full_recompute || mode.selective != 0 || mode.op_selective;
      double saved_without_recompute = (recomputes ? unit_activation_bytes(m, unit, tp, mbs, kept) : memory.kept_bytes) / tokens;
      // Asynchronous tensor parallelism gathers the two GEMM inputs piecewise, never whole.
      if (mode.async_tp) saved_without_recompute -= 2 * d.e * d.h;
      const LayerTransient per_token = layer_transient_token_bytes(m, d, mode, saved_without_recompute);
      transient.forward_bytes = tokens * per_token.forward;
      transient.backward_bytes = tokens * per_token.backward;
      break;
    }
  }
  return memory;
}

}  // namespace fasop
