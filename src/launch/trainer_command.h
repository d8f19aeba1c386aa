#pragma once
// How a node starts the stacks' trainers: torchrun with its place in the launch.
#include <string>
#include <vector>

namespace fasop {

/// `torchrun` with the node's place from the launch environment (NNODES, GPUS_PER_NODE,
/// NODE_RANK, MASTER_ADDR, MASTER_PORT), in the underscore spellings every torchrun takes.
std::string torchrun_prefix();

/// torchrun_prefix() starting `script` with `args` (bare tokens), shell-quoted: Megatron-LM's
/// script with the plan's arguments merged with a trainer config's (trainer_args.h), or
/// Megatron-Bridge's run_recipe.py with the plan's recipe and overrides (stack_trainer.h).
std::string torchrun_script_command(const std::vector<std::string>& args, const std::string& script);

}  // namespace fasop
