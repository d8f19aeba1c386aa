#pragma once
// Megatron-Bridge's arguments for a saved plan: its own entry point (scripts/training/
// run_recipe.py) with the model's recipe and ConfigContainer overrides (KEY=VALUE, Hydra's
// syntax) for what the plan sets, translated from the Megatron-LM arguments that run it; the
// model's architecture is the recipe's. Pure functions of the plan, its model and its cluster.
#include <string>
#include <vector>

#include "specs/cluster_spec.h"
#include "specs/model_spec.h"
#include "specs/plan_file.h"

namespace fasop {

/// run_recipe.py's arguments, one token per element: "--model", the recipe stem
/// (ModelSpec::megatron_bridge_recipe), "--mode", "pretrain", then the overrides, e.g.
/// "model.tensor_model_parallel_size=2", "train.micro_batch_size=1",
/// "model.pipeline_model_parallel_layout=\"Et*9|t*8L\"", "mixed_precision=bf16_mixed". Every
/// field the plan was priced with is written, defaults too (cp 1, no virtual stages, no
/// recomputation, no CUDA graphs, no distributed optimizer, ...), so that the recipe's own choices
/// do not run instead; Megatron-Core's fields go under ModelSpec::megatron_bridge_transformer.
/// Throws SpecError naming the plan field and the fix where Megatron-LM (upstream, Megatron-FSDP
/// for ZeRO 2 and 3) cannot run the plan, for stages of two GPU types, a model without a recipe,
/// fp32 training (the recipes are mixed precision) and a Megatron-LM argument with no override.
std::vector<std::string> megatron_bridge_args(const PlanFile& plan, const ModelSpec& model, const ClusterSpec& cluster);

/// The same as text to paste after `torchrun ... scripts/training/run_recipe.py \`: a comment
/// naming the plan, then one argument a line joined by " \\\n", shell-quoted where needed,
/// ending in a newline.
std::string megatron_bridge_args_text(const PlanFile& plan, const ModelSpec& model, const ClusterSpec& cluster);

}  // namespace fasop
