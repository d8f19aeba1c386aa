#include "launch/run_directory.h"

#include <filesystem>
#include <optional>

#include "report/atomic_file.h"
#include "specs/spec_error.h"
#include "specs/spec_store.h"

namespace fasop {

void prepare_run_directory(const std::string& run_dir, const std::string& job, const std::string& backend,
                           const std::string& plan_path, const LaunchLayout& layout, const std::string& node_sh) {
  std::filesystem::create_directories(run_dir);
  std::string nodes;
  for (const LaunchNode& node : layout.nodes) nodes += std::to_string(node.node_rank) + " " + node.node_type + "\n";
  write_file_atomically(run_dir + "/nodes.txt", nodes);
  if (std::optional<std::string> plan = DiskSource().read(plan_path)) write_file_atomically(run_dir + "/plan.yaml", *plan);
  if (!node_sh.empty()) write_file_atomically(run_dir + "/node.sh", node_sh);
  write_file_atomically(run_dir + "/launch.txt", "job: " + job + "\nbackend: " + backend + "\nplan: " + plan_path +
                                                     "\nworkdir: " + std::filesystem::current_path().string() + "\n");
}

std::string find_run_directory(const std::string& job, const std::string& runs_dir) {
  if (std::filesystem::exists(std::filesystem::path(job) / "launch.txt")) return job;
  const std::string dir = runs_dir + "/" + job;
  if (!std::filesystem::is_directory(dir))
    throw SpecError("no run directory " + dir + " for job " + job + "; give --runs-dir where it was launched");
  return dir;
}

std::string next_local_job(const std::string& runs_dir) {
  for (int n = 1;; ++n) {
    std::string job = "local-" + std::to_string(n);
    if (!std::filesystem::exists(runs_dir + "/" + job)) return job;
  }
}

}  // namespace fasop
