#pragma once
// A plan as a Slapo schedule: the Python that shards, checkpoints and pipelines the Hugging Face
// model of the plan's family, so that a planned layout can be run without hand-writing it.
#include <string>

#include "specs/model_spec.h"
#include "specs/plan_file.h"

namespace fasop {

/// The Python 3 text of a Slapo schedule for `plan` on `model`'s Hugging Face module tree
/// (GPT2LMHeadModel, BertForPreTraining-style `bert.` models, T5ForConditionalGeneration,
/// LlamaForCausalLM). It defines `schedule_model(model, tp_group=None)` (returns the Slapo
/// schedule) and `build_schedule(model, ...)` (schedules it and calls `slapo.build`): Megatron-style
/// tensor parallelism when key.tp > 1 (shard + sync, head counts divided, fork_rng on dropout in the
/// sharded region), `checkpoint` on every transformer layer when key.recompute, and
/// `cut_pipeline_stage` at the partition's stage boundaries. Pure: the same plan gives the same
/// bytes. Throws std::invalid_argument when the partition does not cover the model's units, when
/// tp does not divide the heads, or when Slapo cannot cut the partition (see the report of cuts
/// moved to the nearest layer boundary in the script's comments).
std::string slapo_schedule_py(const PlanFile& plan, const ModelSpec& model);

}  // namespace fasop
