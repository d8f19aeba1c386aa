#include "specs/nvlink_domain.h"

#include <map>

#include "specs/cluster_spec.h"

namespace fasop {

int nvlink_segment_nodes(int domain_nodes, int job_nodes) {
  if (domain_nodes <= 1 || job_nodes <= 1) return 1;
  if (job_nodes <= domain_nodes) return job_nodes;
  for (int segment = domain_nodes; segment > 1; --segment)
    if (job_nodes % segment == 0) return segment;
  return 1;
}

std::vector<int> nvlink_domains(const ClusterSpec& cluster, const std::vector<int>& node_order) {
  bool any = false;
  for (int type : node_order) any = any || cluster.node_types[type].nvlink_domain_nodes > 1;
  if (!any) return {};
  std::map<int, int> nodes_of_type;
  for (int type : node_order) ++nodes_of_type[type];
  // Per type: the segment's size, how many of its nodes came so far, and its first domain id.
  std::map<int, int> segment, seen, first_id;
  int next_id = 0;
  for (const auto& [type, nodes] : nodes_of_type) {
    segment[type] = nvlink_segment_nodes(cluster.node_types[type].nvlink_domain_nodes, nodes);
    first_id[type] = next_id;
    next_id += (nodes + segment[type] - 1) / segment[type];
  }
  std::vector<int> domains;
  domains.reserve(node_order.size());
  for (int type : node_order) domains.push_back(first_id[type] + seen[type]++ / segment[type]);
  return domains;
}

}  // namespace fasop
