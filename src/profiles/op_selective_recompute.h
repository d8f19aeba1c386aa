#pragma once
// torchtitan's per-op selective activation checkpointing (its "selective op" mode): what a
// block's backward pass runs again. Its policy saves the outputs of attention and of every other
// matmul of the block, counted in forward order, and recomputes the rest: the other matmuls and
// every element-wise op (torchtitan/models/llama*/parallelize.py, _custom_policy).
#include "profiles/analytic_profile.h"
#include "specs/model_spec.h"

namespace fasop {

/// The recomputed matmuls' FLOPs over the model's forward FLOPs (model_flops.h, at tp 1). A dense
/// Llama block's matmuls run wq, wk, wv, wo, w1, w3, w2: the second, fourth and sixth (wk, wo,
/// w3) are recomputed. A MoE block's experts run grouped matmuls, which the policy saves: its
/// attention's wk and wo alone.
double op_selective_gemm_share(const ModelSpec& model);

/// The forward element-wise work of transformer unit `unit` (layer_work's, without its matmuls
/// and attention) that the backward pass runs again; nothing for other units.
PassWork op_selective_elementwise_work(const ModelSpec& model, const LayerUnit& unit, int tp, int mbs,
                                       const LayerOptions& options);

}  // namespace fasop
