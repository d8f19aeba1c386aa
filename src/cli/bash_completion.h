#pragma once
// Shell completion: `fasop-cpp completion bash` prints a bash script built from the command
// tree itself, so it never lags behind a new flag.
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace fasop {

/// Names a flag's value may complete to beyond files: the presets of --model and --cluster.
struct CompletionWords {
  std::vector<std::string> models;
  std::vector<std::string> clusters;
};

/// A bash script defining `_fasop_cpp` and registering it for fasop-cpp: subcommands and
/// flags of the command typed so far, the choices of flags that take one of a set
/// ("--format slapo|atorch|..."), preset names after --model and --cluster, files elsewhere.
std::string bash_completion_script(const CLI::App& root, const CompletionWords& words);

/// Adds `completion bash`; call it after every other command is added.
void add_completion_command(CLI::App& app);

}  // namespace fasop
