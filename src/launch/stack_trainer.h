#pragma once
// The trainers of the PyTorch-native and NeMo stacks under torchrun: torchtitan (its train
// module with the plan's configuration module) and Megatron-Bridge (its own entry point with the
// plan's recipe and overrides, torchrun_script_command), each followed by a trainer config's
// arguments.
#include <string>
#include <vector>

#include "specs/trainer_config.h"

namespace fasop {

/// A trainer config's arguments for torchtitan or Megatron-Bridge (`stack`), as tokens
/// ("--training.steps", "50"). Throws SpecError naming the config and the flag where one would
/// override what the plan fixes: a parallel degree, the batch, its tokens or the context length
/// (torchtitan's --parallelism.*, --training.num_tokens_*, --training.max_context_length;
/// run_recipe.py's -tp/-pp/-cp/-vp/-ep/-etp spelled out, --global_batch_size, --micro_batch_size,
/// --seq_length), or megatron_script, which is Megatron-LM's.
std::vector<std::string> stack_config_args(const TrainerConfig& config, const std::string& stack);

/// Each node writes `config_py` (torchtitan_config_py) to its own folder of the run directory,
/// then runs `python -m torchtitan.train --module fasop_plan --config fasop_plan` under torchrun
/// with `args` after it; run from torchtitan's root.
std::string torchtitan_trainer_command(const std::string& config_py, const std::vector<std::string>& args);

}  // namespace fasop
