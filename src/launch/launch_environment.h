#pragma once
// The variables a launch exports besides each node's place: the cluster file's `env:` of the
// node's type (its fabric's NCCL settings), the trainer config's `env:`, and what the plan
// itself requires of the trainer's environment.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "specs/cluster_spec.h"
#include "specs/plan_file.h"
#include "specs/trainer_config.h"

namespace fasop {

using EnvironmentVariables = std::vector<std::pair<std::string, std::string>>;

/// Per node type (by name), the variables its nodes export, and what --dry-run says of them.
struct LaunchEnvironment {
  std::map<std::string, EnvironmentVariables> by_node_type;
  std::vector<std::string> notes;  ///< a line per variable the plan set over another's value
};

/// What the plan requires: CUDA_DEVICE_MAX_CONNECTIONS=1 where it has tensor or context
/// parallelism, as Megatron-LM's validate_args demands before Blackwell (one CUDA work queue
/// keeps the tensor-parallel communication ahead of the GEMMs it overlaps), but not under
/// Megatron-FSDP (ZeRO 2 and 3), whose gathers need queues of their own.
EnvironmentVariables plan_environment(const PlanFile& plan);

/// The node types' variables of `cluster` used by `plan`: the type's own, then `config`'s
/// (either may be absent), then plan_environment's; a later source wins a name.
LaunchEnvironment launch_environment(const PlanFile& plan, const ClusterSpec& cluster, const TrainerConfig& config);

}  // namespace fasop
