#pragma once
// The trainer a node runs when the user names none: Megatron-LM under torchrun.
#include <string>
#include <vector>

namespace fasop {

/// `torchrun` with the node's place from the launch environment (NNODES, GPUS_PER_NODE,
/// NODE_RANK, MASTER_ADDR, MASTER_PORT) starting Megatron-LM's `script` with `args` (bare
/// tokens: the plan's merged with a trainer config's, trainer_args.h), shell-quoted.
std::string megatron_trainer_command(const std::vector<std::string>& args, const std::string& script);

}  // namespace fasop
