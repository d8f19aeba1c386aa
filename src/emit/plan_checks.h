#pragma once
// What every emitter checks of a plan before writing it for a framework: a plan edited by hand
// or saved for another model must not become a silently wrong schedule.
#include <string>
#include <vector>

#include "specs/cluster_spec.h"
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

/// Throws SpecError when a pipeline stage's GPUs are of two GPU types (its tp x cp x dp ranks
/// span nodes of `cluster`'s types with different GPUs), which `framework` cannot run as priced:
/// its meshes assume one GPU model, and the plan prices the stage at its slowest GPU.
void require_one_gpu_per_stage(const PlanFile& plan, const ClusterSpec& cluster, const std::string& framework);

/// "" when `plan` was priced for `stack` (megatron, torchtitan, deepspeed: the plan file's
/// `stack`, megatron where it names none), else a line saying which stack's memory the plan was
/// priced for and how to price it for `stack`: the plan may not fit as that stack allocates.
std::string priced_stack_note(const PlanFile& plan, const std::string& stack);

/// The micro-batches each replica runs a step, global batch / (mbs x dp). Throws SpecError
/// where that does not divide, which `needed_by` says is needed ("DeepSpeed asserts ...").
int micro_batches_per_step(const PlanFile& plan, const std::string& needed_by);

/// Throws SpecError when the plan uses what only Megatron-LM runs (sequence parallelism,
/// selective recomputation, the interleaved schedule), naming it: `framework` would silently
/// run another plan than the one priced.
void require_no_megatron_features(const PlanFile& plan, const std::string& framework);

/// Throws SpecError when the plan uses context or expert parallelism (cp, ep, etp above 1) or
/// its model has experts or multi-token prediction, naming which: `framework` would run a dense
/// model on tp x dp x pp GPUs, not the plan priced. Megatron-LM runs them (--format megatron).
void require_no_context_or_experts(const PlanFile& plan, const ModelSpec& model, const std::string& framework);

/// Throws SpecError for the context- and expert-parallel degrees Megatron-LM refuses or cannot
/// run as priced, naming the plan field and the fix: a degree below 1; cp whose 2 x cp chunks do
/// not split the sequence (validate_args asserts it); ep or etp on a model without experts; ep
/// not dividing the experts (validate_args asserts it); ep x etp not dividing a stage's
/// tp x cp x dp GPUs (initialize_model_parallel's expert groups); etp not dividing the expert's
/// width; tp > 1 with experts but without sequence parallelism (MoELayer raises in training).
void require_megatron_parallel_dims(const PlanFile& plan, const ModelSpec& model);

/// Throws SpecError when the model's dtype needs what a stage's GPU lacks, where the plan names a
/// GPU with shipped data (configs/gpus/; a GPU without it is not checked): fp8 and mxfp8 an fp8
/// peak (Transformer Engine's fp8 GEMMs run on fp8 tensor cores: Ada, Hopper, Blackwell),
/// mxfp8 its own entry among the GPU's precisions (MXFP8 block scaling runs on Blackwell only;
/// the shipped data gives one exactly for the Blackwell GPUs).
void require_precision_on_gpus(const PlanFile& plan, const ModelSpec& model);

}  // namespace fasop
