#pragma once
#include <CLI/CLI.hpp>

namespace fasop {

/// `fasop-cpp plan show PLAN [--timeline out.svg]`: a saved plan in words and as a timeline.
void add_plan_command(CLI::App& app);

}  // namespace fasop
