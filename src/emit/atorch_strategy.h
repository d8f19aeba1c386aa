#pragma once
// A plan as an ATorch auto_accelerate strategy (the `load_strategy` list), for running a planned
// layout with ATorch instead of hand-writing its optimizations.
#include <string>

#include "specs/model_spec.h"
#include "specs/plan_file.h"

namespace fasop {

/// The Python 3 text of a module defining what ATorch's `auto_accelerate(model, ...,
/// dataloader_args=dataloader_args, load_strategy=strategy)` needs to run the plan:
///   parallel_mode   ([("tensor", tp), ("data", dp), ("pipe", pp)], None), sizes-1 dimensions but
///                   data left out: ranks in the plan's order (tp fastest, then dp, then stage), and
///                   "pipe", the group ATorch's pipeline reads;
///   strategy        parallel_mode; with pp > 1, mixed_parallel carrying that parallel_mode, the
///                   pipe_config (the partition as insert_before_modules, nstages, chunks, 1F1B)
///                   and, with tp > 1, the tensor_config; with tp > 1 alone, tensor_parallel;
///                   amp_native in the model's half dtype; zero1, zero2 or fsdp by key.zero_stage
///                   (per-layer FSDP units); checkpoint on the family's layer class with recompute;
///   dataloader_args the batch ATorch's dataloader splits over dp (and its pipeline into chunks).
/// Pure: the same plan gives the same bytes. Throws SpecError when ATorch cannot run the plan as
/// priced (atorch_plan_checks.h) or cannot split its partition (atorch_split_points.h).
std::string atorch_strategy_py(const PlanFile& plan, const ModelSpec& model);

}  // namespace fasop
