#pragma once
// A plan as an ATorch auto_accelerate strategy (the `load_strategy` list), for running a planned
// layout with ATorch instead of hand-writing its optimizations.
#include <string>

#include "specs/model_spec.h"
#include "specs/plan_file.h"

namespace fasop {

/// The Python 3 text of a module defining `strategy = [...]` for ATorch's
/// `auto_accelerate(model, ..., load_strategy=strategy)`: parallel_mode (tensor, pipeline, data),
/// amp_native in the model's half dtype, zero1/zero2/fsdp by key.zero_stage and checkpoint on the
/// family's transformer layer class when key.recompute. The pipeline partition, which ATorch takes
/// only as split points of its PiPPy pipeline, is written beside it as `pipeline_split_before`.
/// Pure: the same plan gives the same bytes. Throws std::invalid_argument when the partition does
/// not cover the model's units.
std::string atorch_strategy_py(const PlanFile& plan, const ModelSpec& model);

}  // namespace fasop
