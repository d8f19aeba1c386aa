#pragma once
#include <CLI/CLI.hpp>

namespace fasop {

/// `fasop-cpp calibrate`: the compute efficiency at which analytic layer times match a
/// measured profile, to write into the cluster file.
void add_calibrate_command(CLI::App& app);

}  // namespace fasop
