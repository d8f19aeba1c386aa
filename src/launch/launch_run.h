#pragma once
// Starting a launch: a Slurm job submitted with its run directory, or the nodes run here.
#include <string>
#include <vector>

#include "launch/launch_layout.h"

namespace fasop {

/// A submitted Slurm job and where its nodes leave their output.
struct SlurmSubmission {
  std::string job;
  std::string run_dir;
};

/// Writes `script` under `runs_dir` (a filesystem the nodes share), submits it with sbatch and
/// prepares the job's run directory, keeping the script there as job.sbatch. Throws SpecError
/// when sbatch refuses it (nothing is left behind then).
SlurmSubmission submit_slurm_job(const std::string& script, const std::string& runs_dir, const std::string& plan_path,
                                 const LaunchLayout& layout);

/// A local run that has ended.
struct LocalRun {
  std::string job;
  std::string run_dir;
  std::vector<int> exit_codes;  ///< by node rank
  int failed() const;           ///< nodes that exited non-zero
};

/// Runs every node as a local process (node.sh `node_sh` in a fresh run directory local-N
/// under `runs_dir`) and waits for them.
LocalRun run_local_job(const std::string& runs_dir, const std::string& plan_path, const LaunchLayout& layout,
                       const std::string& node_sh);

}  // namespace fasop
