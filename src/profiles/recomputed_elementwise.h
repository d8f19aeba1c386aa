#pragma once
// The element-wise modules selective recomputation repeats (Megatron-Core's --recompute-modules
// layernorm and moe_act): their forward work, which a unit's backward pass runs again. Their
// GEMM-free work is no share of the FLOPs (recomputed_flops.h) but traffic and launches, timed
// on each node type's GPU.
#include "profiles/analytic_profile.h"
#include "specs/model_spec.h"
#include "specs/recompute_modules.h"

namespace fasop {

/// The forward work of `modules`' element-wise parts in transformer unit `unit` at micro-batch
/// `mbs`, tensor-parallel degree `tp` and `options`' cp, ep and etp: layernorm's two norms (each
/// reads and writes the layer's 1/tp share of the tokens with sequence parallelism, all of them
/// without) and, in a MoE unit, moe_act's experts' activation (moe_layer.h). Nothing for other
/// modules or units.
PassWork recomputed_elementwise_work(const ModelSpec& model, const LayerUnit& unit, int tp, int mbs,
                                     const LayerOptions& options, RecomputeModules modules);

/// Whether `modules` holds an element-wise module recomputed_elementwise_work prices.
inline bool recomputes_elementwise(RecomputeModules modules) {
  return (modules & (kRecomputeLayernorm | kRecomputeMoeAct)) != 0;
}

}  // namespace fasop
