#pragma once
#include <CLI/CLI.hpp>

namespace fasop {

/// `fasop-cpp schedule --plan PLAN --format slapo|atorch|megatron|deepspeed|deepspeed-pipeline
/// [-o FILE]`: a saved plan in the form a training framework takes.
void add_schedule_command(CLI::App& app);

}  // namespace fasop
