#include "profiles/libtorch_layer.h"

#include <algorithm>

namespace fasop {
namespace {

/// Kernels that broadcast an operand or copy through strides (RMSNorm's multiplies by the
/// [T, 1] scale and the [h] weight, repeat_interleave, narrow's backward copies, reductions
/// across rows) run PyTorch's non-vectorised elementwise_kernel<128, 4> at about half the rate
/// of contiguous ones: on the H100 trace, 134 MB in 0.095 ms (1.4 TB/s) against 3.1 TB/s for the
/// residual adds and SwiGLU's multiply. Their bytes count twice.
constexpr double kStridedKernelCost = 2;

/// Adds `n` kernels moving `elements` (backward: autograd launches them; its host ops are
/// counted apart).
void launch(EagerCount& c, int n, double elements) {
  c.kernels += n;
  c.elements += elements;
}

/// Adds `n` forward kernels, each its own host op, moving `elements`.
void add(EagerCount& c, int n, double elements) {
  launch(c, n, elements);
  c.host_ops += n;
}

struct Widths {
  double hidden, q_width, kv_width, ffn_width;  ///< per token: h, and the shard's h / tp, kv heads x d, ffn / tp
  double tokens_h;  ///< T x h: a replicated activation
  double q;         ///< T x h / tp: the local heads' width
  double kv;        ///< T x local key/value heads x head dimension
  double f;         ///< T x ffn / tp
  bool grouped;     ///< key/value heads fewer than the local query heads (repeated)
  bool rms;
  bool swiglu;
};

Widths widths(const ModelSpec& m, int tp, int mbs) {
  const double tokens = double(mbs) * m.sequence, head_dim = double(m.hidden) / m.heads;
  const int local_heads = m.heads / tp, local_kv = std::max(1, m.kv_heads / tp);
  const double q = local_heads * head_dim, kv = local_kv * head_dim, f = m.ffn_hidden / tp;
  return {double(m.hidden), q, kv, f, tokens * m.hidden, tokens * q, tokens * kv, tokens * f,
          local_kv < local_heads, m.norm == Norm::kRmsNorm, is_gated(m.activation)};
}

/// A norm's forward: LayerNorm reads and writes its input; RMSNorm squares it (read, write),
/// takes the mean (read), adds epsilon and takes rsqrt on [T, 1], and multiplies by that and by
/// the weight, both broadcast.
void norm_forward(EagerCount& c, const Widths& w) {
  if (!w.rms) return add(c, 1, 2 * w.tokens_h);
  add(c, 4, 3 * w.tokens_h);
  add(c, 2, 2 * 2 * w.tokens_h * kStridedKernelCost);
}

/// A norm's backward. LayerNorm: the input's gradient (read dy and x, write dx) and the
/// weight's and bias's (a reduction across rows). RMSNorm: for each broadcast multiply, the
/// other operand's gradient broadcast (strided) and the broadcast one's as a multiply and a
/// reduction; pow's gradient (2 x, then times the expanded gradient, broadcast); rsqrt's and the
/// mean's on [T, 1].
void norm_backward(EagerCount& c, const Widths& w) {
  const double th = w.tokens_h;
  if (!w.rms) {
    launch(c, 1, 3 * th);
    launch(c, 1, 2 * th * kStridedKernelCost);
    return;
  }
  launch(c, 2, 2 * 2 * th * kStridedKernelCost);  // g * w, ga * r
  launch(c, 2, 2 * 3 * th);                       // g * a, ga * x
  launch(c, 2, 2 * th * kStridedKernelCost);      // the two reductions
  launch(c, 1, 2 * th);                           // 2 x
  launch(c, 1, 2 * th * kStridedKernelCost);      // times the mean's expanded gradient
  launch(c, 1, 3 * th);
  launch(c, 2, 0);                                // rsqrt's and the mean's gradients on [T, 1]
}

}  // namespace

EagerLayerCount libtorch_transformer_count(const ModelSpec& m, const LayerUnit& unit, int tp, int mbs) {
  const Widths w = widths(m, tp, mbs);
  const int attentions = unit.cross_attention ? 2 : 1;
  const int norm_calls = 1 + attentions;  // the cross-attention reuses the first norm
  const int norm_modules = 2, norm_params = norm_modules * (w.rms ? 1 : 2);
  const double qkv = w.q + 2 * w.kv;
  const double weights = attentions * w.hidden * (2 * w.q_width + 2 * w.kv_width) +  // QKV and output
                         (w.swiglu ? 3 : 2) * w.hidden * w.ffn_width;
  EagerLayerCount n;
  EagerCount& fw = n.forward;
  EagerCount& bw = n.backward;
  for (int i = 0; i < norm_calls; ++i) norm_forward(fw, w);
  for (int i = 0; i < attentions; ++i) {
    add(fw, 2, 0);       // QKV and output GEMMs
    fw.host_ops += 9;    // narrow, view and transpose of q, k and v
    if (w.grouped) add(fw, 2, 2 * 2 * w.q * kStridedKernelCost);  // k and v repeated to the heads
    fw.host_ops += 1;    // attention (its kernels are the analytic model's, fused or not)
    fw.host_ops += 2;    // its output transposed and reshaped: a view of its [b, s, heads, d] layout
    add(fw, 1, 3 * w.tokens_h);  // residual add
  }
  add(fw, w.swiglu ? 3 : 2, 0);  // MLP GEMMs
  if (w.swiglu) add(fw, 2, 2 * w.f + 3 * w.f);  // silu, times the up projection
  else add(fw, 1, 2 * w.f);                     // gelu
  add(fw, 1, 3 * w.tokens_h);                   // residual add

  // Backward: each GEMM's data and weight gradients.
  launch(bw, 2 * (attentions * 2 + (w.swiglu ? 3 : 2)), 0);
  for (int i = 0; i < norm_calls; ++i) norm_backward(bw, w);
  for (int i = 0; i < attentions; ++i) {
    launch(bw, 0, 2 * w.q);  // the fused backward's dO . O pre-pass reads both (a kernel of the attention's)
    if (w.grouped) launch(bw, 2, 2 * (w.q + w.kv) * kStridedKernelCost);  // repeats summed
    // narrow's backward: each of q, k, v's gradients zero-filled to the QKV output's width,
    // its slice copied in, and the three summed.
    launch(bw, 3 + 3 + 2, 3 * qkv + 2 * qkv * kStridedKernelCost + 2 * 3 * qkv);
  }
  // Gradients of tensors used twice are summed: each norm's input (also the residual; RMSNorm
  // reads it twice itself) and SwiGLU's input (gate and up).
  const int input_sums = norm_calls * (w.rms ? 2 : 1) + (w.swiglu ? 1 : 0);
  launch(bw, input_sums, input_sums * 3 * w.tokens_h);
  if (w.swiglu) launch(bw, 3, 3 * w.f + 2 * 3 * w.f);  // silu's backward, the product's two
  else launch(bw, 1, 3 * w.f);                          // gelu's backward
  // Each weight's gradient is added to the one already there (read both, write).
  const int params = norm_params + attentions * 2 + (w.swiglu ? 3 : 2);
  launch(bw, params, 3 * weights);
  // Autograd runs about two ops for each the forward pass recorded (its kernels launch from them).
  bw.host_ops = 2 * fw.host_ops;
  return n;
}

int libtorch_small_unit_host_ops(const ModelSpec& m, LayerRole role) {
  // torch::embedding dispatches index_select and a reshape under it.
  if (role == LayerRole::kEmbedding) return 3;
  // Norm, matmul, view, .to(fp32), randint; cross_entropy dispatches log_softmax and nll_loss.
  const int norm = m.norm == Norm::kRmsNorm ? 6 : 1;
  return norm + 4 + 3;
}

}  // namespace fasop
