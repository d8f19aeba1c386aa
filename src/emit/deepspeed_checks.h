#pragma once
// What DeepSpeed cannot run as the plan was priced, checked once for both DeepSpeed emitters
// (the config JSON and the PipelineModule), so that the two refuse the same plans.
#include <vector>

#include "specs/model_spec.h"
#include "specs/plan_file.h"

namespace fasop {

/// The gradient accumulation steps, global batch / (mbs x dp); throws where it does not divide.
int deepspeed_accumulation_steps(const PlanFile& plan);

/// The plan's stage boundaries in units (pp + 1 numbers, as stage_boundaries) after checking
/// that DeepSpeed runs the plan: one dp and one tp for every stage, an even batch split, no
/// speed split, none of Megatron-LM's own features, a global batch that is a multiple of
/// mbs x dp (DeepSpeedConfig._batch_assertion), ZeRO 0-3 and ZeRO 0 or 1 when pp > 1 (the
/// pipeline engine asserts it). Throws SpecError naming the plan field and the fix.
std::vector<int> deepspeed_stage_boundaries(const PlanFile& plan, const ModelSpec& model);

}  // namespace fasop
