#include "specs/link.h"

#include <algorithm>

namespace fasop {

Link nvlink_of(const NodeType& type) {
  return {.latency_s = type.intra_node_latency_s, .bits_per_s = type.intra_node_bandwidth_bits_per_s,
          .collective = type.gpu_data.nvlink};
}

Link network_between(const NodeType& a, const NodeType& b, double sharing) {
  return {.latency_s = std::max(a.inter_node_latency_s, b.inter_node_latency_s),
          .bits_per_s = std::min(a.inter_node_bandwidth_bits_per_s, b.inter_node_bandwidth_bits_per_s) / sharing,
          .collective = a.gpu_data.network.bus_share <= b.gpu_data.network.bus_share ? a.gpu_data.network
                                                                                     : b.gpu_data.network};
}

Link group_link(const NodeType& type, int group_gpus) {
  return group_gpus <= type.nvlink_gpus() ? nvlink_of(type) : network_of(type, type.gpus_per_node);
}

}  // namespace fasop
