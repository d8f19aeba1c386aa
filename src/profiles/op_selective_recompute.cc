#include "profiles/op_selective_recompute.h"

#include <map>
#include <string>

#include "profiles/model_flops.h"

namespace fasop {

namespace {

/// The recomputed matmul FLOPs of one transformer unit's forward pass over one sequence.
double unit_recomputed_flops(const ModelSpec& m, const LayerUnit& unit) {
  const double s = m.sequence, h = m.hidden;
  // wk (h x kv width) and wo (query width x h).
  double flops = 2 * s * h * (m.kv_width() + m.query_width());
  if (!unit.moe && is_gated(m.activation)) flops += 2 * s * h * m.ffn_hidden;  // w3
  // An ungated MLP's two matmuls are the fifth and sixth: its second (w2) is recomputed.
  if (!unit.moe && !is_gated(m.activation)) flops += 2 * s * h * m.ffn_hidden;
  return flops;
}

}  // namespace

double op_selective_gemm_share(const ModelSpec& model) {
  const double forward = model_flops_per_step(model, 1) / 3;
  if (forward <= 0) return 0;
  // Units of one type do the same work (model_flops_per_step's assumption too).
  std::map<std::string, double> type_recomputed;
  double recomputed = 0;
  for (const LayerUnit& unit : model.units) {
    if (unit.role != LayerRole::kTransformer) continue;
    auto [at, added] = type_recomputed.try_emplace(unit.type, 0.0);
    if (added) at->second = unit_recomputed_flops(model, unit);
    recomputed += at->second;
  }
  return recomputed / forward;
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
