#pragma once
// The rules Megatron-LM sets context and expert parallelism, in one place: the cost model's
// checks (costmodel/parallel_dims_checks.h) and the emitters' (emit/plan_checks.h) each say them
// in their own words, but ask these.
#include "specs/model_spec.h"
#include "specs/plan.h"

namespace fasop {

/// Megatron-LM splits each sequence into 2 x cp chunks, rank r taking chunks r and 2cp - 1 - r,
/// so that causal attention's work is even over the ring ("seq-length should be a multiple of
/// 2 * context-parallel-size", where cp > 1).
inline bool cp_splits_sequence(const ModelSpec& model, int cp) { return cp == 1 || model.sequence % (2 * cp) == 0; }

/// ep splits the experts evenly ("Number of experts should be a multiple of expert model
/// parallel_size").
inline bool ep_divides_experts(const MoeSpec& moe, int ep) { return moe.experts % ep == 0; }

/// Megatron-Core's MoE parallel folding lays the ep x etp expert grid over a stage's
/// tp x cp x dp GPUs: it must divide them.
inline bool expert_grid_folds(const PlanKey& key) {
  return (1LL * key.tp * key.cp * key.dp) % (1LL * key.ep * key.etp) == 0;
}

/// etp splits each expert's MLP width.
inline bool etp_divides_expert_width(const MoeSpec& moe, int etp) { return moe.expert_ffn_hidden % etp == 0; }

/// Megatron-LM's MoELayer raises in training where tensor parallelism runs without sequence
/// parallelism.
inline bool moe_tp_has_sequence_parallel(const PlanKey& key) { return key.tp == 1 || key.sequence_parallel; }

/// Megatron-Core's EP all-to-all overlap (--overlap-moe-expert-parallel-comm) runs one
/// micro-batch's forward beside another's backward: TransformerConfig asserts virtual stages
/// where pp > 1, no full recomputation and no recomputation of the whole MoE block (and ep > 1,
/// which a plan without experts' all-to-alls does not need).
inline bool ep_overlap_runs(int pp, int virtual_stages, bool full_recompute, bool recomputes_moe = false) {
  return (pp == 1 || virtual_stages > 1) && !full_recompute && !recomputes_moe;
}
inline bool ep_overlap_runs(const PlanKey& key) {
  return ep_overlap_runs(key.pp, key.virtual_stages, key.recompute, key.recomputed_modules() & kRecomputeMoe);
}

}  // namespace fasop
