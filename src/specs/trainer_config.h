#pragma once
// A trainer config (`launch --trainer-config`): what a training engine needs besides the plan
// (data or mock data, tokenizer, iterations, learning rate, logging, checkpoints) and the
// environment its nodes run in. The shipped defaults are configs/trainers/megatron-mock.yaml,
// torchtitan-short.yaml and megatron-bridge-mock.yaml, one a stack (launch --stack).
#include <string>
#include <utility>
#include <vector>

namespace fasop {

/// One command-line argument of the trainer: its flag with the leading "--" (Megatron-LM's
/// dashed, torchtitan's dotted, run_recipe.py's with underscores) and its values (none for a
/// switch such as --mock-data).
struct TrainerArg {
  std::string flag;
  std::vector<std::string> values;
};

/// A trainer config file read and checked.
struct TrainerConfig {
  std::string source;           ///< the file or preset it came from, for messages
  std::string megatron_script;  ///< field megatron_script ("" where the file gives none)
  std::vector<TrainerArg> args;  ///< field args, in the file's order; a `false` switch is left out
  std::vector<std::pair<std::string, std::string>> env;  ///< field env, in the file's order
};

/// Parses a trainer config. `args` maps flags without the leading -- to a value, a list of
/// values, true (a switch) or false (left out); `env` maps variable names to values. Throws
/// SpecError naming `source`, the field and the fix.
TrainerConfig parse_trainer_config(const std::string& yaml_text, const std::string& source);

}  // namespace fasop
