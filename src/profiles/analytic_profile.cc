#include "profiles/analytic_profile.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "profiles/ep_overlap.h"
#include "profiles/libtorch_layer.h"
#include "profiles/mla_layer.h"
#include "profiles/moe_dispatch.h"
#include "profiles/moe_layer.h"
#include "profiles/mtp_layer.h"
#include "profiles/pytorch_ring_attention.h"
#include "specs/link.h"
#include "specs/precision.h"
#include "specs/sliding_window.h"
#include "specs/spec_error.h"

namespace fasop {
namespace {

/// What a stack launches and moves beyond the GEMMs, per transformer layer's forward pass
/// (backward: twice the kernels and the traffic). Counted from the stacks' code paths:
/// Megatron-LM fuses norms, bias-dropout-add, bias-GeLU/SwiGLU and scale-mask-softmax; eager
/// PyTorch (Hugging Face's GPT-2/BERT/OPT blocks) runs dropouts, residual adds, head
/// splitting copies and a tanh-composed GeLU as separate kernels.
struct StackTraits {
  int layer_kernels;          ///< norms, GEMMs, activation, residual paths (attention apart)
  int unfused_attention_kernels;  ///< QK^T, scale/mask, softmax, dropout, x V (fused: 1)
  double replicated_elements;     ///< x T h elements of element-wise traffic (norms, dropouts, adds)
  double head_copy_elements;      ///< x T h / tp: copies that split and merge heads
  double activation_elements;     ///< x T f / tp: the MLP activation's traffic
  double score_passes;            ///< unfused attention: passes over the b heads/tp s^2 scores
  int small_unit_kernels;         ///< an embedding's or a head's forward kernels
  /// The loss's traffic per logit in fp32 (max, exponentials, sums, the gradient), forward and
  /// backward; logits narrower than fp32 are also upcast and their gradient cast back.
  double loss_fp32_bytes_per_logit, loss_backward_fp32_bytes_per_logit;
  double loss_logit_copies;       ///< copies of the logits before the loss (and of their gradient)
  /// The embedding unit adds positions (and token types), applies dropout and masks its
  /// vocabulary shard, as the model's code does; false where it is a bare lookup of its shard
  /// (fasop-cpp's LibTorch profiler).
  bool embedding_adds_positions;
  double embedding_layout_passes;  ///< Megatron's [b, s, h] -> [s, b, h] copy (read + write)
  /// The vocabulary is padded to a multiple of this x tp (Megatron-LM's
  /// --make-vocab-size-divisible-by, default 128); 1: each rank holds ceil(vocab / tp) rows.
  int vocab_multiple;
  /// x T (q + kv widths) / tp: rotary embedding's traffic on the queries and keys (Llama).
  double rotary_elements = 2;
  /// Grouped-query attention's keys and values copied out to the queries' heads before the
  /// attention kernel (torchtitan's repeat_kv): a write of each at the queries' width.
  bool repeats_kv = false;
  /// The attention kernel is PyTorch's scaled_dot_product_attention as torchtitan selects it
  /// (the GPU's sdpa_ shares), not Transformer Engine's fused kernel.
  bool sdpa_attention = false;
  /// Context parallelism is PyTorch's ring attention (torch.distributed.tensor.experimental
  /// context_parallel, its default all-gather rotation): forward, the other ranks' key and value
  /// chunks are all-gathered once, beside the first sub-attention only; backward, they are
  /// gathered again and the chunks' gradients, accumulated in fp32, pass rank to rank each step.
  /// Megatron-LM's (Transformer Engine's) passes one chunk a step beside each sub-attention.
  bool cp_gathers_kv = false;
  /// Float8 training's tensor parallelism (torchao's Float8ColwiseParallel and
  /// Float8RowwiseParallel, tensorwise scaling): the layers' inputs, and backward their output
  /// gradients, are cast to float8 before their all-gathers; the reduce-scatters stay bf16.
  bool fp8_tp_all_gather = false;
  /// Asynchronous tp is PyTorch's micro-pipelining (Inductor fuses an all-gather into the
  /// matmuls that read it, a matmul into the reduce-scatter of its output): a reduce-scatter of
  /// a sum of matmuls stays a plain collective.
  bool micro_pipelined_tp = false;
  /// Float8 training converts every linear layer but the output layer (torchtitan's float8
  /// converter filters "output"), whose GEMMs stay bf16.
  bool fp8_skips_output_layer = false;
};

/// torchtitan's Llama TransformerBlock (torchtitan/models/llama, December 2024) run eager, per
/// token of a forward pass, in 16-bit elements (bytes / 2). Each RMSNorm upcasts (read 1, write
/// 2), squares (2, 2), takes the mean (2), scales (2, 2), casts back (2, 1) and applies its
/// weight (1, 1): 18 a norm, two a block; the two residual adds 3 each. Rotary embedding upcasts
/// q and k (1, 2), multiplies them as complex numbers (2, 2) and casts back (2, 1): 10. The
/// attention's output is made contiguous for the output projection (1, 1) and repeat_kv writes
/// the keys and values out (repeats_kv). SiLU (1, 1) and the product with w3 (2, 1) read and
/// write 5 elements per MLP width (10/3 x the gated MLP's 1.5). Kernels: 7 GEMMs, 7 per norm,
/// 3 per rotary tensor, 2 copies, 2 adds, 2 in the MLP.
/// Its loss (train.py) upcasts the logits to fp32 and runs PyTorch's cross entropy, as
/// fasop-cpp's profiler does (16 and 20 bytes per logit); its embedding is a bare lookup
/// (nn.Embedding), and the vocabulary is not padded.
constexpr StackTraits kTorchtitanEager{
    .layer_kernels = 34, .unfused_attention_kernels = 5, .replicated_elements = 42, .head_copy_elements = 2,
    .activation_elements = 10.0 / 3, .score_passes = 8.5, .small_unit_kernels = 6, .loss_fp32_bytes_per_logit = 16,
    .loss_backward_fp32_bytes_per_logit = 20, .loss_logit_copies = 0, .embedding_adds_positions = false,
    .embedding_layout_passes = 0, .vocab_multiple = 1, .rotary_elements = 10, .repeats_kv = true,
    .sdpa_attention = true, .cp_gathers_kv = true, .fp8_tp_all_gather = true,
    .micro_pipelined_tp = true, .fp8_skips_output_layer = true};

/// The same block under torch.compile (one graph a block, as torchtitan compiles it): Inductor
/// fuses each norm into one read and one write, the second with the residual add before it
/// (4), the last add (3); rotary (2) and SiLU x w3 (2 x 1.5) as Megatron's fused kernels.
/// The attention's inputs and output stay materialised for the SDPA kernel (an extern call).
constexpr StackTraits kTorchtitanCompiled{
    .layer_kernels = 14, .unfused_attention_kernels = 5, .replicated_elements = 9, .head_copy_elements = 2,
    .activation_elements = 2, .score_passes = 8.5, .small_unit_kernels = 6, .loss_fp32_bytes_per_logit = 16,
    .loss_backward_fp32_bytes_per_logit = 20, .loss_logit_copies = 0, .embedding_adds_positions = false,
    .embedding_layout_passes = 0, .vocab_multiple = 1, .rotary_elements = 2, .repeats_kv = true,
    .sdpa_attention = true, .cp_gathers_kv = true, .fp8_tp_all_gather = true,
    .micro_pipelined_tp = true, .fp8_skips_output_layer = true};

StackTraits traits(Stack stack) {
  switch (stack) {
    // Hugging Face's loss copies the shifted logits (contiguous) before PyTorch's cross entropy
    // (as below); the copy's backward zero-fills and copies the slice's gradient.
    case Stack::kEager:
      return StackTraits{.layer_kernels = 22, .unfused_attention_kernels = 6, .replicated_elements = 15,
                         .head_copy_elements = 2, .activation_elements = 6, .score_passes = 10,
                         .small_unit_kernels = 6, .loss_fp32_bytes_per_logit = 16,
                         .loss_backward_fp32_bytes_per_logit = 20, .loss_logit_copies = 1,
                         .embedding_adds_positions = true, .embedding_layout_passes = 0, .vocab_multiple = 1};
    // fasop-cpp's profiler (LibTorch): cross_entropy's log_softmax on a row wider than shared
    // memory reads it three times (max, sum of exponentials, output) and writes it once (16).
    // Backward: nll_loss's dense zero-filled gradient (4), log_softmax's backward (a sum pass,
    // then gradient and output read and the input's gradient written: 16).
    // Its vocabulary is padded as Megatron-LM pads it (profile layers --vocab-multiple, default 128).
    // Its transformer layer is counted op by op (libtorch_layer.h), not from the first four fields.
    case Stack::kLibtorch:
      return StackTraits{.layer_kernels = 0, .unfused_attention_kernels = 5, .replicated_elements = 0,
                         .head_copy_elements = 0, .activation_elements = 0, .score_passes = 8.5,
                         .small_unit_kernels = 5, .loss_fp32_bytes_per_logit = 16,
                         .loss_backward_fp32_bytes_per_logit = 20, .loss_logit_copies = 0,
                         .embedding_adds_positions = false, .embedding_layout_passes = 0,
                         .vocab_multiple = kMegatronVocabMultiple};
    case Stack::kTorchtitan: return kTorchtitanEager;
    case Stack::kTorchtitanCompiled: return kTorchtitanCompiled;
    case Stack::kMegatron: break;
  }
  // Megatron: 2 norms, 4 GEMMs, activation, 2 bias-dropout-adds, rotary or bias kernels (~2);
  // unfused attention: 2 batched GEMMs, fused scale-mask-softmax, dropout. Traffic: each norm
  // reads and writes its input (2 x 2), each bias-dropout-add reads the projection and the
  // residual and writes the sum and a one-byte mask (2 x 3.5); bias-GeLU reads and writes the
  // MLP's width (2 f / t); the scores are written, read and written by softmax, dropout reads
  // and writes them and a one-byte mask, x V reads them: 6.5 passes.
  // The vocabulary-parallel cross entropy takes the max of the fp32 logits (read 4), subtracts
  // it in place (read 4, write 4), exponentiates in place (8), sums (read 4) and divides in
  // place (8); its backward scales the saved softmax by the loss's gradient in place (8).
  // Its embedding (Megatron-LM's and Megatron-DeepSpeed's Embedding.forward) transposes the
  // looked-up rows to [s, b, h] with a contiguous copy.
  return StackTraits{.layer_kernels = 11, .unfused_attention_kernels = 4, .replicated_elements = 11,
                     .head_copy_elements = 0, .activation_elements = 2, .score_passes = 6.5, .small_unit_kernels = 3,
                     .loss_fp32_bytes_per_logit = 32, .loss_backward_fp32_bytes_per_logit = 8, .loss_logit_copies = 0,
                     .embedding_adds_positions = true, .embedding_layout_passes = 2,
                     .vocab_multiple = kMegatronVocabMultiple};
}

/// PyTorch's embedding backward (embedding_dense_backward on CUDA), per element of the output's
/// gradient: the time 40 bytes take at an element-wise kernel's memory share, and the launches
/// its sort and segment kernels add (the sweep's fixed part, about 20 us, at 3 us a launch).
/// Fitted by hand to scripts/measure-embedding-backward.py's H100 sweep
/// (validation/embedding/h100.csv: 36-50 bytes at 8k-32k tokens of width 4096 and 1600).
constexpr double kEmbeddingBackwardBytesPerElement = 40;
constexpr int kSortedSegmentSumKernels = 6;


/// Passes over the embedding's output (T x h elements) its forward pass makes: the lookup reads
/// the rows and writes them (2); learned positions (GPT-2, OPT, BERT) and BERT's token types are
/// each a lookup and an add (5); dropout, which GPT-2, BERT and T5 train with and Llama recipes
/// do not, reads, writes and keeps a one-byte mask; a vocabulary-parallel lookup zeroes the rows
/// other ranks own (a write). Counted from Megatron-LM's Embedding and VocabParallelEmbedding.
double embedding_passes(const ModelSpec& m, const StackTraits& st, int tp) {
  if (!st.embedding_adds_positions) return 2;
  double passes = 2 + (tp > 1 ? 1 : 0);
  if (m.learned_positions()) passes += 5;
  if (m.family == ModelFamily::kBert) passes += 5;  // token types
  if (m.family != ModelFamily::kLlama) passes += 2 + 1 / activation_bytes(m.dtype);  // dropout
  return passes + st.embedding_layout_passes;
}

/// The loss's traffic per logit of `bytes`-wide activations: the upcast to fp32 (read, write 4)
/// and its gradient's cast back (read 4, write), the stack's copies, its fp32 passes. A compiled
/// loss (torchtitan's) reads the 16-bit logits twice forward (the row's maximum and sum of
/// exponentials), and backward reads them and writes their gradient: nothing in fp32.
double loss_bytes_per_logit(const StackTraits& st, double bytes, bool backward, bool compiled) {
  if (compiled) return 2 * bytes;
  const double cast = bytes < 4 ? bytes + 4 : 0;
  const double copies = st.loss_logit_copies * (backward ? 3 : 2) * bytes;  // a slice's backward zero-fills too
  return cast + copies + (backward ? st.loss_backward_fp32_bytes_per_logit : st.loss_fp32_bytes_per_logit);
}

/// Seconds of a pass's fused attention: its FLOPs at the share of the peak the stack's kernel
/// reaches in that pass.
double attention_s(const PassWork& work, Stack stack, const PrecisionEfficiency& e, double peak_flops) {
  const bool sdpa = traits(stack).sdpa_attention;
  const double share = work.backward ? (sdpa ? e.sdpa_attention_backward_peak_share : e.attention_backward_peak_share)
                                     : (sdpa ? e.sdpa_attention_peak_share : e.attention_peak_share);
  return work.attention_flops / (peak_flops * share);
}

/// The host's cost per op: torchtitan's, eager or compiled, is PyTorch's dispatcher's (eager's).
const char* dispatch_stack_name(Stack stack) {
  return stack == Stack::kTorchtitan || stack == Stack::kTorchtitanCompiled ? stack_name(Stack::kEager) : stack_name(stack);
}

}  // namespace

LayerOptions with_training_stack(LayerOptions options, const MemorySettings& memory) {
  if (memory.stack != TrainingStack::kTorchtitan) return options;
  options.stack = memory.compiled ? Stack::kTorchtitanCompiled : Stack::kTorchtitan;
  options.compiled_loss = memory.compiled_loss;
  // Asynchronous tensor parallelism runs each all-gather and reduce-scatter in chunks beside
  // the GEMMs that consume or produce them, as Megatron's --tp-comm-overlap does.
  if (memory.async_tp) options.execution.tp_comm_overlap = true;
  return options;
}

PassWork backward_of(const PassWork& forward, const std::string& dtype) {
  PassWork b;
  b.backward = true;
  for (const Gemm& g : forward.gemms) {
    b.gemms.push_back({g.m, g.k, g.n, g.count});  // data gradient: (m x n) x (n x k)
    b.gemms.push_back({g.k, g.n, g.m, g.count, true});  // weight gradient: (k x m) x (m x n)
  }
  b.weight_bytes = forward.weight_bytes / gemm_input_bytes(dtype) * (gemm_input_bytes(dtype) + 8);
  b.attention_flops = 2.5 * forward.attention_flops;
  b.memory_bytes = 2 * forward.memory_bytes;
  b.kernels = 2 * forward.kernels;
  b.host_ops = 2 * forward.host_ops;
  return b;
}

double peak_flops(const GpuSpec& gpu, const std::string& dtype, const std::string& node_name) {
  const std::string precision = peak_precision(dtype);
  auto peak = gpu.peak_tflops.find(precision);
  if (peak == gpu.peak_tflops.end() && precision == "bf16") peak = gpu.peak_tflops.find("fp16");  // e.g. V100
  if (peak == gpu.peak_tflops.end())
    throw SpecError("node type '" + node_name + "': field 'peak_tflops." + precision + "': missing; give the " +
                    gpu.name + "'s dense " + precision + " TFLOP/s or train the model in a precision it lists");
  return peak->second * 1e12;
}

double PassWork::gemm_flops() const {
  double sum = 0;
  for (const Gemm& g : gemms) sum += g.flops();
  return sum;
}

LayerWork layer_work(const ModelSpec& m, const LayerUnit& unit, int tp, int mbs, const LayerOptions& options) {
  const double b = mbs, s = m.sequence, h = m.hidden, f = m.ffn_hidden, t = tp;
  const double head_dim = m.attention_head_dim(), local_heads = double(m.heads) / t;
  const double hq = m.query_width(), hkv = m.kv_width();  // queries' (and output's) and keys' widths
  // Context parallelism: each GPU holds s / cp of every sequence's tokens (queries), and its
  // attention reaches all s keys through the ring.
  const double s_local = s / options.cp;
  const double tokens = b * s_local;
  const double bytes = activation_bytes(m.dtype), gemm_bytes = gemm_input_bytes(m.dtype);
  const StackTraits st = traits(options.stack);
  // The embedding's and head's rows on one GPU.
  const double vocab_rows = padded_vocab_shard(m.vocab, tp, st.vocab_multiple);
  const double sp = options.sequence_parallel ? t : 1;  // what tp replicates splits over the sequence
  const bool eager = options.stack == Stack::kLibtorch;  // fasop-cpp's profiler: counted op by op
  LayerWork w;
  w.tp = tp;
  PassWork& fw = w.forward;
  switch (unit.role) {
    case LayerRole::kEmbedding:
      fw.memory_bytes = embedding_passes(m, st, tp) * tokens * h * bytes;
      fw.kernels = st.small_unit_kernels;
      fw.host_ops = eager ? libtorch_small_unit_host_ops(m, unit.role) : fw.kernels;
      fw.tp_collectives = tp > 1 ? 1 : 0;  // vocabulary-parallel lookup
      fw.tp_collective_bytes = tokens * h * bytes;
      w.backward = backward_of(fw, m.dtype);
      // The lookup's backward is PyTorch's sorted segment sum (embedding_dense_backward): a
      // radix sort of the indices and the segment kernels, then per element of the output's
      // gradient a read, fp32 partial sums written and read, and the row written. Timed on H100
      // across vocabulary shards, token counts and widths (validation/embedding/, by
      // scripts/measure-embedding-backward.py), its per-token part takes what 40 bytes an
      // element would at the memory share of element-wise kernels, and its fixed part (about
      // 20 us at 1,024 tokens) what 6 more launches do.
      // The table's gradient is a dense buffer, zeroed and accumulated into (8 bytes an entry).
      // backward_of doubled the lookup's 2 passes (4 x bytes an element): the lookup's own is this.
      w.backward.memory_bytes += (kEmbeddingBackwardBytesPerElement - 4 * bytes) * tokens * h + 8 * vocab_rows * h;
      w.backward.kernels += kSortedSegmentSumKernels;
      if (!eager) w.backward.host_ops += kSortedSegmentSumKernels;  // LibTorch launches them from one op
      w.backward.tp_collectives = 0;
      return w;
    case LayerRole::kPostProcess:
      // Final norm, the output head's GEMM over the vocabulary shard, softmax and loss.
      fw.gemms.push_back({tokens, vocab_rows, h});
      fw.high_precision_gemms = st.fp8_skips_output_layer && m.mtp_layers == 0;
      fw.weight_bytes = h * vocab_rows * (fw.high_precision_gemms ? gemm_input_bytes(non_gemm_precision(m.dtype)) : gemm_bytes);
      fw.memory_bytes = 4 * tokens * h * bytes + loss_bytes_per_logit(st, bytes, false, options.compiled_loss) * tokens * vocab_rows;
      fw.kernels = st.small_unit_kernels;
      fw.host_ops = eager ? libtorch_small_unit_host_ops(m, unit.role) : fw.kernels;
      w.backward = backward_of(fw, fw.high_precision_gemms ? non_gemm_precision(m.dtype) : m.dtype);
      w.backward.high_precision_gemms = fw.high_precision_gemms;
      w.backward.memory_bytes = 2 * 4 * tokens * h * bytes + loss_bytes_per_logit(st, bytes, true, options.compiled_loss) * tokens * vocab_rows;
      w.backward.tp_collectives = tp > 1 ? 1 : 0;  // the head's input gradient
      w.backward.tp_collective_bytes = tokens * h * bytes;
      if (m.mtp_layers > 0) {
        // Multi-token prediction lives with the loss: each module runs a layer and the head again.
        const LayerWork module = mtp_module_work(m, tp, mbs, options, w);
        for (int i = 0; i < m.mtp_layers; ++i) {
          append_pass(w.forward, module.forward);
          append_pass(w.backward, module.backward);
        }
      }
      return w;
    case LayerRole::kTransformer:
      break;
  }
  const bool swiglu = is_gated(m.activation);
  // The keys' and values' width the attention kernel takes: the queries' where the stack
  // repeats them out first (grouped-query attention).
  const double kernel_kv_width = st.repeats_kv ? hq : hkv;
  // Causal self-attention computes half the score matrix (T5's and BERT's encoders all of it).
  const bool causal = m.causal && unit.segment != "encoder";
  int attention_kernels = 0;
  // Multi-head latent attention: queries and keys q_head_dim() wide per head, values v_head_dim.
  const MlaSpec& mla = m.mla;
  const bool latent = mla.enabled();
  // With context parallelism a GPU's s / cp queries meet all s keys; a causal mask balanced
  // over the ring (Megatron-LM's zigzag split) leaves every GPU half of that, as without cp.
  // A sliding window leaves each query its window (fused kernels skip the rest; unfused ones
  // compute the whole matrix and mask it).
  auto attention = [&](bool is_causal) {
    if (m.flash_attention) {
      const double pairs = is_causal ? causal_pair_share(m.sequence, unit.attention_window) : 1;
      // Q K^T and scores x V: 2 FLOPs a multiply-add over the query/key width and the value width.
      fw.attention_flops += latent ? 2 * b * s_local * s * local_heads * (mla.q_head_dim() + mla.v_head_dim) * pairs
                                   : 4 * b * s_local * s * hq / t * pairs;
      attention_kernels += 1;
    } else {
      const double qk_width = latent ? mla.q_head_dim() : head_dim, v_width = latent ? mla.v_head_dim : head_dim;
      fw.gemms.push_back({s_local, s, qk_width, b * local_heads});  // Q K^T
      fw.gemms.push_back({s_local, v_width, s, b * local_heads});   // scores x V
      fw.memory_bytes += st.score_passes * b * local_heads * s_local * s * bytes;
      attention_kernels += st.unfused_attention_kernels;
    }
  };
  double weights_per_gpu = 0;
  double elements = st.replicated_elements * tokens * h / sp + st.head_copy_elements * tokens * h / t;
  int layer_kernels = st.layer_kernels;  // beside the attention's
  MlaWork mla_work;
  if (latent) {
    // The projections (mla_layer.cc), then the attention. The tensor-parallel regions stay a
    // dense layer's two: with sequence parallelism MLA gathers the latents and the rotary key
    // (q_lora_rank + kv_lora_rank + qk_rope_head_dim wide) where a dense layer gathers its
    // input (hidden wide), counted as the dense layer's gather; the down-projections' weight
    // gradients, reduced over tp once a step, are not counted.
    mla_work = mla_attention_work(m, tokens, tp, options);
    fw.gemms.insert(fw.gemms.end(), mla_work.gemms.begin(), mla_work.gemms.end());
    attention(causal);
    weights_per_gpu = mla_work.weights_per_gpu;
    elements += mla_work.elements;
    layer_kernels += mla_work.kernels;
  } else {
    fw.gemms.push_back({tokens, (hq + 2 * hkv) / t, h});  // Q, K, V
    attention(causal);
    fw.gemms.push_back({tokens, h, hq / t});              // output projection
    weights_per_gpu = (h * (hq + 2 * hkv) + hq * h) / t;
  }
  int moe_host_only_ops = 0;             // the MoE layer's host bookkeeping beside its launches
  int tp_regions = 2;                    // attention and MLP: an all-reduce (or gather and scatter) each
  if (unit.moe) {
    MoeWork moe = moe_mlp_work(m, tokens, tp, options);
    fw.gemms.insert(fw.gemms.end(), moe.gemms.begin(), moe.gemms.end());
    weights_per_gpu += moe.weights_per_gpu;
    elements += moe.elements;
    layer_kernels += moe.kernels;
    moe_host_only_ops = moe.host_ops - moe.kernels;
    tp_regions = tp_regions - 1 + moe.tp_regions;
    fw.ep_dispatch = {.count = moe.dispatches, .token_bytes = moe.token_bytes, .moe = m.moe,
                      .dispatcher = options.moe_dispatcher};
    fw.etp_collective_bytes = moe.etp_collective_bytes;
    fw.after_host_wait = moe.after_host_wait;
    w.moe_forward = {.gemms = moe.gemms, .weight_bytes = moe.weights_per_gpu * gemm_bytes,
                     .memory_bytes = moe.elements * bytes, .kernels = moe.kernels, .host_ops = moe.host_ops};
    w.moe_backward = backward_of(w.moe_forward, m.dtype);
  } else {
    fw.gemms.push_back({tokens, (swiglu ? 2 : 1) * f / t, h});  // up (and gate)
    fw.gemms.push_back({tokens, h, f / t});                     // down
    weights_per_gpu += (swiglu ? 3 : 2) * h * f / t;
    elements += (swiglu ? 1.5 : 1) * st.activation_elements * tokens * f / t;
  }
  if (options.cp > 1) {
    // Ring attention: cp - 1 steps, each with another rank's chunk of keys and values (s / cp
    // tokens of both; at the queries' width where the stack repeats them before the kernel).
    fw.cp_ring_steps = options.cp - 1;
    const double chunk_bytes = latent ? tokens * mla_work.kv_bytes_per_token : 2 * b * s_local * kernel_kv_width / t * bytes;
    (st.cp_gathers_kv ? fw.cp_gather_chunk_bytes : fw.cp_ring_step_bytes) = chunk_bytes;
    if (st.cp_gathers_kv) {
      const RingMergeWork merge = ring_merge_forward(options.cp, tokens * hq / t, tokens * kernel_kv_width / t, bytes);
      fw.cp_merge_bytes = merge.bytes;
      fw.cp_merge_kernels = merge.kernels;
    }
  }
  // Rotary on Q and K (MLA: mla_attention_work counted its own).
  if (m.family == ModelFamily::kLlama && !latent) elements += st.rotary_elements * tokens * (hq + hkv) / t;
  if (st.repeats_kv && hkv < hq && !latent) elements += 2 * tokens * hq / t;
  if (unit.cross_attention) {
    fw.gemms.push_back({tokens, h / t, h});           // queries
    fw.gemms.push_back({tokens, 2 * hkv / t, h});  // keys and values of the encoder's output
    attention(false);
    fw.gemms.push_back({tokens, h, h / t});
    weights_per_gpu += (2 * h * h + 2 * h * hkv) / t;
    elements += 8 * tokens * h / sp;
    layer_kernels += 6;
  }
  if (is_quantized(m.dtype)) {
    // Each GEMM input is cast to fp8 (read 2 bytes, write 1: 1.5 elements) before it runs.
    // MXFP8's and NVFP4's block scales cost their GEMMs, not this traffic: the GPU data's
    // efficiency of each. ASSUMPTION: NVFP4's casts (2 bytes read, 0.56 written, with the
    // Hadamard transform of the weight gradients' inputs fused in) move what fp8's do.
    if (latent) elements += mla_work.fp8_cast_elements + 1.5 * tokens * (h + (unit.moe ? 0 : f / t));  // and the MLP's
    else elements += 1.5 * tokens * (2 * h + hq / t + (unit.moe ? 0 : f / t));  // MoE: moe_mlp_work casts its own
    layer_kernels += 4;
  }
  fw.weight_bytes = weights_per_gpu * gemm_bytes;
  fw.tp_collectives = tp > 1 ? tp_regions + (unit.cross_attention ? 1 : 0) : 0;
  fw.tp_collective_bytes = tokens * h * bytes;
  // An all-gather in float8 and a reduce-scatter in bf16 move what an all-reduce of 3/4 the
  // bytes does (each half a ring).
  const bool fp8_gathers = st.fp8_tp_all_gather && m.dtype == "fp8" && options.sequence_parallel;
  const double gather_bytes = fp8_gathers ? gemm_input_bytes(m.dtype) : bytes;
  fw.tp_collective_bytes *= (gather_bytes + bytes) / (2 * bytes);
  if (eager) {
    // The profiler's ops as its code runs them (libtorch_layer.h); the attention's own kernels
    // and unfused scores stay as attention() counted them, doubled backward.
    const EagerLayerCount count = libtorch_transformer_count(m, unit, tp, mbs);
    const double attention_bytes = fw.memory_bytes;
    fw.kernels = attention_kernels + count.forward.kernels;
    fw.host_ops = count.forward.host_ops;
    fw.memory_bytes += count.forward.elements * bytes;
    w.backward = backward_of(fw, m.dtype);
    w.backward.kernels = 2 * attention_kernels + count.backward.kernels;
    w.backward.host_ops = count.backward.host_ops;
    w.backward.memory_bytes = 2 * attention_bytes + count.backward.elements * bytes;
  } else {
    fw.kernels = attention_kernels + layer_kernels;
    fw.memory_bytes += elements * bytes;
    fw.host_ops = fw.kernels + moe_host_only_ops;
    w.backward = backward_of(fw, m.dtype);
  }
  w.backward.tp_collectives = fw.tp_collectives;  // the inputs' gradients, once per region
  w.backward.tp_collective_bytes = fw.tp_collective_bytes;
  // Each region's input gradient sums its projections' (q, k, v; w1, w3) before the
  // reduce-scatter: torchtitan's async tp leaves it exposed, the reduce-scatter's share of the pair.
  if (st.micro_pipelined_tp && options.sequence_parallel) w.backward.tp_unhidden_share = bytes / (gather_bytes + bytes);
  // Backward, the ring passes the keys' and values' gradients beside them; the experts'
  // all-to-alls carry the tokens' gradients back the way they came.
  w.backward.cp_ring_steps = fw.cp_ring_steps;
  w.backward.cp_ring_step_bytes = 2 * fw.cp_ring_step_bytes;
  if (st.cp_gathers_kv && options.cp > 1) {
    w.backward.cp_gather_chunk_bytes = fw.cp_gather_chunk_bytes;
    w.backward.cp_ring_step_bytes = fw.cp_gather_chunk_bytes * 4 / bytes;  // the gradients in fp32
    const RingMergeWork merge = ring_merge_backward(options.cp, tokens * hq / t, tokens * kernel_kv_width / t, bytes);
    w.backward.cp_merge_bytes = merge.bytes;
    w.backward.cp_merge_kernels = merge.kernels;
  }
  w.backward.ep_dispatch = fw.ep_dispatch;
  w.backward.etp_collective_bytes = fw.etp_collective_bytes;
  if (options.execution.cuda_graphs && options.stack == Stack::kMegatron)
    for (PassWork* pass : {&w.forward, &w.backward, &w.moe_forward, &w.moe_backward}) pass->graphed = true;
  return w;
}

bool Gemm::aligned(double element_bytes) const {
  const double elements = 16 / element_bytes;
  return std::fmod(n, elements) == 0 && std::fmod(k_is_rows ? m : k, elements) == 0;
}

double gemm_efficiency(const Gemm& g, const PrecisionEfficiency& e, double element_bytes) {
  double share = e.gemm_peak_share;
  if (element_bytes > 0 && !g.aligned(element_bytes)) share *= e.gemm_unaligned_share;
  if (e.gemm_half_dim > 0)
    for (double d : {g.m, g.n, g.k}) share *= d / (d + e.gemm_half_dim);
  return share;
}

double gemm_time_s(const Gemm& g, const GpuSpec& gpu, const std::string& precision, double weight_bytes) {
  const PrecisionEfficiency& e = gpu.efficiency(precision);
  double compute = g.flops() / (peak_flops(gpu, precision, gpu.name) * gemm_efficiency(g, e, gemm_input_bytes(precision)));
  return std::max(compute, weight_bytes / (gpu.memory_bandwidth_bytes_per_s * e.memory_share));
}

PassTime pass_time(const PassWork& work, int tp, const NodeType& node, const std::string& dtype,
                   const LayerOptions& options) {
  const GpuSpec& gpu = node.gpu_data;
  const std::string other = non_gemm_precision(dtype);
  const std::string& gemm_dtype = work.high_precision_gemms ? other : dtype;
  const PrecisionEfficiency &ge = gpu.efficiency(gemm_dtype), &oe = gpu.efficiency(other);
  const double gemm_peak = peak_flops(gpu, gemm_dtype, node.name), other_peak = peak_flops(gpu, other, node.name);
  // The GEMMs' FLOPs at their shapes' shares of the peak, then element-wise traffic and launch
  // gaps added: for the whole pass and for the part after a host wait alike.
  auto gemms_s = [&](const std::vector<Gemm>& gemms) {
    double seconds = 0;
    for (const Gemm& g : gemms) seconds += g.flops() / (gemm_peak * gemm_efficiency(g, ge, gemm_input_bytes(gemm_dtype)));
    return seconds;
  };
  auto plus_elementwise_s = [&](double seconds, double memory_bytes, int kernels) {
    return seconds + memory_bytes / (gpu.memory_bandwidth_bytes_per_s * oe.memory_share) + kernels * gpu.launch.kernel_gap_s;
  };
  const double gemm_s = std::max(gemms_s(work.gemms), work.weight_bytes / (gpu.memory_bandwidth_bytes_per_s * ge.memory_share));
  PassTime t;
  t.gpu_s = plus_elementwise_s(gemm_s, work.memory_bytes + work.cp_merge_bytes, work.kernels + work.cp_merge_kernels);
  const double attention_gpu_s = work.attention_flops > 0 ? attention_s(work, options.stack, oe, other_peak) : 0;
  t.gpu_s += attention_gpu_s;
  // fasop-cpp's profiler times one GPU's shard alone: it launches no collectives.
  const int collective_ops = options.stack == Stack::kLibtorch ? 0 : 2 * work.tp_collectives;
  const double dispatch_s = gpu.launch.dispatch_s_of(dispatch_stack_name(options.stack));
  t.host_s = (work.graphed ? kGraphReplayHostOps : work.host_ops + work.cp_merge_kernels + collective_ops) * dispatch_s;
  double compute_s = std::max(t.gpu_s, t.host_s);
  const HostWaitTail& tail = work.after_host_wait;
  if (tail.waits > 0 && !work.graphed) {
    // The host launches the tail only once the GPU has run what precedes it: the GPU's work
    // before the wait and the host's after it add up (the host's work before the wait still
    // runs ahead, under the previous layer's tail).
    const double tail_gpu_s = plus_elementwise_s(gemms_s(tail.gemms), tail.memory_bytes, tail.kernels);
    compute_s = std::max(compute_s, std::max(0.0, t.gpu_s - tail_gpu_s) + tail.host_ops * dispatch_s);
  }
  double comm_s = 0;
  if (work.tp_collectives > 0 && tp > 1) {
    // Within a node (or an NVLink domain of nodes) the ring runs on NVLink; a tp group larger
    // crosses the network, whose bandwidth the node's GPUs share.
    comm_s = work.tp_collectives * group_link(node, tp).ring_allreduce_s(work.tp_collective_bytes, tp);
  }
  if (options.execution.tp_comm_overlap) {
    const double hidden = std::min(comm_s * (1 - work.tp_unhidden_share), gemm_s);
    t.tp_comm_s = comm_s - hidden + gpu.overlap_slowdown * hidden;
  } else {
    t.tp_comm_s = comm_s;
  }
  if (work.cp_ring_steps > 0) {
    // Each ring step's send runs beside the attention of the chunk in hand, an all-gather of
    // the chunks beside the first of the cp sub-attentions: only what the attention cannot hide
    // is exposed (and the hidden part slows it, as overlapped tp does).
    const double gather_s = cp_gather_s(work, tp, options.cp, node), ring_s = cp_ring_s(work, tp, options.cp, node);
    const double gather_hidden_s = std::min(gather_s, attention_gpu_s / options.cp);
    const double hidden = gather_hidden_s + std::min(ring_s, attention_gpu_s - gather_hidden_s);
    t.cp_comm_s = gather_s + ring_s - hidden + gpu.overlap_slowdown * hidden;
  }
  // Megatron-LM's all-to-all dispatcher waits for its tokens: exposed.
  t.ep_comm_s = ep_comm_s(work, options.ep, options.etp, node);
  t.seconds = compute_s + t.tp_comm_s + t.cp_comm_s + t.ep_comm_s;
  return t;
}

double cp_ring_s(const PassWork& work, int tp, int cp, const NodeType& node) {
  if (work.cp_ring_steps <= 0 || work.cp_ring_step_bytes <= 0) return 0;
  // A ring lane's cp GPUs lie tp apart (tp fastest in rank order): inside a node while tp x cp
  // (or its NVLink domain) fits in one, else each step crosses the network, which the node's
  // GPUs share.
  return work.cp_ring_steps * group_link(node, tp * cp).collective_seconds(work.cp_ring_step_bytes);
}

double cp_gather_s(const PassWork& work, int tp, int cp, const NodeType& node) {
  if (work.cp_ring_steps <= 0 || work.cp_gather_chunk_bytes <= 0) return 0;
  // NCCL's ring all-gather: each rank receives the cp - 1 other chunks over the same link.
  return work.cp_ring_steps * group_link(node, tp * cp).collective_seconds(work.cp_gather_chunk_bytes);
}

double ep_comm_s(const PassWork& work, int ep, int etp, const NodeType& node) {
  const Link nvlink = nvlink_of(node);
  double seconds = 0;
  const EpDispatchWork& dispatch = work.ep_dispatch;
  if (dispatch.count > 0 && ep > 1) {
    // An expert group's ep GPUs lie etp apart (MoE parallel folding: etp fastest): the peers on
    // a GPU's own node (or NVLink domain: a group that fits in one is placed in one) are
    // reached over its NVLink ports, the rest over the network at its GPU's share of the
    // node's bandwidth, both at once, with the copies the dispatcher sends each way. The
    // dispatcher posts every peer's send at once, so a link runs at the share of all it
    // carries, not of one peer's part.
    const int on_node = std::max(1, std::min(ep, node.nvlink_gpus() / etp));
    const DispatchCopies copies = dispatch_copies(dispatch.moe, dispatch.dispatcher, ep, on_node);
    const double nvlink_bytes = copies.nvlink * dispatch.token_bytes, network_bytes = copies.network * dispatch.token_bytes;
    const Link network = dispatch_link(network_of(node, node.gpus_per_node), dispatch.dispatcher, true);
    const Link domain = dispatch_link(nvlink, dispatch.dispatcher, false);
    const double latency_s = ep > on_node ? network.latency_s : nvlink.latency_s;
    seconds += dispatch.count * (latency_s + std::max(domain.stream_s(nvlink_bytes), network.stream_s(network_bytes)));
  }
  if (work.etp_collective_bytes > 0 && etp > 1) seconds += nvlink.ring_allreduce_s(work.etp_collective_bytes, etp);
  return seconds;
}

namespace {

/// `t`'s MoE layer split into the combined 1F1B schedule's nodes: the experts' part of each pass
/// (their weight gradients apart) timed alone, the attention's the rest, each dispatch and
/// combine half of its pass's dispatch seconds.
CombinedLayer combined_layer(const LayerWork& work, const LayerTime& t, int tp, const NodeType& node,
                             const std::string& dtype, const LayerOptions& options) {
  const PassTime mlp_fwd = pass_time(work.moe_forward, tp, node, dtype, options);
  const PassTime mlp_bwd = pass_time(work.moe_backward, tp, node, dtype, options);
  PassWork weight_grads{.backward = true};
  double all_gemms = 0, weight_gemms = 0;
  for (const Gemm& g : work.moe_backward.gemms) {
    all_gemms += g.count;
    if (!g.k_is_rows) continue;
    weight_grads.gemms.push_back(g);
    weight_gemms += g.count;
  }
  const ScheduleNode dw{.gpu_s = pass_time(weight_grads, tp, node, dtype, options).gpu_s,
                        .host_s = mlp_bwd.host_s * weight_gemms / all_gemms};
  auto rest = [](const PassTime& pass, const PassTime& part) {
    return ScheduleNode{.gpu_s = std::max(0.0, pass.gpu_s - part.gpu_s), .host_s = std::max(0.0, pass.host_s - part.host_s)};
  };
  return {.attention_fwd = rest(t.forward, mlp_fwd),
          .mlp_fwd = {.gpu_s = mlp_fwd.gpu_s, .host_s = mlp_fwd.host_s},
          .mlp_bwd = {.gpu_s = mlp_bwd.gpu_s - dw.gpu_s, .host_s = mlp_bwd.host_s - dw.host_s},
          .mlp_bwd_dw = dw,
          .attention_bwd = rest(t.backward, mlp_bwd),
          .dispatch_fwd_s = t.forward.ep_comm_s / 2,
          .combine_fwd_s = t.forward.ep_comm_s / 2,
          .dispatch_bwd_s = t.backward.ep_comm_s / 2,
          .combine_bwd_s = t.backward.ep_comm_s / 2,
          .host_waits = work.forward.after_host_wait.waits > 0};
}

}  // namespace

LayerTime layer_time(const ModelSpec& model, const LayerUnit& unit, int tp, int mbs, const NodeType& node,
                     const LayerOptions& options) {
  LayerWork work = layer_work(model, unit, tp, mbs, options);
  LayerTime t{pass_time(work.forward, tp, node, model.dtype, options), pass_time(work.backward, tp, node, model.dtype, options)};
  if (options.execution.overlap_moe_expert_parallel_comm) {
    const double slowdown = node.gpu_data.overlap_slowdown;
    if (work.moe_forward.gemms.empty()) overlap_ep_comm(t, slowdown);
    else overlap_ep_comm(t, combined_layer_s(combined_layer(work, t, tp, node, model.dtype, options)), slowdown);
  }
  return t;
}

ProfileSpec analytic_profile(const ModelSpec& model, const NodeType& node, const std::vector<int>& tps,
                             const std::vector<int>& micro_batches, const LayerOptions& options) {
  ProfileSpec profile;
  profile.model = model.name;
  profile.gpu = node.gpu;
  profile.source = "analytic model of " + model.name + " on " + node.gpu + " (node type " + node.name + ")";
  for (const LayerUnit& unit : model.units)
    for (int tp : tps)
      for (int mbs : micro_batches) {
        if (profile.has(unit.type, tp) && profile.forward_s[unit.type][tp].count(mbs)) continue;
        LayerTime t = layer_time(model, unit, tp, mbs, node, options);
        profile.forward_s[unit.type][tp][mbs] = t.forward.seconds;
        profile.backward_s[unit.type][tp][mbs] = t.backward.seconds;
        profile.layer_comm_s[unit.type][tp][mbs] = t.layer_comm_s();
      }
  return profile;
}

double calibrated_efficiency(const ModelSpec& model, const NodeType& node, const ProfileSpec& measured,
                             const LayerOptions& options) {
  // The squared log error is unimodal in the share: golden-section search on [0.01, 1].
  NodeType trial = node;
  auto error = [&](double share) {
    for (auto& [name, efficiency] : trial.gpu_data.precisions) efficiency.gemm_peak_share = share;
    double sum = 0;
    for (const LayerUnit& unit : model.units) {
      auto layer = measured.forward_s.find(unit.type);
      if (layer == measured.forward_s.end()) continue;
      for (const auto& [tp, points] : layer->second)
        for (const auto& [mbs, seconds] : points) {
          double d = std::log(layer_time(model, unit, tp, mbs, trial, options).forward.seconds / seconds);
          sum += d * d;
        }
    }
    return sum;
  };
  const double ratio = (std::sqrt(5.0) - 1) / 2;
  double lo = 0.01, hi = 1.0;
  for (int i = 0; i < 80; ++i) {
    double a = hi - ratio * (hi - lo), b = lo + ratio * (hi - lo);
    if (error(a) < error(b)) hi = b;
    else lo = a;
  }
  return (lo + hi) / 2;
}

}  // namespace fasop
