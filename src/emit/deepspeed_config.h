#pragma once
// The DeepSpeed config JSON (ds_config.json) for a saved plan: batch, ZeRO, precision and
// activation checkpointing. The pipeline partition, which DeepSpeed reads from no config key,
// is in the PipelineModule that deepspeed_pipeline_py writes.
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
///   "pipeline": {"activation_checkpoint_interval": 0 or 1}, which the pipeline engine reads
///   (PipelineEngine.__init__). Nothing else under "pipeline": DeepSpeed keeps any key there
///   (runtime/config.py get_pipeline_config) but reads no stage count or partition from it.
/// Throws SpecError for what DeepSpeed refuses (deepspeed_stage_boundaries).
std::string deepspeed_config_json(const PlanFile& plan, const ModelSpec& model);

}  // namespace fasop
