#pragma once
#include <CLI/CLI.hpp>

namespace fasop {

/// `fasop-cpp estimate`: the time, cost and memory of one plan.
void add_estimate_command(CLI::App& app);

}  // namespace fasop
