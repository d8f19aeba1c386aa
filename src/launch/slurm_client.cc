#include "launch/slurm_client.h"

#include <sys/wait.h>

#include <array>
#include <cstdio>

#include "emit/shell_quote.h"
#include "specs/spec_error.h"

namespace fasop {
namespace {

/// Runs `command` with the shell; returns its standard output and stderr together, and its exit status.
std::string run_command(const std::string& command, int* status) {
  std::string output;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) {
    *status = -1;
    return output;
  }
  std::array<char, 4096> buffer;
  for (size_t n; (n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0;) output.append(buffer.data(), n);
  int raw = ::pclose(pipe);
  *status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return output;
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

std::string sbatch_submit(const std::string& script_path) {
  int status = 0;
  std::string output = run_command("sbatch --parsable " + shell_quote(script_path), &status);
  if (status == 127) throw SpecError("sbatch is not installed here (apt-get install slurm-client); --dry-run shows the script");
  if (status != 0) throw SpecError("sbatch refused the job: " + first_line(output));
  // --parsable prints "JOBID" or "JOBID;CLUSTER".
  std::string job = first_line(output);
  job = job.substr(0, job.find(';'));
  if (job.empty() || job.find_first_not_of("0123456789") != std::string::npos)
    throw SpecError("sbatch printed no job id: " + first_line(output));
  return job;
}

std::string scontrol_show_job(const std::string& job) {
  int status = 0;
  std::string output = run_command("scontrol -o show job " + shell_quote(job), &status);
  return status == 0 ? output : "";
}

}  // namespace fasop
