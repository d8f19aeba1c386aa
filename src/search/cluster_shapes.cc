#include "search/cluster_shapes.h"

#include <string>

namespace fasop {

NodeCounts inventory_limits(const ClusterSpec& inventory) {
  NodeCounts limits(inventory.node_types.size(), 0);
  for (int type : inventory.nodes) ++limits[type];
  return limits;
}

std::vector<NodeCounts> cluster_shapes(const NodeCounts& limits) {
  std::vector<NodeCounts> shapes;
  NodeCounts counts(limits.size(), 0);
  // Odometer over the counts, last type fastest.
  while (true) {
    bool any = false;
    for (int c : counts) any = any || c > 0;
    if (any) shapes.push_back(counts);
    int digit = static_cast<int>(counts.size()) - 1;
    while (digit >= 0 && counts[digit] == limits[digit]) counts[digit--] = 0;
    if (digit < 0) return shapes;
    ++counts[digit];
  }
}

double shape_count(const NodeCounts& limits) {
  double count = 1;
  for (int limit : limits) count *= limit + 1.0;
  return count - 1;
}

ClusterSpec shape_cluster(const ClusterSpec& inventory, const NodeCounts& counts) {
  ClusterSpec cluster;
  cluster.name = inventory.name + "[" + shape_label(inventory, counts) + "]";
  cluster.source = inventory.source;
  cluster.node_types = inventory.node_types;
  cluster.zones = inventory.zones;
  for (size_t type = 0; type < counts.size(); ++type)
    cluster.nodes.insert(cluster.nodes.end(), counts[type], static_cast<int>(type));
  return cluster;
}

long long shape_gpus(const ClusterSpec& inventory, const NodeCounts& counts) {
  long long gpus = 0;
  for (size_t t = 0; t < counts.size(); ++t) gpus += 1LL * counts[t] * inventory.node_types[t].gpus_per_node;
  return gpus;
}

double shape_price_usd_per_s(const ClusterSpec& inventory, const NodeCounts& counts) {
  double usd = 0;
  for (size_t t = 0; t < counts.size(); ++t) usd += inventory.node_types[t].price_usd_per_hour / 3600 * counts[t];
  return usd;
}

std::string shape_label(const ClusterSpec& inventory, const NodeCounts& counts) {
  std::string label;
  for (size_t type = 0; type < counts.size(); ++type) {
    if (counts[type] == 0) continue;
    if (!label.empty()) label += "+";
    label += std::to_string(counts[type]) + "x" + inventory.node_types[type].gpu;
  }
  return label;
}

NodeCounts counts_of(const ClusterSpec& inventory, const std::vector<int>& node_order) {
  NodeCounts counts(inventory.node_types.size(), 0);
  for (int type : node_order) ++counts[type];
  return counts;
}

}  // namespace fasop
