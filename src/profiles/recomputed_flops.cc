#include "profiles/recomputed_flops.h"

#include <map>
#include <string>

#include "profiles/model_flops.h"
#include "profiles/moe_layer.h"

namespace fasop {

namespace {

/// The recomputed GEMM FLOPs of one transformer unit's forward pass over one sequence.
double unit_recomputed_flops(const ModelSpec& m, const LayerUnit& unit, RecomputeModules modules) {
  const double s = m.sequence, h = m.hidden, matrices = mlp_matrices(is_gated(m.activation));
  double flops = 0;
  if ((modules & kRecomputeMlaUpProj) && m.mla.enabled()) {
    const MlaSpec& mla = m.mla;
    flops += 2 * s * m.heads * (mla.q_lora_rank * mla.q_head_dim() + mla.kv_lora_rank * double(mla.qk_head_dim + mla.v_head_dim));
  }
  if ((modules & kRecomputeMlp) && !unit.moe) flops += 2 * s * h * matrices * m.ffn_hidden;
  if (unit.moe && (modules & kRecomputeMoe)) {
    // The whole MoE block: its GEMMs as the layer model counts them (router, experts at the
    // busiest expert's tokens, shared expert).
    for (const Gemm& gemm : moe_mlp_work(m, s, 1, LayerOptions{}).gemms) flops += gemm.flops();
  } else if (unit.moe && (modules & kRecomputeSharedExperts)) {
    flops += 2 * s * h * matrices * m.moe.shared_expert_ffn_hidden;
  }
  return flops;
}

}  // namespace

double recomputed_gemm_share(const ModelSpec& model, RecomputeModules modules) {
  // Core attention alone (selective's default) repeats no GEMM: no need to sum the model.
  if (!(modules & (kRecomputeMlaUpProj | kRecomputeMlp | kRecomputeMoe | kRecomputeSharedExperts))) return 0;
  return transformer_flops_share(model, [&](const LayerUnit& unit) { return unit_recomputed_flops(model, unit, modules); });
}

double transformer_flops_share(const ModelSpec& model, const std::function<double(const LayerUnit&)>& unit_flops) {
  const double forward = model_flops_per_step(model, 1) / 3;
  if (forward <= 0) return 0;
  std::map<std::string, double> type_flops;
  double sum = 0;
  for (const LayerUnit& unit : model.units) {
    if (unit.role != LayerRole::kTransformer) continue;
    auto [at, added] = type_flops.try_emplace(unit.type, 0.0);
    if (added) at->second = unit_flops(unit);
    sum += at->second;
  }
  return sum / forward;
}

}  // namespace fasop
