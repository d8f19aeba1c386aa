#pragma once
// The DeepSpeed config JSON (ds_config.json) for a saved plan: batch, ZeRO, precision,
// activation checkpointing and the plan's pipeline partition as PipelineModule's `parts`.
// A pure function of the plan and the model: no files are read or written.
#include <string>

#include "specs/model_spec.h"
#include "specs/plan_file.h"

namespace fasop {

/// The DeepSpeed config of `plan`, as JSON with a fixed key order (the same plan gives the same
/// bytes), two-space indented, ending in a newline:
///   train_batch_size (the global batch), train_micro_batch_size_per_gpu (mbs),
///   gradient_accumulation_steps (global / (mbs x dp)), zero_optimization.stage,
///   fp16 or bf16 {"enabled": true} by model.dtype, activation_checkpointing when recompute, and
///   "pipeline": {"stages": pp, "parts": [...], "activation_checkpoint_interval": 0 or 1}.
/// "parts" has pp + 1 layer indices: stage s owns layers [parts[s], parts[s+1]) of the
/// PipelineModule's layer list, one layer per model unit (embedding, transformer layers,
/// post-process), exactly as PipelineModule.parts. DeepSpeed itself does not read "stages" or
/// "parts" (deepspeed/runtime/config.py get_pipeline_config keeps any key under "pipeline"; the
/// pipeline engine reads only pipe_partitioned, grad_partitioned, activation_checkpoint_interval
/// and use_reentrant): user code passes them to PipelineModule (num_stages) and its partition.
/// Throws SpecError for what DeepSpeed refuses: ZeRO-2/3 with pp > 1, per-stage dp, a global
/// batch that is not a multiple of mbs x dp, a partition that does not cover the model.
std::string deepspeed_config_json(const PlanFile& plan, const ModelSpec& model);

}  // namespace fasop
