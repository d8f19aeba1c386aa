#include "emit/unit_names.h"

namespace fasop {

std::vector<UnitName> unit_names(const ModelSpec& model) {
  const std::vector<int> indices = model.segment_layer_indices();
  std::vector<UnitName> names;
  for (size_t u = 0; u < model.units.size(); ++u) names.push_back({model.units[u].type, indices[u]});
  return names;
}

}  // namespace fasop
