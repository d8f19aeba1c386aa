#pragma once
#include <algorithm>

#include "specs/cluster_spec.h"
#include "specs/gpu_spec.h"

namespace fasop {

/// A link as one GPU of a group sees it: latency, bandwidth and what a collective reaches of
/// it. The only place the choice between NVLink and the network is made (docs/cost-model.md#links).
struct Link {
  double latency_s = 0;
  double bits_per_s = 0;
  CollectiveEfficiency collective;  ///< what a collective reaches of the bandwidth on it
  /// A ring over it: the nodes it spans and the latency of its steps inside a node.
  int ring_nodes = 1;
  double intra_node_latency_s = 0;

  /// One message of `bytes` at the full bandwidth (sends, the embedding exchange).
  double seconds(double bytes) const { return latency_s + 8 * bytes / bits_per_s; }
  /// One message of `bytes` at the share of the bandwidth a collective reaches at that size.
  double collective_seconds(double bytes) const { return latency_s + 8 * bytes / (bits_per_s * collective.at(bytes)); }
  /// Streaming `bytes` at a collective's share, no latency (one of several messages at once).
  double stream_s(double bytes) const { return bytes == 0 ? 0 : bytes * 8 / (bits_per_s * collective.at(bytes)); }
  /// A ring all-reduce of `bytes` over `ranks` GPUs, every step at latency_s.
  double ring_allreduce_s(double bytes, int ranks) const {
    return collective.ring_allreduce_s(bytes, ranks, latency_s, bits_per_s);
  }
  /// The mean latency of a ring all-reduce's 2(r - 1) steps over `ranks` ranks: as NCCL's
  /// tuning model counts them, 2 x nodes steps cross the network and the rest stay on a node.
  double ring_step_latency_s(int ranks) const {
    const double steps = 2.0 * (ranks - 1), network = ring_nodes > 1 ? std::min(steps, 2.0 * ring_nodes) : steps;
    return steps > 0 ? (network * latency_s + (steps - network) * intra_node_latency_s) / steps : latency_s;
  }
};

/// NVLink of a node of type `type` (or of its NVLink domain): every GPU on its own ports.
Link nvlink_of(const NodeType& type);

/// The network between nodes of types `a` and `b`, whose bandwidth `sharing` GPUs of a node
/// share as they send at once: the larger latency, the smaller bandwidth, the lower bus share.
Link network_between(const NodeType& a, const NodeType& b, double sharing);

/// The network of nodes of type `type`, shared by `sharing` GPUs of a node.
inline Link network_of(const NodeType& type, double sharing) { return network_between(type, type, sharing); }

/// The link of a group of `group_gpus` GPUs laid out on consecutive GPUs of nodes of type
/// `type`, as the layer profiles see it (no placement): NVLink while the group fits within the
/// node's NVLink reach (NodeType::nvlink_gpus), else the network, which all the node's GPUs
/// share as every group sends at once.
Link group_link(const NodeType& type, int group_gpus);

}  // namespace fasop
