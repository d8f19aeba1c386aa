#include "search/search_space.h"

#include <algorithm>

namespace fasop {
namespace {

std::vector<int> divisors(int n) {
  std::vector<int> out;
  for (int d = 1; d <= n; ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

}  // namespace

std::vector<std::vector<int>> cyclic_placements(const ClusterSpec& cluster) {
  std::vector<std::vector<int>> placements;
  const std::vector<int>& nodes = cluster.nodes;
  for (size_t shift = 0; shift < nodes.size(); ++shift) {
    std::vector<int> order(nodes.begin() + shift, nodes.end());
    order.insert(order.end(), nodes.begin(), nodes.begin() + shift);
    if (std::find(placements.begin(), placements.end(), order) == placements.end())
      placements.push_back(order);
  }
  return placements;
}

SearchSpaceOptions SearchSpaceOptions::beyond_fasop() {
  SearchSpaceOptions options;
  options.max_tp = 0;
  options.zero_stages = {0, 1, 2, 3};
  options.recompute = {false, true};
  options.placements = PlacementKind::kTypeBlocks;
  return options;
}

std::vector<std::vector<int>> type_block_placements(const ClusterSpec& cluster) {
  std::vector<int> types;
  for (int t : cluster.nodes)
    if (std::find(types.begin(), types.end(), t) == types.end()) types.push_back(t);
  std::vector<int> order(types.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::vector<std::vector<int>> placements;
  do {
    std::vector<int> nodes;
    for (int i : order) nodes.insert(nodes.end(), cluster.node_count(types[i]), types[i]);
    placements.push_back(nodes);
  } while (std::next_permutation(order.begin(), order.end()));
  return placements;
}

std::vector<PlanKey> enumerate_plan_keys(const ModelSpec& model, const ClusterSpec& cluster,
                                         const SearchSpaceOptions& options) {
  const int gpus = cluster.num_gpus();
  const int gbs = model.global_batch;
  std::vector<PlanKey> keys;
  const bool fasop_tp = options.max_tp > 0;
  const int max_tp = fasop_tp ? std::min(cluster.gpus_per_node(), options.max_tp) : cluster.gpus_per_node();
  const std::vector<std::vector<int>> placements =
      options.placements == PlacementKind::kCyclic ? cyclic_placements(cluster) : type_block_placements(cluster);
  for (const std::vector<int>& placement : placements) {
    for (int mbs : divisors(gbs)) {
      for (int tp : divisors(max_tp)) {
        if (!fasop_tp && (model.heads % tp != 0 || model.kv_heads % tp != 0)) continue;
        for (int dp : divisors(gpus / tp)) {
          int pp = gpus / (tp * dp);
          if (gbs % dp != 0 || pp > model.num_transformer_layers() || (gbs / dp) % mbs != 0) continue;
          for (int zero : options.zero_stages) {
            if (zero > 0 && dp == 1) continue;  // nothing to shard
            for (bool recompute : options.recompute) {
              PlanKey key{mbs, tp, dp, pp, placement};
              key.zero_stage = zero;
              key.recompute = recompute;
              keys.push_back(key);
            }
          }
        }
      }
    }
  }
  return keys;
}

}  // namespace fasop
