#include "emit/deepspeed_checks.h"

#include <string>

#include "emit/plan_checks.h"
#include "specs/spec_error.h"

namespace fasop {

int deepspeed_accumulation_steps(const PlanFile& plan) {
  // DeepSpeedConfig._batch_assertion: train_batch_size == micro x gradient_accumulation_steps x dp.
  return micro_batches_per_step(plan, "DeepSpeed asserts (train_batch_size = micro x accumulation x dp)");
}

std::vector<int> deepspeed_stage_boundaries(const PlanFile& plan, const ModelSpec& model) {
  const PlanKey& key = plan.key;
  std::vector<int> parts = stage_boundaries(plan, model);
  require_uniform_dp(plan, "DeepSpeed");
  require_uniform_tp(plan, "DeepSpeed");
  require_even_batch(plan, "DeepSpeed");
  require_no_speed_split(plan, "DeepSpeed");
  require_no_context_or_experts(plan, model, "DeepSpeed");
  require_no_megatron_features(plan, "DeepSpeed");
  deepspeed_accumulation_steps(plan);
  if (key.zero_stage < 0 || key.zero_stage > 3)
    throw SpecError(plan_where(plan) + "ZeRO stage " + std::to_string(key.zero_stage) + " is not 0-3");
  // PipelineEngine.__init__ asserts zero_optimization_stage() < ZeroStageEnum.gradients:
  // "ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism" (deepspeed/runtime/pipe/engine.py).
  // Emitting stage 1 instead would silently change the plan's memory, so refuse.
  if (key.pp > 1 && key.zero_stage >= 2)
    throw SpecError(plan_where(plan) + "ZeRO stage " + std::to_string(key.zero_stage) + " with pp " +
                    std::to_string(key.pp) + ": DeepSpeed's pipeline engine allows ZeRO 0 or 1 only "
                    "(\"ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism\"); re-plan with --zero 1 "
                    "or pp 1");
  return parts;
}

}  // namespace fasop
