#include "profiles/analytic_profile.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "specs/spec_error.h"

namespace fasop {
namespace {

// Estimates, not measurements: launch overhead of the ~20 kernels of a transformer layer's
// forward pass, and of the few of an embedding or a head.
constexpr double kLayerOverheadS = 60e-6;
constexpr double kSmallUnitOverheadS = 15e-6;

double bytes_per_element(const std::string& dtype) {
  if (dtype == "fp32") return 4;
  if (dtype == "fp8") return 1;
  return 2;
}

}  // namespace

LayerWork forward_work(const ModelSpec& m, const LayerUnit& unit, int tp, int mbs) {
  const double b = mbs, s = m.sequence, h = m.hidden, f = m.ffn_hidden, v = m.vocab, t = tp;
  const double kv_share = double(m.kv_heads) / m.heads;  // key/value width relative to hidden
  const double bytes = bytes_per_element(m.dtype);
  const double tokens = b * s;
  LayerWork w;
  w.tp = tp;
  switch (unit.role) {
    case LayerRole::kEmbedding:
      // A gather: read the rows, write the activations (and positions where learned).
      w.memory_bytes = 3 * tokens * h * bytes;
      w.kernel_overhead_s = kSmallUnitOverheadS;
      w.allreduces = tp > 1 ? 1 : 0;  // vocabulary-parallel lookup
      w.allreduce_bytes = tokens * h * bytes;
      break;
    case LayerRole::kPostProcess:
      // Final norm, the output head's GEMM over the vocabulary shard, softmax and loss.
      w.gemm_flops = 2 * tokens * h * v / t;
      w.gemm_calls = 1;
      w.weight_bytes = h * v / t * bytes;
      w.memory_bytes = (4 * tokens * h + 3 * tokens * v / t) * bytes;
      w.kernel_overhead_s = kSmallUnitOverheadS;
      break;
    case LayerRole::kTransformer: {
      double qkv = 2 * tokens * h * (h + 2 * h * kv_share);
      double scores = 2 * 2 * tokens * s * h;  // QK^T and attention x V
      double projection = 2 * tokens * h * h;
      double mlp = (m.activation == Activation::kSwiglu ? 3 : 2) * 2 * tokens * h * f;
      double flops = qkv + scores + projection + mlp;
      double weights = h * (h + 2 * h * kv_share) + h * h + (m.activation == Activation::kSwiglu ? 3 : 2) * h * f;
      // Element-wise traffic, in elements, as Megatron-LM's fused kernels move them: each norm
      // reads and writes its input (2 x 2 sbh); each bias-dropout-add reads the projection and
      // the residual and writes the sum and a one-byte mask (2 x 3.5 sbh); bias-GeLU (or SwiGLU's
      // product) reads and writes the MLP's width (2 sbf/t). Fused attention (FlashAttention,
      // as training and the profiler run it) keeps the score matrix on chip: no traffic for it.
      double elementwise = 11 * tokens * h + 2 * tokens * f / t;
      // Unfused attention (Megatron-LM 2021) writes the heads/t x s x s scores of each sample and
      // reads them back: QK^T writes them, the fused scale-mask-softmax reads and writes them,
      // dropout reads them and writes them and a one-byte mask, attention x V reads them: 6.5
      // passes of 2-byte elements.
      const double score_elements = b * m.heads / t * s * s;
      if (!m.flash_attention) elementwise += 6.5 * score_elements;
      if (unit.cross_attention) {
        flops += 2 * tokens * h * h + 2 * tokens * h * 2 * h * kv_share + scores + projection;
        weights += 2 * h * h + 2 * h * h * kv_share;
        elementwise += 8 * tokens * h + (m.flash_attention ? 0 : 6.5 * score_elements);
      }
      w.gemm_flops = flops / t;
      // QKV, QK^T, x V, the projection, and the MLP's two (SwiGLU: three) matrices; cross
      // attention repeats the attention's five.
      w.gemm_calls = 4 + (m.activation == Activation::kSwiglu ? 3 : 2) + (unit.cross_attention ? 5 : 0);
      w.weight_bytes = weights / t * bytes;
      w.memory_bytes = elementwise * bytes;
      w.kernel_overhead_s = kLayerOverheadS;
      w.allreduces = tp > 1 ? (unit.cross_attention ? 3 : 2) : 0;  // after attention(s) and MLP
      w.allreduce_bytes = tokens * h * bytes;
      break;
    }
  }
  return w;
}

double roofline_time_s(const LayerWork& work, const NodeType& node, const std::string& dtype, double efficiency,
                       const RooflineOptions& options) {
  auto peak = node.peak_tflops.find(dtype);
  if (peak == node.peak_tflops.end() && dtype == "bf16") peak = node.peak_tflops.find("fp16");  // e.g. V100
  if (peak == node.peak_tflops.end())
    throw SpecError("node type '" + node.name + "': field 'peak_tflops." + dtype + "': missing; give the " + node.gpu +
                    "'s dense " + dtype + " TFLOP/s or train the model in a precision it lists");
  double allreduce_s = 0;
  if (work.allreduces > 0 && work.tp > 1) {
    const double t = work.tp;
    // Within a node the ring runs on NVLink; a tp group larger than a node crosses the network,
    // whose bandwidth the node's GPUs share.
    const bool inside = work.tp <= node.gpus_per_node;
    const double latency_s = inside ? node.intra_node_latency_s : node.inter_node_latency_s;
    const double bits_per_s = inside ? node.intra_node_bandwidth_bits_per_s * node.intra_node_collective_efficiency
                                     : node.inter_node_bandwidth_bits_per_s * node.inter_node_collective_efficiency /
                                           node.gpus_per_node;
    allreduce_s = work.allreduces * (2 * (t - 1) * latency_s + 2 * (t - 1) / t * 8 * work.allreduce_bytes / bits_per_s);
  }
  const double bandwidth = node.memory_bandwidth_bytes_per_s * node.memory_efficiency;
  // Each GEMM of F FLOPs at efficiency x F / (F + half): F / (peak x that) = (F + half) / (peak x efficiency).
  const double compute_s = (work.gemm_flops + work.gemm_calls * node.gemm_half_flops) / (peak->second * 1e12 * efficiency);
  const double gemm_s = std::max(compute_s, work.weight_bytes / bandwidth);
  const double exposed_s = options.overlap_tp_comm ? std::max(0.0, allreduce_s - gemm_s) : allreduce_s;
  return gemm_s + work.memory_bytes / bandwidth + work.kernel_overhead_s + exposed_s;
}

ProfileSpec analytic_profile(const ModelSpec& model, const NodeType& node, const std::vector<int>& tps,
                             const std::vector<int>& micro_batches, const RooflineOptions& options) {
  ProfileSpec profile;
  profile.model = model.name;
  profile.gpu = node.gpu;
  profile.source = "analytic roofline of " + model.name + " on " + node.gpu + " (node type " + node.name + ")";
  for (const LayerUnit& unit : model.units)
    for (int tp : tps)
      for (int mbs : micro_batches)
        profile.forward_s[unit.type][tp][mbs] =
            roofline_time_s(forward_work(model, unit, tp, mbs), node, model.dtype, node.compute_efficiency, options);
  return profile;
}

double calibrated_efficiency(const ModelSpec& model, const NodeType& node, const ProfileSpec& measured) {
  // The squared log error is unimodal in the efficiency: golden-section search on [0.01, 1].
  auto error = [&](double efficiency) {
    double sum = 0;
    for (const LayerUnit& unit : model.units) {
      auto layer = measured.forward_s.find(unit.type);
      if (layer == measured.forward_s.end()) continue;
      for (const auto& [tp, points] : layer->second)
        for (const auto& [mbs, seconds] : points) {
          double d = std::log(roofline_time_s(forward_work(model, unit, tp, mbs), node, model.dtype, efficiency) / seconds);
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
