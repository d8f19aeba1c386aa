// The one place NVLink and the network are chosen (specs/link.h), with numbers by hand.
#include <catch2/catch.hpp>

#include "specs/link.h"

using namespace fasop;

namespace {

NodeType node_type(int gpus_per_node, double intra_bits_per_s, double inter_bits_per_s, double network_bus_share) {
  NodeType type{.name = "n", .gpu = "g", .gpus_per_node = gpus_per_node};
  type.intra_node_bandwidth_bits_per_s = intra_bits_per_s;
  type.inter_node_bandwidth_bits_per_s = inter_bits_per_s;
  type.intra_node_latency_s = 5e-6;
  type.inter_node_latency_s = 20e-6;
  type.gpu_data.nvlink.bus_share = 0.8;
  type.gpu_data.network.bus_share = network_bus_share;
  return type;
}

}  // namespace

TEST_CASE("a group uses NVLink while it fits in a node's NVLink reach, else the network shared by the node") {
  const NodeType h100 = node_type(8, 3.6e12, 3.2e12, 0.9);
  const Link inside = group_link(h100, 8);
  CHECK(inside.latency_s == 5e-6);
  CHECK(inside.bits_per_s == 3.6e12);
  CHECK(inside.collective.bus_share == 0.8);
  const Link across = group_link(h100, 16);
  CHECK(across.latency_s == 20e-6);
  CHECK(across.bits_per_s == Approx(4e11));  // 3.2 Tb/s over 8 GPUs
  CHECK(across.collective.bus_share == 0.9);
  NodeType nvl72 = h100;
  nvl72.gpus_per_node = 4;
  nvl72.nvlink_domain_nodes = 18;
  CHECK(group_link(nvl72, 72).bits_per_s == 3.6e12);
  CHECK(group_link(nvl72, 144).bits_per_s == Approx(8e11));
}

TEST_CASE("the network between two node types: the larger latency, the smaller bandwidth, the lower bus share") {
  NodeType fast = node_type(8, 3.6e12, 3.2e12, 0.9), slow = node_type(4, 1e12, 4e11, 0.7);
  slow.inter_node_latency_s = 30e-6;
  const Link link = network_between(fast, slow, 4);
  CHECK(link.latency_s == 30e-6);
  CHECK(link.bits_per_s == Approx(1e11));
  CHECK(link.collective.bus_share == 0.7);
  CHECK(network_between(slow, fast, 4).collective.bus_share == 0.7);
  // 1 MB at 1e11 b/s: 80 us + 30 us latency; a ring of 4 ranks moves 2 x 3/4 of it over 6 steps.
  CHECK(link.seconds(1e6) == Approx(110e-6));
  CHECK(link.ring_allreduce_s(1e6, 4) == Approx(6 * 30e-6 + 1.5 * 8e6 / (1e11 * 0.7)));
}
