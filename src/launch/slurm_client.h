#pragma once
// The Slurm commands a launch runs: sbatch to submit, scontrol to ask about a job.
#include <string>

namespace fasop {

/// Submits the batch script at `script_path` with `sbatch --parsable`; returns the job id.
/// Throws SpecError when sbatch is missing or refuses the job (its message quoted).
std::string sbatch_submit(const std::string& script_path);

/// `scontrol -o show job JOB`'s output ("" when scontrol is missing or knows no such job).
std::string scontrol_show_job(const std::string& job);

}  // namespace fasop
