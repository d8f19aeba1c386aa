#include "profiles/op_selective_recompute.h"

#include <algorithm>

#include "profiles/recomputed_flops.h"

namespace fasop {

namespace {

/// The recomputed matmul FLOPs of one transformer unit's forward pass over one sequence.
double unit_recomputed_flops(const ModelSpec& m, const LayerUnit& unit) {
  const double s = m.sequence, h = m.hidden;
  // wk (h x kv width) and wo (query width x h).
  double flops = 2 * s * h * (m.kv_width() + m.query_width());
  // The sixth matmul: a gated MLP's w3, or an ungated MLP's second (w2); h x ffn either way.
  if (!unit.moe) flops += 2 * s * h * m.ffn_hidden;
  return flops;
}

}  // namespace

double op_selective_gemm_share(const ModelSpec& model) {
  return transformer_flops_share(model, [&](const LayerUnit& unit) { return unit_recomputed_flops(model, unit); });
}

PassWork op_selective_elementwise_work(const ModelSpec& model, const LayerUnit& unit, int tp, int mbs,
                                       const LayerOptions& options) {
  PassWork w;
  if (unit.role != LayerRole::kTransformer) return w;
  const PassWork forward = layer_work(model, unit, tp, mbs, options).forward;
  w.memory_bytes = forward.memory_bytes;
  // The launches beside the attention kernel and the GEMMs as layer_work lists them.
  w.kernels = std::max(0, forward.kernels - int(forward.gemms.size()) - 1);
  w.host_ops = w.kernels;
  return w;
}

}  // namespace fasop
