#pragma once
// A plan as one Slurm batch script: a heterogeneous job with one component per node type (its
// components are co-scheduled, unlike FASOP's separate sbatch jobs), the nodes of each
// component given node ranks in the plan's order, and node.sh started on every node.
#include <string>

#include "launch/launch_layout.h"
#include "launch/node_script.h"
#include "launch/slurm_options.h"
#include "specs/cluster_spec.h"
#include "specs/plan_file.h"

namespace fasop {

/// The batch script. `runs_dir` (absolute, on a filesystem every node shares) receives
/// slurm-JOBID.out and the run directory JOBID/. `options`' sbatch arguments go into every
/// component's #SBATCH block (a heterogeneous job's components each take their own --time,
/// --qos, --exclusive); with a container image, srun starts node.sh in it through pyxis, the
/// run, work and plan directories mounted. Throws SpecError when a node type the plan uses has
/// no `slurm:` mapping in `cluster`.
std::string slurm_batch_script(const PlanFile& plan, const ClusterSpec& cluster, const LaunchLayout& layout,
                               const LaunchSettings& settings, const std::string& runs_dir, const std::string& job_name,
                               const SlurmOptions& options = {});

}  // namespace fasop
