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

std::vector<PlanKey> enumerate_plan_keys(const ModelSpec& model, const ClusterSpec& cluster,
                                         const SearchSpaceOptions& options) {
  const int gpus = cluster.num_gpus();
  const int gbs = model.global_batch;
  std::vector<PlanKey> keys;
  for (const std::vector<int>& placement : cyclic_placements(cluster)) {
    for (int mbs : divisors(gbs)) {
      for (int tp : divisors(std::min(cluster.gpus_per_node(), options.max_tp))) {
        for (int dp : divisors(gpus / tp)) {
          int pp = gpus / (tp * dp);
          if (gbs % dp != 0 || pp > model.num_transformer_layers() || (gbs / dp) % mbs != 0) continue;
          keys.push_back({mbs, tp, dp, pp, placement});
        }
      }
    }
  }
  return keys;
}

}  // namespace fasop
