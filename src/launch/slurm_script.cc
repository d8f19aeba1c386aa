#include "launch/slurm_script.h"

#include <algorithm>
#include <sstream>

#include "emit/shell_quote.h"
#include "specs/nvlink_domain.h"
#include "specs/plan_degrees.h"
#include "specs/preset_catalog.h"
#include "specs/spec_error.h"

namespace fasop {
namespace {

/// The #SBATCH lines of one component.
std::string component_options(const NodeType& type, int nodes, const SlurmOptions& options) {
  std::string line = "#SBATCH --partition=" + type.slurm.partition + " --nodes=" + std::to_string(nodes) +
                     " --ntasks-per-node=1";
  // No gres given: the node type's GPUs, as Slurm's generic request; "none" asks for none
  // (nodes whose GPUs Slurm does not track).
  if (type.slurm.gres.empty()) line += " --gpus-per-node=" + std::to_string(type.gpus_per_node);
  else if (type.slurm.gres != "none") line += " --gres=" + type.slurm.gres;
  if (!type.slurm.constraint.empty()) line += " --constraint=" + type.slurm.constraint;
  if (!type.slurm.account.empty()) line += " --account=" + type.slurm.account;
  // Nodes of an NVLink domain (GB200/GB300 NVL72 racks): ask for them in the equal segments the
  // plan was priced with (specs/nvlink_domain.h), each inside one domain (Slurm's topology/block).
  if (type.nvlink_domain_nodes > 1)
    line += " --segment=" + std::to_string(nvlink_segment_nodes(type.nvlink_domain_nodes, nodes));
  line += "\n";
  for (const std::string& arg : options.sbatch_args) line += "#SBATCH " + arg + "\n";
  return line;
}

/// pyxis's srun options: the image, and the directories node.sh and the trainer need.
std::string container_options(const LaunchSettings& settings, const std::string& runs_dir,
                              const SlurmOptions& options) {
  if (options.container_image.empty()) return "";
  std::vector<std::string> mounts;
  const std::string plan_dir = settings.plan_path.substr(0, settings.plan_path.find_last_of('/'));
  for (const std::string& dir : {runs_dir, settings.workdir, plan_dir})
    if (std::find(mounts.begin(), mounts.end(), dir + ":" + dir) == mounts.end()) mounts.push_back(dir + ":" + dir);
  mounts.insert(mounts.end(), options.container_mounts.begin(), options.container_mounts.end());
  std::string list;
  for (const std::string& m : mounts) list += (list.empty() ? "" : ",") + m;
  return " --container-image=" + shell_quote(options.container_image) + " --container-mounts=" + shell_quote(list) +
         " --container-workdir=" + shell_quote(settings.workdir);
}

/// Throws unless every component's node type says where its nodes come from.
void require_slurm_mappings(const PlanFile& plan, const ClusterSpec& cluster, const LaunchLayout& layout) {
  for (const LaunchComponent& c : layout.components)
    if (cluster.node_types[c.node_type_index].slurm.partition.empty())
      throw SpecError(cluster.source + ": node type '" + c.node_type + "' (used by " + plan.source +
                      ") has no Slurm mapping; pass --partition " + c.node_type +
                      "=NAME[,gres=G] or add `slurm: {partition: NAME}` (and gres, constraint) to it in " +
                      file_to_edit(embedded_presets(), cluster.source));
}

}  // namespace

std::string slurm_batch_script(const PlanFile& plan, const ClusterSpec& cluster, const LaunchLayout& layout,
                               const LaunchSettings& settings, const std::string& runs_dir, const std::string& job_name,
                               const SlurmOptions& options) {
  require_slurm_mappings(plan, cluster, layout);
  const bool het = layout.components.size() > 1;
  std::ostringstream out;
  out << "#!/bin/bash\n"
      << "# fasop-cpp launch of " << settings.plan_path << ": " << layout.nodes.size() << " nodes, "
      << layout.world_size << " GPUs, tp " << plan.key.tp << " dp " << plan.key.dp << " pp " << plan.key.pp
      << context_expert_text(plan.key, " ") << ".\n"
      << "# " << (het ? "One heterogeneous-job component per node type, co-scheduled; n" : "N")
      << "ode ranks follow the plan's node order.\n"
      << "#SBATCH --job-name=" << job_name << "\n"
      << "#SBATCH --output=" << runs_dir << "/slurm-%j.out\n";
  for (size_t c = 0; c < layout.components.size(); ++c) {
    if (c > 0) out << "#SBATCH hetjob\n";
    const LaunchComponent& component = layout.components[c];
    out << component_options(cluster.node_types[component.node_type_index], component.nodes, options);
  }
  out << "set -u\n"
      << "export FASOP_RUN_DIR=" << shell_quote(runs_dir) << "/$SLURM_JOB_ID\n"
      << "mkdir -p \"$FASOP_RUN_DIR\"\n"
      << "# A restarted Slurm reuses job ids: what an earlier job of this id left is not this job's.\n"
      << "rm -f \"$FASOP_RUN_DIR\"/node-*.exit \"$FASOP_RUN_DIR\"/node-*.log \"$FASOP_RUN_DIR/job.exit\"\n"
      << "# Each component's nodes in Slurm's order; the k-th node of a node type in the plan's order\n"
      << "# takes the k-th node of that type's component.\n";
  for (size_t c = 0; c < layout.components.size(); ++c)
    out << "component" << c << "=($(scontrol show hostnames \"$SLURM_JOB_NODELIST"
        << (het ? "_HET_GROUP_" + std::to_string(c) : "") << "\"))  # " << layout.components[c].node_type << "\n";
  out << "{\n";
  for (const LaunchNode& node : layout.nodes)
    out << "  echo \"" << node.node_rank << " ${component" << node.component << "[" << node.index_in_component
        << "]}\"\n";
  out << "} > \"$FASOP_RUN_DIR/hosts.txt\"\n"
      << "# The rendezvous: the first node of the first component, which holds node rank 0.\n"
      << "export MASTER_ADDR=$(scontrol show node \"${component0[0]}\" | sed -n 's/.*NodeAddr=\\([^ ]*\\).*/\\1/p')\n"
      << "cat > \"$FASOP_RUN_DIR/node.sh\" <<'FASOP_NODE_SCRIPT'\n"
      << node_script(plan, layout, settings) << "FASOP_NODE_SCRIPT\n"
      << "srun";
  if (het) {
    out << " --het-group=";
    for (size_t c = 0; c < layout.components.size(); ++c) out << (c ? "," : "") << c;
  }
  out << " --ntasks-per-node=1" << container_options(settings, runs_dir, options) << " bash \"$FASOP_RUN_DIR/node.sh\"\n"
      << "code=$?\n"
      << "echo \"$code\" > \"$FASOP_RUN_DIR/job.exit\"\n"
      << "exit \"$code\"\n";
  return out.str();
}

}  // namespace fasop
