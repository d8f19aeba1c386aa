#pragma once
// What became of a launched plan: each node's exit code (node-R.exit in the run directory),
// the tail of its log, and for Slurm the scheduler's state of each job component.
#include <optional>
#include <string>
#include <vector>

namespace fasop {

/// One component of a Slurm job as `scontrol show job -o` prints it.
struct SlurmJobState {
  std::string job_id;
  std::string state;      ///< PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, ...
  std::string exit_code;  ///< "code:signal", e.g. "3:0"
};

/// Every component in `scontrol show job -o JOB` output (one line each).
std::vector<SlurmJobState> parse_scontrol_jobs(const std::string& text);

/// One node of a run.
struct NodeStatus {
  int node_rank = 0;
  std::string node_type;
  std::string host;               ///< the Slurm node (empty for local and docker runs)
  std::optional<int> exit_code;   ///< none while it runs or before it starts
  std::string log_path;
};

/// A run directory read back.
struct RunStatus {
  std::string job;
  std::string backend;  ///< slurm or local
  /// The plan launched: the run directory's copy (plan.yaml), or the path launch.txt names
  /// where the directory has no copy.
  std::string plan;
  std::string workdir;  ///< where the launch ran: the plan's relative spec paths start there
  std::vector<NodeStatus> nodes;
  bool failed() const;    ///< a node exited non-zero
  bool finished() const;  ///< every node has exited
  /// "node rank R (TYPE on HOST) exited C" for each node that exited non-zero, joined by
  /// "; " ("" when none did).
  std::string failure() const;
};

/// Reads `run_dir` (launch.txt, nodes.txt, hosts.txt, node-R.exit); throws SpecError when it
/// is not a run directory of `fasop-cpp launch`.
RunStatus read_run_status(const std::string& run_dir);

/// The last `lines` lines of the file at `path` ("" when it cannot be read).
std::string file_tail(const std::string& path, int lines);

}  // namespace fasop
