#include "costmodel/speed_split_checks.h"

#include <algorithm>

#include "specs/spec_error.h"

namespace fasop {
namespace {

bool mixes(const std::vector<int>& types) {
  return std::any_of(types.begin(), types.end(), [&](int t) { return t != types.front(); });
}

}  // namespace

std::vector<std::vector<int>> replica_node_types(const PlanContext& layout) {
  std::vector<std::vector<int>> types(layout.pp());
  for (int s = 0; s < layout.pp(); ++s)
    for (int r = 0; r < layout.stage_dp(s); ++r) {
      const int a = layout.node_of(layout.stage_rank(s, r, 0));
      const int b = layout.node_of(layout.stage_rank(s, r, layout.stage_tp(s) - 1));
      int type = layout.key.node_order[a];
      for (int node = a + 1; node <= b; ++node)
        if (layout.key.node_order[node] != type) type = -1;
      types[s].push_back(type);
    }
  return types;
}

void require_one_type_per_replica(const std::vector<std::vector<int>>& types) {
  for (size_t s = 0; s < types.size(); ++s)
    for (size_t r = 0; r < types[s].size(); ++r)
      if (types[s][r] < 0)
        throw SpecError("--speed-split: replica " + std::to_string(r) + " of stage " + std::to_string(s) +
                        " has GPUs on nodes of two types, so it has no one speed; choose a tp whose groups stay "
                        "on one node type, or drop --speed-split");
}

bool speed_split_applies(const ClusterSpec& cluster, const PlanKey& key) {
  bool some_stage_mixes = false;
  for (const std::vector<int>& stage : replica_node_types(rank_layout_context(cluster, key))) {
    if (std::find(stage.begin(), stage.end(), -1) != stage.end()) return false;
    some_stage_mixes = some_stage_mixes || mixes(stage);
  }
  return some_stage_mixes;
}

void validate_speed_split_nodes(const ClusterSpec& cluster, const PlanKey& key) {
  if (key.speed_split) require_one_type_per_replica(replica_node_types(rank_layout_context(cluster, key)));
}

void validate_speed_split_policy(bool speed_split, const std::string& policy_name) {
  if (speed_split && policy_name == "fasop")
    throw SpecError("--speed-split: the fasop policy runs every replica of a stage at one speed; use --policy analytic");
}

}  // namespace fasop
