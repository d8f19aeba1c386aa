#pragma once
// A plan's pipeline for DeepSpeed: a Python module whose PipelineModule subclass builds the
// plan's stages. DeepSpeed partitions a PipelineModule only by 'uniform', 'parameters' or
// 'type:<regex>' (PipelineModule._partition_layers) and reads no partition from its config, so
// an uneven plan has to reach it as code. Pure: no files are read or written.
#include <string>

#include "specs/model_spec.h"
#include "specs/plan_file.h"

namespace fasop {

/// The Python 3 text of a module (pipeline_module.py) for `plan` on `model`, importable without
/// DeepSpeed. It defines:
///   TP, PP, DP; UNITS, one name per model unit ("embedding", "transformer 0", ...,
///   "post_process"); UNIT_PARTS, the pp + 1 unit indices where stages start (and the unit
///   count); ACTIVATION_CHECKPOINT_INTERVAL, 1 for full recomputation, else 0;
///   plan_topology(), DeepSpeed's PipeDataParallelTopology (tp 1) or
///   PipeModelDataParallelTopology of the plan, stage-major with the tp lane fastest as the
///   plan's ranks; flatten_units(layers), the layer list and its `parts` from one entry (or a
///   list of entries) per unit;
///   PlanPipelineModule(layers, **kwargs), made on first use (DeepSpeed imported then): a
///   PipelineModule with that topology and interval whose _partition_layers sets
///   self.parts to the plan's boundaries in the layer list.
/// The same plan gives the same bytes. Throws SpecError for what DeepSpeed does not run
/// (deepspeed_stage_boundaries) and for ZeRO 2 or 3, which the pipeline engine that runs a
/// PipelineModule refuses even with pp 1.
std::string deepspeed_pipeline_py(const PlanFile& plan, const ModelSpec& model);

}  // namespace fasop
