#pragma once
// The script every node of a launch runs (node.sh), whatever the backend: it finds its node
// rank, exports the plan's environment, runs the trainer with its output in the run directory,
// and records its exit code there.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "launch/launch_environment.h"
#include "launch/launch_layout.h"
#include "specs/plan_file.h"

namespace fasop {

/// What every node's trainer runs and where the launch keeps its files.
struct LaunchSettings {
  std::string plan_path;        ///< absolute path of the plan file
  std::string workdir;          ///< absolute directory the trainer starts in
  std::string trainer_command;  ///< a shell command; the environment below tells it its place
  int master_port = 29500;
  /// Per node type: what its nodes export besides their place (launch_environment.h).
  std::map<std::string, EnvironmentVariables> env_by_node_type;
  /// Lines node.sh's head states: how the trainer's arguments and environment were merged.
  std::vector<std::string> notes;
};

/// The environment of node `node`, besides MASTER_ADDR (the backend's) and FASOP_RUN_DIR:
/// NNODES, NODE_RANK, GPUS_PER_NODE, WORLD_SIZE, MASTER_PORT, and FASOP_* for the plan's
/// degrees, batch, this node's first rank and type, and the plan file; then its node type's
/// variables of `settings`.
std::vector<std::pair<std::string, std::string>> node_environment(const PlanFile& plan, const LaunchLayout& layout,
                                                                  const LaunchNode& node,
                                                                  const LaunchSettings& settings);

/// node.sh. Run as `bash node.sh NODE_RANK`, or with no argument under Slurm, where it reads its
/// node rank from $FASOP_RUN_DIR/hosts.txt by $SLURMD_NODENAME. Needs FASOP_RUN_DIR and
/// MASTER_ADDR in its environment; writes node-R.log and node-R.exit into the run directory.
std::string node_script(const PlanFile& plan, const LaunchLayout& layout, const LaunchSettings& settings);

}  // namespace fasop
