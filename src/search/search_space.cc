#include "search/search_space.h"

#include <algorithm>
#include <functional>

namespace fasop {

std::vector<int> divisors(int n) {
  std::vector<int> out;
  for (int d = 1; d <= n; ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

namespace {


/// The layouts with a dp per node type of `placement` (type blocks): each type's GPUs form
/// stages of tp x its dp; the pipeline micro-batch (mbs x the largest dp) splits over every
/// stage's replicas. Layouts whose types all share one dp are the uniform ones, left out.
template <typename Add>
void add_per_type_dp_layouts(const ModelSpec& model, const ClusterSpec& cluster, const std::vector<int>& placement,
                             int max_tp, bool fasop_tp, Add add) {
  std::vector<int> blocks, block_gpus;  // node types in placement order, and their GPUs
  for (size_t n = 0; n < placement.size(); ++n) {
    if (n == 0 || placement[n] != placement[n - 1]) blocks.push_back(placement[n]), block_gpus.push_back(0);
    block_gpus.back() += cluster.node_types[placement[n]].gpus_per_node;
  }
  if (blocks.size() < 2) return;
  const int gbs = model.global_batch;
  for (int tp : divisors(max_tp)) {
    if (!fasop_tp && (model.heads % tp != 0 || model.kv_heads % tp != 0)) continue;
    std::vector<int> type_dp(blocks.size(), 1);
    // Every choice of each block's dp (a divisor of its GPUs / tp that divides the batch).
    std::function<void(size_t)> choose = [&](size_t i) {
      if (i == blocks.size()) {
        int largest = *std::max_element(type_dp.begin(), type_dp.end());
        if (std::all_of(type_dp.begin(), type_dp.end(), [&](int d) { return d == largest; })) return;
        std::vector<int> stage_dp;
        for (size_t b = 0; b < blocks.size(); ++b)
          stage_dp.insert(stage_dp.end(), block_gpus[b] / (tp * type_dp[b]), type_dp[b]);
        int pp = static_cast<int>(stage_dp.size());
        if (pp > model.num_transformer_layers()) return;
        for (int mbs : divisors(gbs / largest)) {
          int samples = mbs * largest;  // a pipeline micro-batch
          if (std::any_of(type_dp.begin(), type_dp.end(), [&](int d) { return samples % d != 0; })) continue;
          PlanKey key{mbs, tp, largest, pp, placement};
          key.stage_dp = stage_dp;
          add(key);
        }
        return;
      }
      if (block_gpus[i] % tp != 0) return;
      for (int d : divisors(block_gpus[i] / tp)) {
        if (gbs % d != 0) continue;
        type_dp[i] = d;
        choose(i + 1);
      }
    };
    choose(0);
  }
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
  options.recompute = {RecomputeMode::kNone, RecomputeMode::kFull};
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

int largest_tp(const ClusterSpec& cluster, const SearchSpaceOptions& options) {
  int node = 0;
  for (const NodeType& t : cluster.node_types) node = std::max(node, t.gpus_per_node);
  return options.max_tp > 0 ? std::min(node, options.max_tp) : node;
}

long long most_layout_gpus(const ModelSpec& model, const ClusterSpec& cluster, const SearchSpaceOptions& options) {
  return 1LL * largest_tp(cluster, options) * model.global_batch * model.num_transformer_layers();
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
  // Megatron-LM's interleaved schedule: v equal chunks a rank, whole rounds of pp micro-batches.
  auto interleaves = [&](const PlanKey& key, int v) {
    return v == 1 || (key.pp > 1 && model.num_transformer_layers() % (key.pp * v) == 0 &&
                      (gbs / (key.mbs * key.dp)) % key.pp == 0);
  };
  auto add = [&](PlanKey key) {
    if (!options.fixed.matches(key)) return;
    for (int zero : options.zero_stages) {
      if (zero > 0 && key.dp == 1) continue;  // nothing to shard
      for (RecomputeMode recompute : options.recompute)
        for (bool sp : options.sequence_parallel) {
          if (sp && key.tp == 1) continue;  // nothing to split
          for (int v : options.virtual_stages) {
            if (!interleaves(key, v)) continue;
            key.zero_stage = zero;
            key.set_recompute(recompute);
            key.sequence_parallel = sp;
            key.virtual_stages = v;
            keys.push_back(key);
          }
        }
    }
  };
  for (const std::vector<int>& placement : placements) {
    for (int mbs : divisors(gbs)) {
      for (int tp : divisors(max_tp)) {
        if (!fasop_tp && (model.heads % tp != 0 || model.kv_heads % tp != 0)) continue;
        for (int dp : divisors(gpus / tp)) {
          int pp = gpus / (tp * dp);
          if (gbs % dp != 0 || pp > model.num_transformer_layers() || (gbs / dp) % mbs != 0) continue;
          add(PlanKey{mbs, tp, dp, pp, placement});
        }
      }
    }
    if (options.per_stage_dp && options.placements == PlacementKind::kTypeBlocks)
      add_per_type_dp_layouts(model, cluster, placement, max_tp, fasop_tp, add);
  }
  return keys;
}

}  // namespace fasop
