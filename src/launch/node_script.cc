#include "launch/node_script.h"

#include <sstream>

#include "emit/shell_quote.h"
#include "specs/plan_degrees.h"

namespace fasop {

std::vector<std::pair<std::string, std::string>> node_environment(const PlanFile& plan, const LaunchLayout& layout,
                                                                  const LaunchNode& node,
                                                                  const LaunchSettings& settings) {
  auto text = [](int value) { return std::to_string(value); };
  EnvironmentVariables variables = {{"NNODES", text(static_cast<int>(layout.nodes.size()))},
                                   {"NODE_RANK", text(node.node_rank)},
                                   {"GPUS_PER_NODE", text(node.gpus)},
                                   {"WORLD_SIZE", text(layout.world_size)},
                                   {"MASTER_PORT", text(settings.master_port)},
                                   {"FASOP_NODE_TYPE", node.node_type},
                                   {"FASOP_FIRST_RANK", text(node.first_rank)},
                                   {"FASOP_TP", text(plan.key.tp)},
                                   {"FASOP_DP", text(plan.key.dp)},
                                   {"FASOP_PP", text(plan.key.pp)}};
  // FASOP_CP, FASOP_EP and FASOP_ETP where the plan has them (above 1).
  for (const auto& [name, value] : context_expert_degrees(plan.key))
    variables.emplace_back(name == "cp" ? "FASOP_CP" : name == "ep" ? "FASOP_EP" : "FASOP_ETP", text(value));
  variables.insert(variables.end(), {{"FASOP_MBS", text(plan.key.mbs)},
                                     {"FASOP_GLOBAL_BATCH", text(plan.global_batch)},
                                     {"FASOP_PLAN", settings.plan_path}});
  if (auto it = settings.env_by_node_type.find(node.node_type); it != settings.env_by_node_type.end())
    variables.insert(variables.end(), it->second.begin(), it->second.end());
  return variables;
}

std::string node_script(const PlanFile& plan, const LaunchLayout& layout, const LaunchSettings& settings) {
  std::ostringstream out;
  out << "#!/bin/bash\n"
      << "# One node of a fasop-cpp launch of " << settings.plan_path << ".\n"
      << "# Usage: bash node.sh [NODE_RANK] (none under Slurm: looked up by $SLURMD_NODENAME).\n";
  for (const std::string& note : settings.notes) out << "# " << note << "\n";
  out << "set -u\n"
      << ": \"${FASOP_RUN_DIR:?}\" \"${MASTER_ADDR:?}\"\n"
      << "node_rank=${1:-}\n"
      << "if [ -z \"$node_rank\" ]; then\n"
      << "  node_rank=$(awk -v n=\"${SLURMD_NODENAME:?}\" '$2 == n { print $1; exit }' \"$FASOP_RUN_DIR/hosts.txt\")\n"
      << "  [ -n \"$node_rank\" ] || { echo \"fasop-cpp: node $SLURMD_NODENAME is not in $FASOP_RUN_DIR/hosts.txt\" >&2; exit 97; }\n"
      << "fi\n"
      << "case $node_rank in\n";
  for (const LaunchNode& node : layout.nodes) {
    out << "  " << node.node_rank << ")";
    for (const auto& [name, value] : node_environment(plan, layout, node, settings))
      out << " export " << name << "=" << shell_quote(value) << ";";
    out << " ;;\n";
  }
  out << "  *) echo \"fasop-cpp: no node rank $node_rank in this plan\" >&2; exit 97 ;;\n"
      << "esac\n"
      << "log=\"$FASOP_RUN_DIR/node-$node_rank.log\"\n"
      << "cd " << shell_quote(settings.workdir) << " || exit 97\n"
      << "bash -c " << shell_quote(settings.trainer_command) << " > \"$log\" 2>&1\n"
      << "code=$?\n"
      << "echo \"$code\" > \"$FASOP_RUN_DIR/node-$node_rank.exit\"\n"
      << "exit \"$code\"\n";
  return out.str();
}

}  // namespace fasop
