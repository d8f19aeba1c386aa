#include "specs/yaml_field.h"

namespace fasop {

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
