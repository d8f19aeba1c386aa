#include "emit/plan_checks.h"

#include <algorithm>

#include "specs/gpu_spec.h"
#include "specs/parallel_rules.h"
#include "specs/precision.h"
#include "specs/spec_error.h"

namespace fasop {

std::string plan_where(const PlanFile& plan) {
  return plan.source.empty() ? std::string("plan: ") : "plan " + plan.source + ": ";
}

std::vector<int> stage_boundaries(const PlanFile& plan, const ModelSpec& model) {
  if (static_cast<int>(plan.partition.size()) != plan.key.pp)
    throw SpecError(plan_where(plan) + "partition has " + std::to_string(plan.partition.size()) +
                    " stages but pp is " + std::to_string(plan.key.pp) + "; give one unit count per stage");
  std::vector<int> parts{0};
  for (size_t s = 0; s < plan.partition.size(); ++s) {
    if (plan.partition[s] <= 0)
      throw SpecError(plan_where(plan) + "partition stage " + std::to_string(s) + " has " +
                      std::to_string(plan.partition[s]) + " units; every stage needs at least one");
    parts.push_back(parts.back() + plan.partition[s]);
  }
  if (parts.back() != model.num_units())
    throw SpecError(plan_where(plan) + "partition covers " + std::to_string(parts.back()) + " units but model '" +
                    model.name + "' has " + std::to_string(model.num_units()) +
                    "; was the plan saved for another model?");
  return parts;
}

void require_uniform_dp(const PlanFile& plan, const std::string& framework) {
  for (int d : plan.key.stage_dp)
    if (d != plan.key.dp)
      throw SpecError(plan_where(plan) + "stages have different data-parallel degrees (stage_dp); " + framework +
                      " runs dp on every stage alike. Re-plan without per-stage dp");
}

void require_uniform_tp(const PlanFile& plan, const std::string& framework) {
  for (int t : plan.key.stage_tp)
    if (t != plan.key.tp)
      throw SpecError(plan_where(plan) + "stages have different tensor-parallel degrees (stage_tp); " + framework +
                      " runs one tp on every stage (Sailor's own runtime runs such plans). Re-plan without --stage-tp");
}

void require_even_batch(const PlanFile& plan, const std::string& framework) {
  if (plan.key.uneven_dp)
    throw SpecError(plan_where(plan) + "replicas take unequal shares of the global batch (uneven_dp); " + framework +
                    " requires the global batch divisible by micro-batch x dp. Re-plan without --uneven-dp");
}

void require_no_speed_split(const PlanFile& plan, const std::string& framework) {
  if (plan.key.speed_split)
    throw SpecError(plan_where(plan) + "stages split their micro-batch over replicas by speed (speed_split); " +
                    framework + " gives every replica the same share (Metis's own runtime runs such plans). "
                    "Re-plan without --speed-split");
}

void require_one_gpu_per_stage(const PlanFile& plan, const ClusterSpec& cluster, const std::string& framework) {
  const long long stage_ranks = 1LL * plan.key.tp * plan.key.cp * plan.key.dp;
  std::vector<std::vector<std::string>> gpus(plan.key.pp);
  long long rank = 0;  // the node's first rank
  for (const std::string& name : plan.node_order) {
    const int type = cluster.find_node_type(name);
    if (type < 0) continue;  // loading the plan named the unknown type already
    const NodeType& node = cluster.node_types[type];
    const long long first_stage = rank / stage_ranks, last_stage = (rank + node.gpus_per_node - 1) / stage_ranks;
    for (long long s = first_stage; s <= last_stage && s < plan.key.pp; ++s)
      if (std::find(gpus[s].begin(), gpus[s].end(), node.gpu) == gpus[s].end()) gpus[s].push_back(node.gpu);
    rank += node.gpus_per_node;
  }
  for (int s = 0; s < plan.key.pp; ++s)
    if (gpus[s].size() > 1)
      throw SpecError(plan_where(plan) + "pipeline stage " + std::to_string(s) + " runs on " + gpus[s][0] + " and " +
                      gpus[s][1] + " GPUs; " + framework + " runs a stage on one GPU type; re-plan with "
                      "--placements blocks and stages that fit the node types, or on one GPU type");
}

std::string priced_stack_note(const PlanFile& plan, const std::string& stack) {
  const std::string priced = plan.stack.empty() ? "megatron" : plan.stack;
  if (priced == stack) return "";
  return plan_where(plan) + "priced as " + priced + " allocates memory, not as " + stack +
         " does: it may not fit there; search --stack " + stack + " prices it so";
}

int micro_batches_per_step(const PlanFile& plan, const std::string& needed_by) {
  const int per_step = plan.key.mbs * plan.key.dp;
  if (plan.key.mbs <= 0 || plan.key.dp <= 0 || plan.global_batch % per_step != 0)
    throw SpecError(plan_where(plan) + "global_batch " + std::to_string(plan.global_batch) +
                    " is not a multiple of micro_batch x dp (" + std::to_string(per_step) + "), which " + needed_by +
                    "; re-plan with a batch that divides, or fix global_batch or mbs");
  return plan.global_batch / per_step;
}

void require_no_megatron_features(const PlanFile& plan, const std::string& framework) {
  const PlanKey& key = plan.key;
  std::string feature = key.sequence_parallel && key.tp > 1                   ? "sequence parallelism"
                        : key.selective_recompute && !key.recompute           ? "selective recomputation"
                        : key.virtual_stages > 1                               ? "the interleaved schedule"
                                                                               : "";
  if (!feature.empty())
    throw SpecError(plan_where(plan) + "the plan uses " + feature + ", which " + framework +
                    " does not run as the plan was priced; emit it for Megatron-LM (--format megatron), or "
                    "re-plan without it");
}

void require_no_context_or_experts(const PlanFile& plan, const ModelSpec& model, const std::string& framework) {
  const PlanKey& key = plan.key;
  const std::string feature = key.cp > 1    ? "context parallelism (cp " + std::to_string(key.cp) + ")"
                              : key.ep > 1  ? "expert parallelism (ep " + std::to_string(key.ep) + ")"
                              : key.etp > 1 ? "expert tensor parallelism (etp " + std::to_string(key.etp) + ")"
                              : model.moe.enabled() ? "model '" + model.name + "''s mixture of experts"
                              : model.mtp_layers > 0 ? "model '" + model.name + "''s multi-token prediction"
                                                    : "";
  if (!feature.empty())
    throw SpecError(plan_where(plan) + "the plan uses " + feature + ", which " + framework +
                    " does not run as the plan was priced; emit it for Megatron-LM (--format megatron), or "
                    "re-plan without it");
}

void require_megatron_parallel_dims(const PlanFile& plan, const ModelSpec& model) {
  const PlanKey& key = plan.key;
  const std::string where = plan_where(plan);
  auto str = [](long long v) { return std::to_string(v); };
  for (auto [name, value] : {std::pair<const char*, int>{"cp", key.cp}, {"ep", key.ep}, {"etp", key.etp}})
    if (value < 1) throw SpecError(where + name + " is " + str(value) + "; a parallel degree is 1 or more");
  if (!cp_splits_sequence(model, key.cp))
    throw SpecError(where + "cp " + str(key.cp) + " does not split model '" + model.name + "''s sequence of " +
                    str(model.sequence) + " tokens into 2 x cp chunks (Megatron-LM asserts \"seq-length should be a "
                    "multiple of 2 * context-parallel-size\"); set cp so that 2 x cp divides " + str(model.sequence));
  const MoeSpec& moe = model.moe;
  if (!moe.enabled()) {
    if (key.ep > 1 || key.etp > 1)
      throw SpecError(where + (key.ep > 1 ? "ep " + str(key.ep) : "etp " + str(key.etp)) + " on model '" + model.name +
                      "', which has no experts (no 'moe' block); set ep and etp to 1");
    return;
  }
  if (!ep_divides_experts(moe, key.ep))
    throw SpecError(where + "ep " + str(key.ep) + " does not divide model '" + model.name + "''s " + str(moe.experts) +
                    " experts (Megatron-LM asserts \"Number of experts should be a multiple of expert model "
                    "parallel_size\"); set ep to a divisor of " + str(moe.experts));
  const long long stage = key.stage_gpus(0);
  if (!expert_grid_folds(key))
    throw SpecError(where + "ep x etp = " + str(1LL * key.ep * key.etp) + " does not divide a stage's tp x cp x dp = " +
                    str(stage) + " GPUs, over which Megatron-LM lays out its expert groups; set ep and etp so that "
                    "ep x etp divides " + str(stage));
  if (!etp_divides_expert_width(moe, key.etp))
    throw SpecError(where + "etp " + str(key.etp) + " does not divide model '" + model.name + "''s expert width " +
                    str(moe.expert_ffn_hidden) + " (moe.expert_ffn_hidden); set etp to a divisor of it");
  if (!moe_tp_has_sequence_parallel(key))
    throw SpecError(where + "tp " + str(key.tp) + " with model '" + model.name + "''s experts needs sequence_parallel "
                    "(Megatron-LM's MoELayer raises in training when tensor parallelism runs without it); re-plan "
                    "with --fix sp=on, or tp 1");
}

void require_precision_on_gpus(const PlanFile& plan, const ModelSpec& model) {
  if (!is_quantized(model.dtype)) return;
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const GpuSpec* gpu = shipped_gpu_spec(plan.stages[s].gpu);
    if (!gpu) continue;  // data the plan does not say: not checked here
    const std::string stage = "stage " + std::to_string(s) + "'s GPU '" + plan.stages[s].gpu + "'";
    if (gpu->runs_precision(model.dtype)) continue;  // the one rule of which GPUs run which precision
    const std::string whose = plan_where(plan) + "dtype " + model.dtype + " of model '" + model.name + "' on " + stage +
                              ", whose data (" + gpu->source + ") has no ";
    if (model.dtype != "nvfp4" && !gpu->peak_tflops.count("fp8"))
      throw SpecError(whose + "fp8 peak: Transformer Engine's fp8 GEMMs need fp8 tensor cores (Ada, Hopper, Blackwell); "
                      "set the model's dtype to bf16, or plan on GPUs with fp8");
    // The block-scaled formats (MXFP8, NVFP4): Blackwell's tensor cores alone apply their scales.
    const bool fp4 = model.dtype == "nvfp4";
    throw SpecError(whose + (fp4 ? "fp4 peak or nvfp4 entry: NVFP4" : "mxfp8 entry: MXFP8") +
                    " block scaling runs on Blackwell GPUs only (Transformer Engine needs compute capability 10.0); "
                    "set the model's dtype to fp8, or plan on Blackwell GPUs");
  }
}

}  // namespace fasop
