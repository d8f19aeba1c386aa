#include "costmodel/parallel_dims_checks.h"

#include "specs/parallel_rules.h"
#include "specs/spec_error.h"

namespace fasop {
namespace {

std::string str(long long v) { return std::to_string(v); }

/// Why a layout with `flag`'s dimension (`subject`, `plural` for "are") cannot be priced: per-stage
/// degrees, uneven or speed-split batches, or a cluster of several zones; `fix` ends the
/// layouts' message and `zone_fix` the zones'. Empty where it can.
std::string uniform_single_zone_fault(const ClusterSpec& cluster, const PlanKey& key, const std::string& flag,
                                      const std::string& subject, bool plural, const std::string& fix,
                                      const std::string& zone_fix) {
  const std::string is = plural ? " are" : " is";
  if (!key.stage_dp.empty() || !key.stage_tp.empty() || key.uneven_dp || key.speed_split)
    return flag + ": " + subject + is + " priced on uniform layouts only (one tp and dp on every stage, even batches); "
           "drop --stage-dp, --stage-tp, --uneven-dp and --speed-split" + fix;
  if (cluster.multi_zone())
    return flag + ": " + subject + " across zones" + is + " not priced; cluster '" + cluster.name +
           "' has several zones" + zone_fix;
  return "";
}

void validate_expert_parallel(const ModelSpec& model, const ClusterSpec& cluster, const PlanKey& key) {
  const MoeSpec& moe = model.moe;
  if (!moe.enabled()) {
    if (key.ep != 1 || key.etp != 1)
      throw SpecError("--ep/--etp: model '" + model.name + "' has no experts (no 'moe' block); use ep 1 and etp 1");
    return;
  }
  if (std::string fault = expert_layout_fault(model, cluster, key); !fault.empty()) throw SpecError(fault);
  if (!etp_divides_expert_width(moe, key.etp) || (moe.shared_expert_ffn_hidden % key.tp) != 0)
    throw SpecError("--etp: " + str(key.etp) + " does not divide model '" + model.name + "''s expert width " +
                    str(moe.expert_ffn_hidden) + " (or tp its shared expert's " + str(moe.shared_expert_ffn_hidden) +
                    "); choose degrees that divide them");
  if (!moe_tp_has_sequence_parallel(key))
    throw SpecError("--tp: " + str(key.tp) + " on model '" + model.name + "' with experts needs sequence parallelism "
                    "(Megatron-LM asserts it for MoE with tp > 1); pass --sequence-parallel or use tp 1");
}

}  // namespace

std::string context_degree_fault(const ModelSpec& model, int cp) {
  if (cp == 1) return "";
  if (!cp_splits_sequence(model, cp))
    return "--cp: " + str(cp) + " does not split model '" + model.name + "''s sequence of " + str(model.sequence) +
           " tokens into 2 x cp equal chunks (Megatron-LM's load-balanced split); choose a cp with 2 x cp dividing "
           "the sequence";
  if (!model.flash_attention)
    return "--cp: context parallelism runs ring attention in fused (flash) kernels; model '" + model.name +
           "' has unfused attention: use cp 1 or attention: flash";
  // Megatron-Core passes every chunk around the ring whatever the window reads of it (and
  // GPT-OSS's recipes switch to the all-to-all cp for their sinks): not priced.
  if (model.sliding_window.enabled())
    return "--cp: context parallelism with model '" + model.name + "''s sliding-window attention is not priced; use cp 1";
  return "";
}

std::string context_parallel_fault(const ModelSpec& model, const ClusterSpec& cluster, const PlanKey& key) {
  if (key.cp == 1) return "";
  if (std::string fault = context_degree_fault(model, key.cp); !fault.empty()) return fault;
  return uniform_single_zone_fault(cluster, key, "--cp", "context parallelism", false, " or use cp 1", ": use cp 1");
}

std::string expert_degree_fault(const ModelSpec& model, int ep) {
  if (ep_divides_experts(model.moe, ep)) return "";
  return "--ep: " + str(ep) + " does not divide model '" + model.name + "''s " + str(model.moe.experts) +
         " experts; choose an ep that divides them";
}

std::string expert_layout_fault(const ModelSpec& model, const ClusterSpec& cluster, const PlanKey& key) {
  const MoeSpec& moe = model.moe;
  if (!moe.enabled()) return "--ep/--etp: model '" + model.name + "' has no experts (no 'moe' block); use ep 1 and etp 1";
  if (std::string fault = expert_degree_fault(model, key.ep); !fault.empty()) return fault;
  if (!expert_grid_folds(key))
    return "--ep/--etp: ep x etp = " + str(1LL * key.ep * key.etp) + " does not divide a stage's tp x cp x dp = " +
           str(1LL * key.tp * key.cp * key.dp) + " GPUs (Megatron-Core's MoE parallel folding); choose degrees that divide it";
  return uniform_single_zone_fault(cluster, key, "--ep", "mixtures of experts", true, "", "");
}

void validate_parallel_dims(const ModelSpec& model, const ClusterSpec& cluster, const PlanKey& key) {
  for (auto [name, value] : {std::pair{"cp", key.cp}, {"ep", key.ep}, {"etp", key.etp}})
    if (value <= 0) throw SpecError(std::string("--") + name + ": must be positive, got " + str(value));
  if (std::string fault = context_parallel_fault(model, cluster, key); !fault.empty()) throw SpecError(fault);
  validate_expert_parallel(model, cluster, key);
}

void validate_parallel_dims_policy(const ModelSpec& model, const PlanKey& key, const std::string& policy) {
  const bool beyond = key.cp > 1 || key.ep > 1 || key.etp > 1 || model.moe.enabled();
  if (beyond && policy == "fasop")
    throw SpecError("--policy: the fasop policy prices neither context parallelism nor experts (model '" + model.name +
                    "'); use --policy analytic");
  if (model.mtp_layers > 0 && policy == "fasop")
    throw SpecError("--policy: the fasop policy does not price multi-token prediction (model '" + model.name +
                    "''s mtp_layers); use --policy analytic");
  if (model.sliding_window.enabled() && policy == "fasop")
    throw SpecError("--policy: the fasop policy does not price sliding-window attention (model '" + model.name +
                    "''s sliding_window); use --policy analytic");
  if (key.names_recompute_modules() && policy == "fasop")
    throw SpecError("--policy: the fasop policy recomputes attention's core only, not --recompute-modules " +
                    recompute_modules_text(key.recompute_modules) + "; use --policy analytic");
  if (model.mla.enabled() && policy == "fasop")
    throw SpecError("--policy: the fasop policy does not price multi-head latent attention (model '" + model.name +
                    "''s 'mla' block); use --policy analytic");
}

std::string moe_dispatcher_fault(const ModelSpec& model, const ClusterSpec& cluster, const PlanKey& key) {
  const MoeDispatcher dispatcher = key.moe_dispatcher;
  if (dispatcher == MoeDispatcher::kAlltoall) return "";
  const std::string flag = std::string("--moe-dispatcher ") + moe_dispatcher_name(dispatcher) + ": ";
  if (!model.moe.enabled()) return flag + "model '" + model.name + "' has no experts to dispatch to; drop it";
  if (!is_flex(dispatcher)) return "";
  if (key.tp * key.ep <= 1)
    return flag + "Megatron-Core's flex dispatcher needs tp x ep > 1 (it asserts it); use ep > 1 or --moe-dispatcher alltoall";
  if (dispatcher == MoeDispatcher::kDeepep && model.moe.token_drop)
    return flag + "DeepEP does not pad the experts' input to capacity (TransformerConfig refuses "
           "moe_pad_expert_input_to_capacity with it); use hybridep or alltoall, or dropless routing";
  if (dispatcher == MoeDispatcher::kDeepep && key.ep > 8)
    for (const NodeType& type : cluster.node_types)
      if (type.gpus_per_node != 8)
        return flag + "ep " + str(key.ep) + " runs DeepEP's internode kernels, which group ranks by 8 NVLink peers "
               "(NUM_MAX_NVL_PEERS); node type '" + type.name + "' has " + str(type.gpus_per_node) +
               " GPUs: use ep <= 8, hybridep or alltoall";
  return "";
}

std::string cuda_graph_fault(const ModelSpec& model) {
  if (!model.moe.enabled() || model.moe.token_drop) return "";
  return "--cuda-graphs: Megatron-Core captures a MoE layer in a CUDA graph only with token dropping padded to "
         "capacity (\"moe cuda graph is only supported with drop-padding MoE\"); model '" + model.name +
         "' routes dropless: drop --cuda-graphs or set moe.token_drop";
}

std::string ep_overlap_fault(const PlanKey& key) {
  if (key.ep <= 1 || ep_overlap_runs(key)) return "";
  if (key.recompute)
    return "--ep-comm-overlap: Megatron-Core does not run the EP all-to-all overlap with full recomputation "
           "(TransformerConfig asserts it); recompute selectively or not at all, or drop --ep-comm-overlap";
  if (key.recomputed_modules() & kRecomputeMoe)
    return "--ep-comm-overlap: Megatron-Core does not run the EP all-to-all overlap while it recomputes the MoE block "
           "(TransformerConfig asserts it); drop moe from --recompute-modules, or drop --ep-comm-overlap";
  return "--ep-comm-overlap: with pp " + std::to_string(key.pp) + " Megatron-Core runs the EP all-to-all overlap only "
         "under the interleaved schedule (TransformerConfig asserts virtual stages); pass --virtual-stages 2 or more, or drop "
         "--ep-comm-overlap";
}

}  // namespace fasop
