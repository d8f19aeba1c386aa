#include "emit/unit_names.h"

#include <map>

namespace fasop {

std::vector<UnitName> unit_names(const ModelSpec& model) {
  std::map<std::string, int> next;  // per segment: each stack numbers its layers from 0
  std::vector<UnitName> names;
  for (const LayerUnit& unit : model.units)
    names.push_back({unit.type, unit.role == LayerRole::kTransformer ? next[unit.segment]++ : -1});
  return names;
}

}  // namespace fasop
