#pragma once
#include <string>
#include <vector>

#include "costmodel/plan_context.h"
#include "specs/cluster_spec.h"
#include "specs/model_spec.h"

namespace fasop {

/// A tensor-parallel degree that a node type's profile has no times for: a measured profile
/// covers the tps it was run at, and the search leaves the others out rather than failing.
struct ProfileTpGap {
  int tp = 1;
  std::string profile_source;  ///< the profile file lacking it
  std::string layer_type;      ///< the first of the model's layer types it lacks at tp
};

/// For each tp of at most `max_tp` dividing some profiled node type's GPUs per node
/// (ascending), the first profile (in node type order) lacking one of the model's layer types
/// at that tp. Types without a profile (nullptr) are not consulted.
std::vector<ProfileTpGap> profile_tp_gaps(const ModelSpec& model, const ClusterSpec& cluster,
                                          const NodeTypeProfiles& profiles, int max_tp);

}  // namespace fasop
