#pragma once
#include <CLI/CLI.hpp>

namespace fasop {

/// `fasop-cpp profile layers|net|step ...`: runs the profiler binary (fasop-profile, beside
/// this one), which links LibTorch and Gloo so that the planner does not.
void add_profile_command(CLI::App& app);

}  // namespace fasop
