#pragma once
// The forward work selective recomputation repeats, as a share of the model's forward FLOPs:
// what the cost model adds to a backward pass for Megatron-Core's --recompute-modules.
#include <functional>

#include "specs/model_spec.h"
#include "specs/recompute_modules.h"

namespace fasop {

/// The GEMM FLOPs of `modules`' forward over the model's forward FLOPs (model_flops.h, at tp 1:
/// the share does not change with tp): mla_up_proj's query and key/value up-projections, mlp's
/// dense MLPs, moe's router and experts (at layer_work's busiest-expert tokens) with its shared
/// expert, shared_experts' shared expert. Core attention, moe_act and layernorm add nothing here
/// (the first is priced apart, the other two are element-wise).
double recomputed_gemm_share(const ModelSpec& model, RecomputeModules modules);

/// The sum over the model's transformer units of `unit_flops` (of one sequence's forward pass;
/// once per unit type, whose units do the same work) over the model's forward FLOPs.
double transformer_flops_share(const ModelSpec& model, const std::function<double(const LayerUnit&)>& unit_flops);

}  // namespace fasop
