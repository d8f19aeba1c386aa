#include "specs/cluster_spec.h"

#include <algorithm>

namespace fasop {

int ClusterSpec::node_count(int node_type) const {
  return static_cast<int>(std::count(nodes.begin(), nodes.end(), node_type));
}

int ClusterSpec::find_node_type(const std::string& name) const {
  for (size_t i = 0; i < node_types.size(); ++i)
    if (node_types[i].name == name) return static_cast<int>(i);
  return -1;
}

bool ClusterSpec::is_heterogeneous() const {
  return std::any_of(nodes.begin(), nodes.end(), [&](int t) { return t != nodes.front(); });
}

}  // namespace fasop
