#include "search/profile_gaps.h"

#include <set>

#include "search/search_space.h"

namespace fasop {

std::vector<ProfileTpGap> profile_tp_gaps(const ModelSpec& model, const ClusterSpec& cluster,
                                          const NodeTypeProfiles& profiles, int max_tp) {
  std::set<int> tps;
  for (size_t type = 0; type < profiles.size() && type < cluster.node_types.size(); ++type)
    if (profiles[type])
      for (int tp : divisors(cluster.node_types[type].gpus_per_node))
        if (tp <= max_tp) tps.insert(tp);
  std::vector<ProfileTpGap> gaps;
  for (int tp : tps) {
    bool found = false;
    for (size_t type = 0; type < profiles.size() && !found; ++type) {
      const ProfileSpec* profile = profiles[type];
      if (!profile) continue;
      for (const LayerUnit& unit : model.units)
        if (!profile->has(unit.type, tp)) {
          gaps.push_back({tp, profile->source, unit.type});
          found = true;
          break;
        }
    }
  }
  return gaps;
}

}  // namespace fasop
