#pragma once
#include <CLI/CLI.hpp>

namespace fasop {

/// `fasop-cpp launch --plan PLAN --backend slurm|docker|local`, `launch status JOB`,
/// `launch logs JOB`: a saved plan started on nodes, and what became of it.
void add_launch_command(CLI::App& app);

}  // namespace fasop
