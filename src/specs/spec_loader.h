#pragma once
#include <string>

#include "specs/cluster_spec.h"
#include "specs/model_spec.h"
#include "specs/profile_spec.h"

namespace fasop {

// Parse and validate spec YAML text. `source` names the file in error messages.
// Every problem throws SpecError naming the source, the field and the fix.
ModelSpec parse_model(const std::string& yaml_text, const std::string& source);
ClusterSpec parse_cluster(const std::string& yaml_text, const std::string& source);
ProfileSpec parse_profile(const std::string& yaml_text, const std::string& source);

}  // namespace fasop
