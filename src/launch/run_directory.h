#pragma once
// A launch's run directory, main_logs/runs/<job>/: what the launch leaves there for
// `launch status` and `launch logs` (the nodes add their logs and exit codes).
#include <string>

#include "launch/launch_layout.h"
#include "specs/plan_file.h"

namespace fasop {

/// Creates `run_dir` and writes launch.txt (job, backend, plan, the directory launched from), a copy of the plan as plan.yaml
/// (what `launch report` compares against, whatever becomes of the original) and nodes.txt (a
/// line "RANK TYPE" per node); `node_sh`, if not empty, as node.sh.
void prepare_run_directory(const std::string& run_dir, const std::string& job, const std::string& backend,
                           const std::string& plan_path, const LaunchLayout& layout, const std::string& node_sh);

/// The run directory of `job`: a run directory's own path (it holds launch.txt), else `job`
/// under `runs_dir`. Throws SpecError naming both when neither exists.
std::string find_run_directory(const std::string& job, const std::string& runs_dir);

/// The first free local job id under `runs_dir`: local-1, local-2, ...
std::string next_local_job(const std::string& runs_dir);

}  // namespace fasop
