#pragma once
// What every emitter checks of a plan before writing it for a framework: a plan edited by hand
// or saved for another model must not become a silently wrong schedule.
#include <string>
#include <vector>

#include "specs/model_spec.h"
#include "specs/plan_file.h"

namespace fasop {

/// "plan <file>: " (or "plan: " for one made in memory): every message names its plan.
std::string plan_where(const PlanFile& plan);

/// The units where each stage starts, and the unit count at the end (pp + 1 numbers, as
/// DeepSpeed's PipelineModule.parts). Throws SpecError unless the partition has pp stages of one
/// unit or more that cover the model's units exactly.
std::vector<int> stage_boundaries(const PlanFile& plan, const ModelSpec& model);

/// Throws SpecError when the plan gives stages different data-parallel degrees, which
/// `framework` cannot run.
void require_uniform_dp(const PlanFile& plan, const std::string& framework);

/// Throws SpecError when the plan gives stages different tensor-parallel degrees (stage_tp),
/// which `framework` cannot run: none of the shipped emitters' frameworks can.
void require_uniform_tp(const PlanFile& plan, const std::string& framework);

/// Throws SpecError when the plan splits the global batch unevenly over its replicas
/// (uneven_dp), which `framework` cannot run.
void require_even_batch(const PlanFile& plan, const std::string& framework);

/// Throws SpecError when the plan splits a stage's micro-batch over its replicas by speed
/// (speed_split, Metis's own runtime), which `framework` cannot run: none of the shipped
/// emitters' frameworks can.
void require_no_speed_split(const PlanFile& plan, const std::string& framework);

/// The micro-batches each replica runs a step, global batch / (mbs x dp). Throws SpecError
/// where that does not divide, which `needed_by` says is needed ("DeepSpeed asserts ...").
int micro_batches_per_step(const PlanFile& plan, const std::string& needed_by);

/// Throws SpecError when the plan uses what only Megatron-LM runs (sequence parallelism,
/// selective recomputation, the interleaved schedule), naming it: `framework` would silently
/// run another plan than the one priced.
void require_no_megatron_features(const PlanFile& plan, const std::string& framework);

}  // namespace fasop
