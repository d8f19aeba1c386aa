#include "profiles/recomputed_elementwise.h"

#include "profiles/moe_layer.h"
#include "specs/precision.h"

namespace fasop {

PassWork recomputed_elementwise_work(const ModelSpec& model, const LayerUnit& unit, int tp, int mbs,
                                     const LayerOptions& options, RecomputeModules modules) {
  PassWork w;
  if (unit.role != LayerRole::kTransformer) return w;
  // The tokens of one tensor-parallel group: its micro-batch's share of each sequence under cp.
  const double tokens = double(mbs) * model.sequence / options.cp;
  const double sp = options.sequence_parallel ? tp : 1;
  double elements = 0;
  if (modules & kRecomputeLayernorm) {
    elements += 2 * 2 * tokens * model.hidden / sp;  // input_layernorm and pre_mlp_layernorm
    w.kernels += 2;
    w.host_ops += 2;
  }
  if ((modules & kRecomputeMoeAct) && unit.moe && model.moe.enabled()) {
    const double expert_tokens = busiest_expert_tokens(model.moe, tokens, tp, options.etp);
    const ExpertActivationWork act = expert_activation_work(model, expert_tokens,
                                                            double(model.moe.expert_ffn_hidden) / options.etp);
    elements += act.elements;
    w.kernels += act.kernels;
    w.host_ops += act.host_ops;
  }
  w.memory_bytes = elements * activation_bytes(model.dtype);
  return w;
}

}  // namespace fasop
