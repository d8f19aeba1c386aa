#pragma once
// The profiled times of every pipeline unit on a node type at one (tp, micro-batch size), looked
// up once per search rather than once per layout: they do not depend on the cluster's shape.
#include <map>
#include <tuple>
#include <vector>

#include "costmodel/plan_context.h"

namespace fasop {

/// One node type's forward-plus-backward time of each unit, and the communication inside it
/// (tensor, context and expert parallel), at one (tp, micro-batch size).
struct UnitTimes {
  std::vector<double> compute_s;
  std::vector<double> layer_comm_s;
};

/// The profile's times of every unit of `model` at (tp, mbs): measured backward, else twice the
/// forward. Throws SpecError naming the profile when it has no time of a layer type at tp.
UnitTimes profile_unit_times(const ModelSpec& model, const ProfileSpec& profile, int tp, int mbs);

/// UnitTimes of every node type at every (tp, mbs) of a search, built before the search fans
/// out and read-only while it runs (threads share it).
class UnitTimeTable {
 public:
  /// Each node type's times at every tp its profile has and every mbs of `mbss`.
  UnitTimeTable(const ModelSpec& model, const NodeTypeProfiles& profiles, const std::vector<int>& tps,
                const std::vector<int>& mbss);
  /// The times of node type `type` at (tp, mbs), if tabulated from this very profile; else null.
  const UnitTimes* find(int type, const ProfileSpec* profile, int tp, int mbs) const;

 private:
  NodeTypeProfiles profiles_;
  std::map<std::tuple<int, int, int>, UnitTimes> times_;
};

}  // namespace fasop
