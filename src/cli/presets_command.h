#pragma once
#include <CLI/CLI.hpp>

namespace fasop {

/// `fasop-cpp presets list [KIND]` and `presets show NAME [--kind KIND]`: the shipped models,
/// clusters, GPU data, profiles and validation cases, and one of them as YAML to save and edit.
void add_presets_command(CLI::App& app);

}  // namespace fasop
