#include "search/search_space.h"

#include <algorithm>
#include <functional>

#include "costmodel/parallel_dims_checks.h"
#include "costmodel/speed_split_checks.h"
#include "specs/batch_split.h"
#include "specs/parallel_rules.h"

namespace fasop {

const std::vector<FixedDimField>& fixed_dim_fields() {
  static const std::vector<FixedDimField> fields{{"tp", &FixedDims::tp}, {"dp", &FixedDims::dp}, {"pp", &FixedDims::pp},
                                                 {"mbs", &FixedDims::mbs}, {"cp", &FixedDims::cp}, {"ep", &FixedDims::ep}};
  return fields;
}

std::vector<int> default_expert_degrees(int experts) {
  std::vector<int> degrees = {1};
  for (int ep = 2; ep <= std::min(experts, 64); ep *= 2)
    if (experts % ep == 0) degrees.push_back(ep);
  return degrees;
}

std::vector<int> divisors(int n) {
  std::vector<int> out;
  for (int d = 1; d <= n; ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

namespace {


/// The node-type blocks of a type-block placement: their node types and GPUs, in rank order.
struct TypeBlocks {
  std::vector<int> types, gpus;
  TypeBlocks(const ClusterSpec& cluster, const std::vector<int>& placement) {
    for (size_t n = 0; n < placement.size(); ++n) {
      if (n == 0 || placement[n] != placement[n - 1]) types.push_back(placement[n]), gpus.push_back(0);
      gpus.back() += cluster.node_types[placement[n]].gpus_per_node;
    }
  }
};

/// The tps a block of node type `type` may take: divisors of its node's GPUs (capped at FASOP's
/// max_tp) that split whole heads beyond FASOP's space.
std::vector<int> block_tps(const ModelSpec& model, const ClusterSpec& cluster, int type, const SearchSpaceOptions& options) {
  const int node = cluster.node_types[type].gpus_per_node;
  std::vector<int> tps;
  for (int tp : divisors(options.max_tp > 0 ? std::min(node, options.max_tp) : node))
    if (options.max_tp > 0 || (model.heads % tp == 0 && model.kv_heads % tp == 0)) tps.push_back(tp);
  return tps;
}

/// The layouts with a tp (`type_tp`, one per block) and a dp per node type of `placement`
/// (type blocks): each type's GPUs form stages of its tp x its dp; the pipeline micro-batch (mbs
/// x the largest dp) splits over every stage's replicas. Without `vary_dp` every block takes one
/// dp; layouts uniform in both tp and dp are the plain ones, left out.
template <typename Add>
void add_block_layouts(const ModelSpec& model, const TypeBlocks& blocks, const std::vector<int>& type_tp, bool vary_dp,
                       bool uneven, Add add) {
  const int gbs = model.global_batch;
  const bool uniform_tp = std::all_of(type_tp.begin(), type_tp.end(), [&](int t) { return t == type_tp[0]; });
  std::vector<int> type_dp(blocks.types.size(), 1);
  // Every choice of each block's dp (a divisor of its GPUs / tp that divides the batch).
  std::function<void(size_t)> choose = [&](size_t i) {
    if (i == blocks.types.size()) {
      const int largest = *std::max_element(type_dp.begin(), type_dp.end());
      const bool uniform_dp = std::all_of(type_dp.begin(), type_dp.end(), [&](int d) { return d == largest; });
      if (uniform_dp && uniform_tp) return;
      std::vector<int> stage_dp, stage_tp;
      for (size_t b = 0; b < blocks.types.size(); ++b) {
        const int stages = blocks.gpus[b] / (type_tp[b] * type_dp[b]);
        stage_dp.insert(stage_dp.end(), stages, type_dp[b]);
        stage_tp.insert(stage_tp.end(), stages, type_tp[b]);
      }
      int pp = static_cast<int>(stage_dp.size());
      if (pp > model.num_transformer_layers()) return;
      for (int mbs : divisors(uneven ? gbs : gbs / largest)) {
        if (uneven && mbs > (gbs + largest - 1) / largest) break;
        int samples = mbs * largest;  // a pipeline micro-batch
        if (!uneven && std::any_of(type_dp.begin(), type_dp.end(), [&](int d) { return samples % d != 0; })) continue;
        PlanKey key{.mbs = mbs, .tp = *std::max_element(type_tp.begin(), type_tp.end()), .dp = largest, .pp = pp};
        if (!uniform_dp) key.stage_dp = stage_dp;
        if (!uniform_tp) key.stage_tp = stage_tp;
        key.uneven_dp = splits_batch_unevenly(gbs, key);
        add(key);
      }
      return;
    }
    if (blocks.gpus[i] % type_tp[i] != 0) return;
    for (int d : divisors(blocks.gpus[i] / type_tp[i])) {
      if (!(uneven ? d <= gbs : gbs % d == 0) || (!vary_dp && i > 0 && d != type_dp[0])) continue;
      type_dp[i] = d;
      choose(i + 1);
    }
  };
  choose(0);
}

/// The layouts with a dp per node type of `placement` at every uniform tp (Metis-style), then
/// with --stage-tp those whose blocks take different tps (Sailor-style; a dp per block too
/// with per_stage_dp).
template <typename Add>
void add_per_type_layouts(const ModelSpec& model, const ClusterSpec& cluster, const std::vector<int>& placement,
                          int max_tp, const SearchSpaceOptions& options, Add add) {
  const TypeBlocks blocks(cluster, placement);
  if (blocks.types.size() < 2) return;
  const bool fasop_tp = options.max_tp > 0;
  auto with_placement = [&](PlanKey key) {
    key.node_order = placement;
    add(key);
  };
  if (options.per_stage_dp)
    for (int tp : divisors(max_tp)) {
      if (!fasop_tp && (model.heads % tp != 0 || model.kv_heads % tp != 0)) continue;
      add_block_layouts(model, blocks, std::vector<int>(blocks.types.size(), tp), true, options.uneven_dp, with_placement);
    }
  if (!options.per_stage_tp) return;
  std::vector<int> type_tp(blocks.types.size());
  std::function<void(size_t)> choose = [&](size_t i) {
    if (i == blocks.types.size()) {
      if (std::any_of(type_tp.begin(), type_tp.end(), [&](int t) { return t != type_tp[0]; }))
        add_block_layouts(model, blocks, type_tp, options.per_stage_dp, options.uneven_dp, with_placement);
      return;
    }
    for (int tp : block_tps(model, cluster, blocks.types[i], options)) {
      type_tp[i] = tp;
      choose(i + 1);
    }
  };
  choose(0);
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
  const int cp = *std::max_element(options.cp.begin(), options.cp.end());
  return 1LL * largest_tp(cluster, options) * cp * model.global_batch * model.num_transformer_layers();
}

namespace {

/// Whether `key` runs some stage at a tp of `skipped`.
bool uses_skipped_tp(const PlanKey& key, const std::vector<int>& skipped) {
  auto skipped_tp = [&](int tp) { return std::find(skipped.begin(), skipped.end(), tp) != skipped.end(); };
  return skipped_tp(key.tp) || std::any_of(key.stage_tp.begin(), key.stage_tp.end(), skipped_tp);
}

/// Whether Megatron-LM's interleaved schedule runs `key` with `v` chunks a rank: a layout
/// places any split of the `layers` layers, in whole rounds of pp micro-batches.
bool interleaves(const PlanKey& key, int v, int layers, int global_batch) {
  return v == 1 ||
         (key.pp > 1 && key.pp * v <= layers && slowest_replica_microbatches(global_batch, key) % key.pp == 0);
}

/// Every variant of `key` the options ask for (ZeRO, recomputation, sequence parallelism,
/// virtual stages), each passed to `emit`.
template <typename Emit>
void for_each_variant(const ModelSpec& model, const SearchSpaceOptions& options, int layers, PlanKey key, Emit emit) {
  if (!options.fixed.matches(key) || uses_skipped_tp(key, options.skipped_tp)) return;
  const bool moe = model.moe.enabled();
  for (int zero : options.zero_stages) {
    if (zero > 0 && key.dp * key.cp == 1) continue;  // nothing to shard
    for (RecomputeMode recompute : options.recompute)
      for (bool sp : options.sequence_parallel) {
        if (sp && key.tp == 1) continue;  // nothing to split
        // Megatron-LM runs experts with tp only under sequence parallelism.
        if (moe && key.tp > 1 && !sp) {
          if (std::find(options.sequence_parallel.begin(), options.sequence_parallel.end(), true) !=
              options.sequence_parallel.end())
            continue;  // the sp variant comes
          sp = true;
        }
        for (int v : options.virtual_stages) {
          if (!interleaves(key, v, layers, model.global_batch)) continue;
          key.zero_stage = zero;
          key.set_recompute(recompute);
          key.recompute_modules = options.recompute_modules;
          key.sequence_parallel = sp;
          key.virtual_stages = v;
          if (options.ep_comm_overlap && key.ep > 1 && !ep_overlap_runs(key)) continue;
          emit(key);
        }
      }
  }
}

/// The uniform layouts (one tp and dp on every stage) and their variants that `keep` keeps,
/// without a placement: they do not depend on it.
std::vector<PlanKey> uniform_layouts(const ModelSpec& model, const ClusterSpec& cluster,
                                     const SearchSpaceOptions& options, int max_tp, int layers,
                                     const LayoutFilter& keep) {
  const int gpus = cluster.num_gpus(), gbs = model.global_batch;
  const bool fasop_tp = options.max_tp > 0;
  std::vector<PlanKey> uniform;
  for (int mbs : divisors(gbs)) {
    for (int tp : divisors(max_tp)) {
      if (!fasop_tp && (model.heads % tp != 0 || model.kv_heads % tp != 0)) continue;
      for (int cp : options.cp) {
        if (gpus % (tp * cp) != 0) continue;
        for (int dp : divisors(gpus / (tp * cp))) {
          int pp = gpus / (tp * cp * dp);
          if (pp > layers || !batch_split_allowed(gbs, mbs, dp, options.uneven_dp)) continue;
          for (int ep : options.ep) {
            PlanKey key{.mbs = mbs, .tp = tp, .dp = dp, .pp = pp};
            key.cp = cp;
            key.ep = ep;
            key.uneven_dp = splits_batch_unevenly(gbs, key);
            // Context and expert parallelism only where Megatron-LM runs them (parallel_dims_checks.h).
            if (!context_parallel_fault(model, cluster, key).empty()) continue;
            if (ep > 1 && !expert_layout_fault(model, cluster, key).empty()) continue;
            for (MoeDispatcher dispatcher : options.moe_dispatchers) {
              if (!tried_at_ep(dispatcher, ep)) continue;
              key.moe_dispatcher = dispatcher;
              if (!moe_dispatcher_fault(model, cluster, key).empty()) continue;
              for (const std::string& precision : options.precisions) {
                key.precision = precision;
                for_each_variant(model, options, layers, key, [&](const PlanKey& k) {
                  if (!keep || keep(k)) uniform.push_back(k);
                });
              }
            }
          }
        }
      }
    }
  }
  return uniform;
}

}  // namespace

std::vector<PlanKey> enumerate_plan_keys(const ModelSpec& model, const ClusterSpec& cluster,
                                         const SearchSpaceOptions& options, const LayoutFilter& keep) {
  const int layers = model.num_transformer_layers();  // counted once: it walks the units
  const int max_tp =
      options.max_tp > 0 ? std::min(cluster.gpus_per_node(), options.max_tp) : cluster.gpus_per_node();
  const std::vector<std::vector<int>> placements =
      options.placements == PlacementKind::kCyclic ? cyclic_placements(cluster) : type_block_placements(cluster);
  // The uniform layouts are listed (and filtered) once, then emitted for each placement with
  // its speed-split variant where that applies.
  const std::vector<PlanKey> uniform = uniform_layouts(model, cluster, options, max_tp, layers, keep);
  std::vector<PlanKey> keys;
  auto add = [&](PlanKey key) {
    keys.push_back(key);
    if (options.speed_split && speed_split_applies(cluster, key)) {
      key.speed_split = true;
      keys.push_back(key);
    }
  };
  for (const std::vector<int>& placement : placements) {
    for (PlanKey key : uniform) {
      key.node_order = placement;
      add(key);
    }
    if ((options.per_stage_dp || options.per_stage_tp) && options.placements == PlacementKind::kTypeBlocks)
      add_per_type_layouts(model, cluster, placement, max_tp, options,
                           [&](const PlanKey& key) { for_each_variant(model, options, layers, key, add); });
  }
  return keys;
}

}  // namespace fasop
