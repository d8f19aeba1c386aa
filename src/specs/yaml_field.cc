#include "specs/yaml_field.h"

#include <regex>

namespace fasop {

std::vector<std::pair<std::string, std::string>> environment_variables(const Field& env) {
  if (!env.node.IsMap()) env.fail("expected a mapping of variable names to values, e.g. {NCCL_DEBUG: WARN}");
  static const std::regex variable("[A-Za-z_][A-Za-z0-9_]*");
  std::vector<std::pair<std::string, std::string>> variables;
  for (const auto& entry : env.node) {
    const std::string name = entry.first.as<std::string>();
    Field value = env.child(name);
    if (!std::regex_match(name, variable)) value.fail("not an environment variable name");
    if (!value.present() || !value.node.IsScalar()) value.fail("expected a value (\"\" for empty)");
    variables.emplace_back(name, value.node.Scalar());
  }
  return variables;
}

Field load_root(const std::string& yaml_text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw SpecError(source + ": malformed YAML at line " + std::to_string(e.mark.line + 1) + ": " +
                    e.msg);
  }
  if (!root.IsMap()) throw SpecError(source + ": expected a YAML mapping at the top level");
  return {source, root, ""};
}

}  // namespace fasop
