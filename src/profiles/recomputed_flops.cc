#include "profiles/recomputed_flops.h"

#include "profiles/model_flops.h"

namespace fasop {

namespace {

/// The recomputed GEMM FLOPs of one transformer unit's forward pass over one sequence.
double unit_recomputed_flops(const ModelSpec& m, const LayerUnit& unit, RecomputeModules modules) {
  const double s = m.sequence, h = m.hidden, matrices = mlp_matrices(m.activation == Activation::kSwiglu);
  double flops = 0;
  if ((modules & kRecomputeMlaUpProj) && m.mla.enabled()) {
    const MlaSpec& mla = m.mla;
    flops += 2 * s * m.heads * (mla.q_lora_rank * mla.q_head_dim() + mla.kv_lora_rank * double(mla.qk_head_dim + mla.v_head_dim));
  }
  if ((modules & kRecomputeMlp) && !unit.moe) flops += 2 * s * h * matrices * m.ffn_hidden;
  if (unit.moe) {
    const MoeSpec& moe = m.moe;
    const double shared = 2 * s * h * matrices * moe.shared_expert_ffn_hidden;
    if (modules & kRecomputeMoe)
      flops += 2 * s * h * moe.experts + 2 * busiest_expert_tokens(moe, s, 1, 1) * h * matrices * moe.expert_ffn_hidden + shared;
    else if (modules & kRecomputeSharedExperts)
      flops += shared;
  }
  return flops;
}

}  // namespace

double recomputed_gemm_share(const ModelSpec& model, RecomputeModules modules) {
  // Core attention alone (selective's default) repeats no GEMM: no need to sum the model.
  if (!(modules & (kRecomputeMlaUpProj | kRecomputeMlp | kRecomputeMoe | kRecomputeSharedExperts))) return 0;
  const double forward = model_flops_per_step(model, 1) / 3;
  if (forward <= 0) return 0;
  double recomputed = 0;
  for (const LayerUnit& unit : model.units)
    if (unit.role == LayerRole::kTransformer) recomputed += unit_recomputed_flops(model, unit, modules);
  return recomputed / forward;
}

}  // namespace fasop
