#include "cli/usage_typo.h"

#include <algorithm>
#include <cctype>

#include "specs/yaml_field.h"

namespace fasop {
namespace {

/// Every long and short flag name of `app` ("--model", "-q"), help included.
std::vector<std::string> flag_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* option : app.get_options()) {
    for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
    for (const std::string& name : option->get_snames()) names.push_back("-" + name);
  }
  return names;
}

/// The words that name `app` on the command line ("fasop-cpp plan").
std::string command_path(const CLI::App& app) {
  std::string path = app.get_name();
  for (const CLI::App* parent = app.get_parent(); parent; parent = parent->get_parent())
    path = (parent->get_name().empty() ? std::string("fasop-cpp") : parent->get_name()) + " " + path;
  return path.empty() ? "fasop-cpp" : path;
}

/// "; did you mean X?" with the nearest known word, else where to look.
std::string suggestion(const std::string& word, const std::vector<std::string>& known, const CLI::App& command) {
  // A word cut short ("--max-step") means the names it begins, before the nearest by spelling.
  std::vector<std::string> longer;
  for (const std::string& name : known)
    if (name.size() > word.size() && name.compare(0, word.size(), word) == 0) longer.push_back(name);
  if (!longer.empty()) {
    constexpr size_t kNamed = 4;
    std::string names;
    const size_t shown = std::min(longer.size(), kNamed);
    for (size_t i = 0; i < shown; ++i)
      names += (i == 0 ? "" : i + 1 == shown && shown == longer.size() ? " or " : ", ") + longer[i];
    if (shown < longer.size()) names += " (" + std::to_string(longer.size()) + " flags begin so)";
    return "; did you mean " + names + "?";
  }
  const std::string nearest = closest_name(word, known);
  return !nearest.empty() ? "; did you mean " + nearest + "?" : "; see " + command_path(command) + " --help";
}

}  // namespace

std::optional<std::string> usage_typo(const CLI::App& app, int argc, const char* const* argv) {
  const CLI::App* command = &app;
  bool operands = false;  // past a command's first operand: words are values
  bool value_next = false;  // the word before was a flag that takes a value (which may start with "-")
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--" || command->get_allow_extras()) break;  // what follows is passed on
    if (value_next) {
      value_next = false;
      continue;
    }
    if (word.size() > 1 && word[0] == '-' && !std::isdigit(static_cast<unsigned char>(word[1]))) {
      const size_t equals = word.find('=');
      const std::string name = word.substr(0, equals);
      const std::vector<std::string> known = flag_names(*command);
      if (std::find(known.begin(), known.end(), name) == known.end()) {
        if (name.size() > 2 && name[1] != '-') continue;  // short flags run together: CLI11 judges
        return "unknown flag " + name + " of " + command_path(*command) + suggestion(name, known, *command);
      }
      const CLI::Option* option = command->get_option_no_throw(name);
      value_next = equals == std::string::npos && option && option->get_type_size_min() > 0;
      continue;
    }
    if (operands) continue;
    // A word after a flag may be its value; a subcommand's name is taken as the subcommand.
    std::vector<std::string> subcommands;
    for (const CLI::App* sub : command->get_subcommands({}))
      if (!sub->get_name().empty()) subcommands.push_back(sub->get_name());
    if (std::find(subcommands.begin(), subcommands.end(), word) != subcommands.end()) {
      command = command->get_subcommand(word);
      continue;
    }
    // Right after a flag that takes no value here (a boolean, or --name=value), CLI11 judges the word.
    const bool follows_flag = i > 1 && argv[i - 1][0] == '-';
    if (!subcommands.empty() && !follows_flag && command->get_require_subcommand_min() > 0)
      return "unknown subcommand '" + word + "' of " + command_path(*command) + suggestion(word, subcommands, *command);
    if (!follows_flag && subcommands.empty()) operands = true;
  }
  return std::nullopt;
}

}  // namespace fasop
