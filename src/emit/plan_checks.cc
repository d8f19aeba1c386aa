#include "emit/plan_checks.h"

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

}  // namespace fasop
