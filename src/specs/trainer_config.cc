#include "specs/trainer_config.h"

#include <regex>

#include "specs/yaml_field.h"

namespace fasop {
namespace {

/// True for an unquoted YAML true or false (a quoted "true" is a value like any other).
bool is_plain_bool(const YAML::Node& node, bool* value) {
  if (!node.IsScalar() || node.Tag() == "!") return false;
  const std::string& s = node.Scalar();
  if (s == "true" || s == "True" || s == "TRUE") return *value = true, true;
  if (s == "false" || s == "False" || s == "FALSE") return *value = false, true;
  return false;
}

std::string scalar_value(const Field& field) {
  if (!field.node.IsScalar()) field.fail("expected a value, a list of values, true or false");
  return field.node.Scalar();
}

void parse_args(const Field& args, TrainerConfig& config) {
  // Megatron-LM's flags take dashes, torchtitan's dots and underscores, run_recipe.py's underscores.
  static const std::regex flag_name("[a-z0-9][a-z0-9._-]*");
  for (const std::string& key : args.keys("a mapping of flags (without the leading --) to values, e.g. {train-iters: 100}")) {
    Field value = args.child(key);
    if (key.rfind("--", 0) == 0) value.fail("write the flag without the leading --, as '" + key.substr(2) + "'");
    if (!std::regex_match(key, flag_name))
      value.fail("not a flag name (lower-case letters, digits, dashes, dots and underscores)");
    TrainerArg arg{"--" + key, {}};
    bool on = false;
    if (is_plain_bool(value.node, &on)) {
      if (!on) continue;
    } else if (value.node.IsSequence()) {
      for (const Field& item : value.items("a list of values")) arg.values.push_back(scalar_value(item));
    } else if (value.present()) {
      arg.values.push_back(scalar_value(value));
    } else {
      value.fail("has no value; give one, or true for a switch");
    }
    config.args.push_back(std::move(arg));
  }
}

}  // namespace

TrainerConfig parse_trainer_config(const std::string& yaml_text, const std::string& source) {
  TrainerConfig config;
  config.source = source;
  Field root = load_root(yaml_text, source);
  root.only_keys({"args", "env", "megatron_script"});
  if (Field script = root.child("megatron_script"); script.present()) config.megatron_script = script.text();
  if (Field args = root.child("args"); args.present()) parse_args(args, config);
  if (Field env = root.child("env"); env.present()) config.env = environment_variables(env);
  return config;
}

}  // namespace fasop
