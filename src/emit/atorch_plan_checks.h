#pragma once
// What ATorch's auto_accelerate cannot run as a plan was priced. Its ModelContext.adjust_wrappers
// silently removes wrappers that do not compose, so these plans would train, but as another plan.
#include "specs/model_spec.h"
#include "specs/plan_file.h"

namespace fasop {

/// Throws SpecError naming the plan's field and the fix when ATorch would drop part of the plan:
/// ZeRO-2/3 with a pipeline (mixed_parallel removes the zero2 and fsdp wrappers) or with tensor
/// parallelism (FSDP loses its per-layer units and holds the whole model at once), or
/// recomputation with tensor parallelism and no pipeline (the checkpoint wrapper is removed), or
/// tensor parallelism of GPT-2 (its Conv1D layers are not among what ATorch shards).
/// Also the checks every emitter makes (plan_checks.h) that ATorch needs.
void require_atorch_runnable(const PlanFile& plan, const ModelSpec& model);

/// The micro-batches of a step, which ATorch's pipeline takes as `chunks`: the global batch over
/// mbs x dp. Throws SpecError when that does not divide it.
int atorch_micro_batches(const PlanFile& plan);

}  // namespace fasop
