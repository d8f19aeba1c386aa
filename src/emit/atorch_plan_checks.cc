#include "emit/atorch_plan_checks.h"

#include <string>

#include "emit/plan_checks.h"
#include "specs/spec_error.h"

namespace fasop {
namespace {

const char* kFramework = "ATorch's auto_accelerate";

/// ZeRO-2 and -3 are FSDP in ATorch: with a pipeline, adjust_wrappers drops FSDP (PiPPy does the
/// data parallelism); with tensor parallelism it keeps FSDP but removes its per-layer units
/// (atorch_wrap_cls: no layer module survives the traced TP graph), so one unit holds the whole
/// model's gradients (ZeRO-2) or gathers all its parameters (ZeRO-3) at once.
void require_zero_fits(const PlanFile& plan) {
  const PlanKey& key = plan.key;
  if (key.zero_stage < 2) return;
  const std::string zero = "zero_stage " + std::to_string(key.zero_stage);
  if (key.pp > 1)
    throw SpecError(plan_where(plan) + zero + " with pp " + std::to_string(key.pp) +
                    ": ATorch's pipeline (mixed_parallel) drops its zero2/fsdp wrappers, so the plan would run "
                    "without ZeRO; re-plan with --fix zero=1 (or pp=1)");
  if (key.tp > 1)
    throw SpecError(plan_where(plan) + zero + " with tp " + std::to_string(key.tp) +
                    ": ATorch's tensor parallelism removes FSDP's per-layer units, so it would hold the whole "
                    "model's gradients or parameters at once, beyond the plan's memory; re-plan with --fix zero=1 "
                    "(or tp=1)");
}

/// ATorch's tensor parallelism leaves no layer module in its traced graph, and adjust_wrappers then
/// removes the checkpoint wrapper; with a pipeline, PiPPy recomputes each stage instead.
void require_recompute_fits(const PlanFile& plan) {
  const PlanKey& key = plan.key;
  if (key.recompute && key.tp > 1 && key.pp == 1)
    throw SpecError(plan_where(plan) + "recompute full with tp " + std::to_string(key.tp) +
                    " and pp 1: ATorch's tensor parallelism removes the checkpoint wrapper, so nothing would be "
                    "recomputed; re-plan with --fix recompute=none, or with pp>1 (its pipeline recomputes stages)");
}

/// ATorch's tensor parallelism shards nn.Linear, nn.Embedding and the attention modules it
/// registers (modules_registry.py); GPT-2's blocks compute with transformers' Conv1D, which it
/// leaves whole on every rank.
void require_shardable_layers(const PlanFile& plan, const ModelSpec& model) {
  if (plan.key.tp > 1 && model.family == ModelFamily::kGpt2)
    throw SpecError(plan_where(plan) + "tp " + std::to_string(plan.key.tp) +
                    " for the gpt2 family: ATorch's tensor parallelism shards nn.Linear and its registered "
                    "attention modules, not the Conv1D layers of GPT-2's blocks, which would stay whole on every "
                    "rank; re-plan with --fix tp=1");
}

}  // namespace

void require_atorch_runnable(const PlanFile& plan, const ModelSpec& model) {
  stage_boundaries(plan, model);  // the partition covers the model in pp stages
  require_no_context_or_experts(plan, model, kFramework);
  require_no_megatron_features(plan, kFramework);
  require_uniform_tp(plan, kFramework);
  require_uniform_dp(plan, kFramework);
  require_even_batch(plan, kFramework);
  require_no_speed_split(plan, kFramework);
  require_shardable_layers(plan, model);
  require_zero_fits(plan);
  require_recompute_fits(plan);
  atorch_micro_batches(plan);
}

int atorch_micro_batches(const PlanFile& plan) {
  return micro_batches_per_step(plan, "ATorch's pipeline needs for its chunks");
}

}  // namespace fasop
