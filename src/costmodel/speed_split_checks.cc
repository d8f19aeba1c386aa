#include "costmodel/speed_split_checks.h"

#include <algorithm>

#include "specs/spec_error.h"

namespace fasop {
namespace {

int tp_of(const PlanKey& key, int stage) { return key.stage_tp.empty() ? key.tp : key.stage_tp[stage]; }
int dp_of(const PlanKey& key, int stage) { return key.stage_dp.empty() ? key.dp : key.stage_dp[stage]; }

/// The node holding `rank`, nodes in `key`'s rank order (`starts`: where each node's ranks start).
int node_at(const std::vector<int>& starts, int rank) {
  return int(std::upper_bound(starts.begin(), starts.end(), rank) - starts.begin()) - 1;
}

bool mixes(const std::vector<int>& types) {
  return std::any_of(types.begin(), types.end(), [&](int t) { return t != types.front(); });
}

}  // namespace

std::vector<std::vector<int>> replica_node_types(const ClusterSpec& cluster, const PlanKey& key) {
  std::vector<int> starts{0};
  for (int type : key.node_order) starts.push_back(starts.back() + cluster.node_types[type].gpus_per_node);
  std::vector<std::vector<int>> types(key.pp);
  for (int s = 0, first = 0; s < key.pp; first += tp_of(key, s) * dp_of(key, s), ++s) {
    const int tp = tp_of(key, s);
    for (int r = 0; r < dp_of(key, s); ++r) {
      const int a = node_at(starts, first + r * tp), b = node_at(starts, first + r * tp + tp - 1);
      int type = key.node_order[a];
      for (int node = a + 1; node <= b; ++node)
        if (key.node_order[node] != type) type = -1;
      types[s].push_back(type);
    }
  }
  return types;
}

bool speed_split_applies(const ClusterSpec& cluster, const PlanKey& key) {
  bool some_stage_mixes = false;
  for (const std::vector<int>& stage : replica_node_types(cluster, key)) {
    if (std::find(stage.begin(), stage.end(), -1) != stage.end()) return false;
    some_stage_mixes = some_stage_mixes || mixes(stage);
  }
  return some_stage_mixes;
}

void validate_speed_split_nodes(const ClusterSpec& cluster, const PlanKey& key) {
  if (!key.speed_split) return;
  const std::vector<std::vector<int>> types = replica_node_types(cluster, key);
  for (int s = 0; s < key.pp; ++s)
    for (size_t r = 0; r < types[s].size(); ++r)
      if (types[s][r] < 0)
        throw SpecError("--speed-split: replica " + std::to_string(r) + " of stage " + std::to_string(s) +
                        " has GPUs on nodes of two types, so it has no one speed; choose a tp whose groups stay "
                        "on one node type, or drop --speed-split");
}

void validate_speed_split_policy(const PlanKey& key, const std::string& policy_name) {
  if (key.speed_split && policy_name == "fasop")
    throw SpecError("--speed-split: the fasop policy runs every replica of a stage at one speed; use --policy analytic");
}

}  // namespace fasop
