#include "specs/cluster_spec.h"

#include <algorithm>

namespace fasop {

int ClusterSpec::gpus_per_node() const {
  int fewest = node_types.front().gpus_per_node;
  for (const NodeType& t : node_types) fewest = std::min(fewest, t.gpus_per_node);
  return fewest;
}

bool ClusterSpec::uniform_gpus_per_node() const {
  return std::all_of(node_types.begin(), node_types.end(),
                     [&](const NodeType& t) { return t.gpus_per_node == node_types.front().gpus_per_node; });
}

int ClusterSpec::num_gpus() const {
  int gpus = 0;
  for (int type : nodes) gpus += node_types[type].gpus_per_node;
  return gpus;
}

double ClusterSpec::price_usd_per_s() const {
  double usd = 0;
  for (size_t type = 0; type < node_types.size(); ++type)
    usd += node_types[type].price_usd_per_hour / 3600 * node_count(int(type));
  return usd;
}

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

std::vector<std::string> ClusterSpec::zone_names() const {
  std::vector<std::string> names;
  for (const NodeType& t : node_types)
    if (std::find(names.begin(), names.end(), t.zone) == names.end()) names.push_back(t.zone);
  return names;
}

bool ClusterSpec::multi_zone() const {
  return std::any_of(node_types.begin(), node_types.end(), [&](const NodeType& t) { return t.zone != node_types.front().zone; });
}

}  // namespace fasop
