#include "launch/launch_run.h"

#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "launch/local_launcher.h"
#include "launch/run_directory.h"
#include "launch/slurm_client.h"
#include "report/atomic_file.h"
#include "specs/spec_error.h"

namespace fasop {

SlurmSubmission submit_slurm_job(const std::string& script, const std::string& runs_dir, const std::string& plan_path,
                                 const LaunchLayout& layout) {
  std::filesystem::create_directories(runs_dir);
  // Beside the run directories, so that keeping it is a rename on the same filesystem.
  std::string name = runs_dir + "/.submit-XXXXXX.sbatch";
  int fd = ::mkstemps(name.data(), 7);
  if (fd < 0) throw SpecError("cannot write the batch script in " + runs_dir + ": " + std::strerror(errno));
  ::close(fd);
  write_file_atomically(name, script);
  SlurmSubmission submission;
  try {
    submission.job = sbatch_submit(name);
  } catch (...) {
    std::remove(name.c_str());
    throw;
  }
  submission.run_dir = runs_dir + "/" + submission.job;
  prepare_run_directory(submission.run_dir, submission.job, "slurm", plan_path, layout, "");
  std::filesystem::rename(name, submission.run_dir + "/job.sbatch");
  return submission;
}

int LocalRun::failed() const {
  int count = 0;
  for (int code : exit_codes) count += code != 0;
  return count;
}

LocalRun run_local_job(const std::string& runs_dir, const std::string& plan_path, const LaunchLayout& layout,
                       const std::string& node_sh) {
  LocalRun run;
  run.job = next_local_job(runs_dir);
  run.run_dir = runs_dir + "/" + run.job;
  prepare_run_directory(run.run_dir, run.job, "local", plan_path, layout, node_sh);
  run.exit_codes = run_local_nodes(run.run_dir, static_cast<int>(layout.nodes.size()));
  return run;
}

}  // namespace fasop
