#include "launch/docker_commands.h"

#include <sstream>

#include "emit/shell_quote.h"

namespace fasop {

std::string docker_commands(const PlanFile& plan, const LaunchLayout& layout, const LaunchSettings& settings,
                            const DockerSettings& docker) {
  std::ostringstream out;
  out << "#!/bin/bash\n"
      << "# fasop-cpp launch of " << settings.plan_path << " as containers: run the line of each node on that\n"
      << "# node (node rank 0 first: it hosts the rendezvous at " << docker.master_addr << ":" << settings.master_port
      << ").\n";
  for (const LaunchNode& node : layout.nodes) {
    out << "\n# node rank " << node.node_rank << ": " << node.node_type << ", " << node.gpus << " GPUs, ranks "
        << node.first_rank << "-" << node.first_rank + node.gpus - 1 << "\n"
        << docker.runtime << " run" << (docker.extra_args.empty() ? "" : " " + docker.extra_args) << " --rm --name fasop-node"
        << node.node_rank << " --network host --ipc host";
    if (docker.gpus) out << " --gpus all";
    for (const std::string& mount : docker.mounts) out << " -v " << shell_quote(mount);
    out << " -w " << shell_quote(settings.workdir);
    for (const auto& [name, value] : node_environment(plan, layout, node, settings))
      out << " -e " << shell_quote(name + "=" + value);
    out << " -e " << shell_quote("MASTER_ADDR=" + docker.master_addr) << " -e FASOP_RUN_DIR=/tmp "
        << shell_quote(docker.image) << " bash -c " << shell_quote(settings.trainer_command) << "\n";
  }
  return out.str();
}

}  // namespace fasop
