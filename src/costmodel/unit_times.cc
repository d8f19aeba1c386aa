#include "costmodel/unit_times.h"

#include <string>

#include "specs/spec_error.h"

namespace fasop {

UnitTimes profile_unit_times(const ModelSpec& model, const ProfileSpec& profile, int tp, int mbs) {
  UnitTimes times;
  times.compute_s.reserve(model.units.size());
  times.layer_comm_s.reserve(model.units.size());
  for (size_t u = 0; u < model.units.size(); ++u) {
    const std::string& layer = model.units[u].type;
    if (u > 0 && layer == model.units[u - 1].type) {  // runs of one layer type: look up once
      times.compute_s.push_back(times.compute_s.back());
      times.layer_comm_s.push_back(times.layer_comm_s.back());
      continue;
    }
    if (!profile.has(layer, tp))
      throw SpecError(profile.source + ": no forward time of layer type '" + layer + "' at tp " + std::to_string(tp) +
                      "; profile it or choose another --tp");
    times.compute_s.push_back(profile.forward_backward_time_s(layer, tp, mbs));
    times.layer_comm_s.push_back(profile.layer_comm_time_s(layer, tp, mbs));
  }
  return times;
}

UnitTimeTable::UnitTimeTable(const ModelSpec& model, const NodeTypeProfiles& profiles, const std::vector<int>& tps,
                             const std::vector<int>& mbss)
    : profiles_(profiles) {
  for (size_t type = 0; type < profiles.size(); ++type) {
    const ProfileSpec* profile = profiles[type];
    if (!profile) continue;
    for (int tp : tps) {
      bool complete = true;
      for (const LayerUnit& unit : model.units) complete = complete && profile->has(unit.type, tp);
      if (!complete) continue;  // make_plan_context reports the missing layer where a layout needs it
      for (int mbs : mbss) times_[{int(type), tp, mbs}] = profile_unit_times(model, *profile, tp, mbs);
    }
  }
}

const UnitTimes* UnitTimeTable::find(int type, const ProfileSpec* profile, int tp, int mbs) const {
  if (type < 0 || size_t(type) >= profiles_.size() || profiles_[type] != profile) return nullptr;
  auto it = times_.find({type, tp, mbs});
  return it == times_.end() ? nullptr : &it->second;
}

}  // namespace fasop
