#pragma once
#include <CLI/CLI.hpp>

namespace fasop {

/// `fasop-cpp search`: every candidate plan, written as FASOP's CSV table.
void add_search_command(CLI::App& app);

}  // namespace fasop
