#pragma once
#include <CLI/CLI.hpp>

namespace fasop {

/// `fasop-cpp validate`: predictions against published measurements (validation cases).
void add_validate_command(CLI::App& app);

}  // namespace fasop
