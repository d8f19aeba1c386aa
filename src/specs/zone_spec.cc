#include "specs/zone_spec.h"

#include "specs/spec_error.h"

namespace fasop {

const ZonePair* ZoneSpec::find_pair(const std::string& a, const std::string& b) const {
  for (const ZonePair& pair : pairs)
    if ((pair.zone_a == a && pair.zone_b == b) || (pair.zone_a == b && pair.zone_b == a)) return &pair;
  return nullptr;
}

const ZoneLink& ZoneSpec::link(const std::string& a, const std::string& b) const {
  if (!given)
    throw SpecError("zones '" + a + "' and '" + b + "': nodes in two zones but the cluster has no zones: data; "
                    "give zones: {inter_zone_bandwidth_bits_per_s, inter_zone_latency_s, egress_usd_per_gb}");
  const ZonePair* pair = find_pair(a, b);
  return pair ? pair->link : inter_zone;
}

}  // namespace fasop
