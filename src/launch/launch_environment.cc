#include "launch/launch_environment.h"

#include <algorithm>
#include <set>

#include "emit/megatron_args.h"
#include "specs/spec_error.h"

namespace fasop {
namespace {

/// Sets `name` in `variables`, replacing an earlier value in place; returns the value replaced.
std::string set_variable(EnvironmentVariables& variables, const std::string& name, const std::string& value) {
  auto it = std::find_if(variables.begin(), variables.end(), [&](const auto& v) { return v.first == name; });
  if (it == variables.end()) {
    variables.emplace_back(name, value);
    return value;
  }
  std::string before = it->second;
  it->second = value;
  return before;
}

/// Throws when `variables` (of `where`) set one the launch sets per node.
void refuse_launch_variables(const EnvironmentVariables& variables, const std::string& where) {
  static const std::vector<std::string> launch_sets = {"NNODES", "NODE_RANK", "GPUS_PER_NODE", "WORLD_SIZE",
                                                       "MASTER_ADDR", "MASTER_PORT", "FASOP_RUN_DIR"};
  for (const auto& [name, value] : variables)
    if (std::find(launch_sets.begin(), launch_sets.end(), name) != launch_sets.end() || name.rfind("FASOP_", 0) == 0)
      throw SpecError(where + "." + name + "': the launch sets it on each node from the plan; remove it");
}

}  // namespace

EnvironmentVariables plan_environment(const PlanFile& plan) {
  EnvironmentVariables variables;
  // Megatron-LM's validate_args asserts it below Blackwell with tensor or context parallelism,
  // except under Megatron-FSDP (ZeRO 2 and 3), which asserts the opposite.
  if ((plan.key.tp > 1 || plan.key.cp > 1) && !runs_megatron_fsdp(plan.key))
    variables.emplace_back("CUDA_DEVICE_MAX_CONNECTIONS", "1");
  return variables;
}

LaunchEnvironment launch_environment(const PlanFile& plan, const ClusterSpec& cluster, const TrainerConfig& config) {
  refuse_launch_variables(config.env, config.source + ": field 'env");
  LaunchEnvironment environment;
  std::set<std::string> overridden;
  for (const std::string& type_name : plan.node_order) {
    if (environment.by_node_type.count(type_name)) continue;
    int index = cluster.find_node_type(type_name);
    EnvironmentVariables variables = index >= 0 ? cluster.node_types[index].env : EnvironmentVariables{};
    refuse_launch_variables(variables, cluster.source + ": field 'node_types." + type_name + ".env");
    for (const auto& [name, value] : config.env) set_variable(variables, name, value);
    for (const auto& [name, value] : plan_environment(plan)) {
      std::string before = set_variable(variables, name, value);
      if (before != value) overridden.insert(name + "=" + before);
    }
    environment.by_node_type[type_name] = variables;
  }
  for (const auto& [name, value] : plan_environment(plan))
    environment.notes.push_back("environment: " + name + "=" + value + " (" +
                                (plan.key.tp > 1 ? "tp " + std::to_string(plan.key.tp) : "") +
                                (plan.key.tp > 1 && plan.key.cp > 1 ? ", " : "") +
                                (plan.key.cp > 1 ? "cp " + std::to_string(plan.key.cp) : "") +
                                ": Megatron-LM requires it)");
  for (const std::string& before : overridden) environment.notes.push_back("environment: the plan's value set over " + before);
  return environment;
}

}  // namespace fasop
