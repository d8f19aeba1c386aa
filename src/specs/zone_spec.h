#pragma once
// Zones of a cluster (Sailor-style multi-zone training): node types name the zone their nodes
// are in, and the cluster file's `zones:` gives the link between nodes in different zones and
// the price of the bytes that leave a zone.
#include <string>
#include <vector>

namespace fasop {

/// The link between two nodes in different zones: what each node gets of it and what the
/// bytes that cross it cost.
struct ZoneLink {
  double bandwidth_bits_per_s = 0;  ///< per node, shared by its GPUs that send at once
  double latency_s = 0;             ///< per message
  double egress_usd_per_gb = 0;     ///< USD per 1e9 bytes that leave a zone over it
};

/// One entry of `zones.pairs`: the link between two named zones, in either direction.
struct ZonePair {
  std::string zone_a;
  std::string zone_b;
  ZoneLink link;
};

/// A cluster's zones (field `zones:`): the link between any two different zones, and
/// overrides for some pairs. Node types name their zone (NodeType::zone); those that name none
/// are all in the zone "". Without `zones:` every node type is in one zone.
struct ZoneSpec {
  bool given = false;   ///< the cluster file has `zones:`
  ZoneLink inter_zone;  ///< between any two different zones without an override
  std::vector<ZonePair> pairs;

  /// The link between zone `a` and zone `b` (two different zones): the pair's override, in
  /// either order, else inter_zone. Throws SpecError where `zones:` was not given (a copy of a
  /// cluster that dropped its zones, as the loader requires them for two zones).
  const ZoneLink& link(const std::string& a, const std::string& b) const;
  /// The pair's override of `a` and `b` in either order, or null.
  const ZonePair* find_pair(const std::string& a, const std::string& b) const;
};

}  // namespace fasop
