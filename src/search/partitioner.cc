#include "search/partitioner.h"

#include <algorithm>
#include <limits>
#include <set>
#include <string>

#include "costmodel/estimate.h"
#include "costmodel/fasop_policy.h"
#include "costmodel/make_context.h"
#include "specs/spec_error.h"

namespace fasop {

bool fits_memory(const PlanContext& ctx, const std::vector<int>& partition) {
  if (!ctx.partition_memory) return true;
  for (int s = 0, first = 0; s < int(partition.size()); first += partition[s], ++s)
    if (!ctx.partition_memory->fits(s, first, first + partition[s])) return false;
  return true;
}

namespace {

/// Stage times FASOP's greedy balances: compute, plus the incoming send for middle stages.
/// Stage costs index units from 0 whatever the stage's position (FASOP's quirk for T5's decoder
/// half), and a single stage costs the whole model.
std::vector<double> greedy_stage_times(const PlanContext& ctx, const std::vector<int>& partition,
                                       const std::vector<int>& stage_types) {
  const int stages = static_cast<int>(partition.size());
  if (stages == 1) {
    const std::vector<double>& units = ctx.unit_compute_s[stage_types[0]];
    return {stage_compute_s(units, 0, static_cast<int>(units.size()))};
  }
  std::vector<double> times;
  int first = 0;
  for (int s = 0; s < stages; ++s) {
    double t = stage_compute_s(ctx.unit_compute_s[stage_types[s]], first, partition[s]);
    if (s > 0 && s < stages - 1) t += ctx.boundary_send_s[s - 1];
    times.push_back(t);
    first += partition[s];
  }
  return times;
}

/// FASOP's minmax over `num_units` units and the given stage node types. When FASOP's last
/// step changes the partition after its stage times were taken, `timed` receives the partition
/// those times belong to (the one FASOP's reported estimate describes).
std::vector<int> fasop_minmax(const PlanContext& ctx, int num_units, const std::vector<int>& stage_types,
                              std::vector<int>* timed = nullptr) {
  const int pp = static_cast<int>(stage_types.size());
  std::vector<int> partition(pp, num_units / pp);
  // FASOP hands the remainder to the last stage first, then to stages 0, 1, ...
  for (int i = 0; i < num_units - (num_units / pp) * pp; ++i) partition[(i - 1 + pp) % pp] += 1;
  std::vector<std::vector<int>> history{partition};
  double last_max = 1000000;
  bool moved = false;
  int max_index = 0, min_index = 0;
  while (true) {
    std::vector<double> times = greedy_stage_times(ctx, partition, stage_types);
    double max_time = *std::max_element(times.begin(), times.end());
    auto undo = [&] {
      partition[max_index] += 1;
      partition[min_index] -= 1;
    };
    if (max_time > last_max && moved) {
      undo();
      break;
    }
    if (max_time == last_max && moved &&
        std::find(history.begin(), history.end() - 1, partition) != history.end() - 1) {
      undo();
      break;
    }
    last_max = max_time;
    max_index = int(std::max_element(times.begin(), times.end()) - times.begin());
    min_index = int(std::min_element(times.begin(), times.end()) - times.begin());
    if ((max_index == 0 || max_index == pp - 1) && partition[max_index] == 2) {
      if (timed) *timed = partition;
      if (moved) undo();  // FASOP does not re-time this partition
      break;
    }
    if (partition[max_index] <= 1) break;
    partition[max_index] -= 1;
    partition[min_index] += 1;
    moved = true;
    history.push_back(partition);
  }
  return partition;
}

/// Sizes of the model's segments, in order (one segment for most models).
std::vector<int> segment_sizes(const ModelSpec& model) {
  std::vector<int> sizes;
  for (size_t u = 0; u < model.units.size(); ++u) {
    if (u == 0 || model.units[u].segment != model.units[u - 1].segment) sizes.push_back(0);
    ++sizes.back();
  }
  return sizes;
}

bool is_valid_partition(const ModelSpec& model, const std::vector<int>& partition) {
  return find_partition_fault(model, static_cast<int>(partition.size()), partition).kind == PartitionFault::kNone;
}


/// A partition the search may use: valid, and within memory where the policy requires it.
bool is_allowed(const PlanContext& ctx, const std::vector<int>& partition) {
  return is_valid_partition(*ctx.model, partition) && fits_memory(ctx, partition);
}

}  // namespace

std::vector<int> fasop_greedy_partition(const PlanContext& ctx, const CostPolicy& policy,
                                        std::vector<int>* timed) {
  const ModelSpec& model = *ctx.model;
  const int pp = ctx.pp();
  if (segment_sizes(model).size() != 2 || pp == 1)
    return fasop_minmax(ctx, model.num_units(), ctx.stage_node_type, timed);
  // Encoder-decoder: FASOP tries every split of the stages between the two halves.
  const int half = model.num_units() / 2;
  std::vector<int> best;
  double best_pipeline = 1000000;
  for (int encoder_stages = 1; encoder_stages < std::min(pp, half); ++encoder_stages) {
    int decoder_stages = pp - encoder_stages;
    if (decoder_stages > model.num_transformer_layers() / 2) continue;
    std::vector<int> types_en(ctx.stage_node_type.begin(), ctx.stage_node_type.begin() + encoder_stages);
    std::vector<int> types_de(ctx.stage_node_type.begin() + encoder_stages, ctx.stage_node_type.end());
    std::vector<int> partition = fasop_minmax(ctx, half, types_en);
    std::vector<int> decoder = fasop_minmax(ctx, half, types_de);
    partition.insert(partition.end(), decoder.begin(), decoder.end());
    double pipeline = simulate_1f1b(policy.stage_timings(ctx, partition), ctx.num_microbatches).pipeline_s;
    if (pipeline < best_pipeline) {
      best_pipeline = pipeline;
      best = partition;
    }
  }
  return best;
}

namespace {

/// What the dynamic programs need: prefix sums of unit compute at each stage's speed, and where
/// each unit's segment starts (a stage [first, end) is allowed iff first and end-1 share it).
/// A speed-split stage counts its units' floor times (PlanContext::stage_floor_unit_s): the
/// floors stay floors, and the exact partitioners' seeds balance them.
struct CutCosts {
  std::vector<std::vector<double>> prefix;  ///< prefix[t][u]: units [0, u) at node type t's speed (then split stages')
  std::vector<int> stage_type;              ///< each stage's table: its node type, or a split stage's own
  std::vector<int> segment_start;

  explicit CutCosts(const PlanContext& ctx) : stage_type(ctx.stage_node_type) {
    const int n = ctx.num_units();
    prefix.resize(ctx.unit_compute_s.size());
    for (int s = 0; s < ctx.pp(); ++s) {
      if (ctx.splits_stage(s)) stage_type[s] = int(prefix.size()), prefix.emplace_back();
      const int t = stage_type[s];
      if (!prefix[t].empty()) continue;
      const std::vector<double>& units = ctx.stage_floor_unit_s(s);
      prefix[t].assign(n + 1, 0);
      for (int u = 0; u < n; ++u) prefix[t][u + 1] = prefix[t][u] + units[u];
    }
    segment_start.resize(n);
    for (int u = 0; u < n; ++u)
      segment_start[u] = u > 0 && ctx.model->units[u].segment == ctx.model->units[u - 1].segment
                             ? segment_start[u - 1] : u;
  }
  double stage(int s, int first, int end) const {
    const std::vector<double>& p = prefix[stage_type[s]];
    return p[end] - p[first];
  }
};

/// Dynamic programming over cut points: every stage non-empty and inside one segment.
/// `combine(best so far, stage cost)` folds a stage into the objective (max or sum); stages
/// dearer than `cap` are not allowed. Returns {} when no partition fits.
template <typename Combine>
std::vector<int> partition_dp(const CutCosts& costs, int pp, double cap, Combine combine) {
  const int n = static_cast<int>(costs.segment_start.size());
  const double inf = std::numeric_limits<double>::infinity();
  // best[s][u]: objective of units [0, u) on stages [0, s]; cut[s][u]: where stage s starts.
  std::vector<std::vector<double>> best(pp, std::vector<double>(n + 1, inf));
  std::vector<std::vector<int>> cut(pp, std::vector<int>(n + 1, -1));
  for (int u = 1; u <= n && costs.segment_start[u - 1] == 0; ++u)
    if (costs.stage(0, 0, u) <= cap) best[0][u] = combine(0.0, costs.stage(0, 0, u));
  for (int s = 1; s < pp; ++s) {
    for (int u = s + 1; u <= n - (pp - 1 - s); ++u) {
      // Widen the stage leftwards until it costs too much or leaves its segment.
      for (int first = u - 1; first >= s; --first) {
        double stage = costs.stage(s, first, u);
        if (stage > cap || costs.segment_start[first] != costs.segment_start[u - 1]) break;
        if (best[s - 1][first] == inf) continue;
        double value = combine(best[s - 1][first], stage);
        if (value < best[s][u] || (value == best[s][u] && first < cut[s][u])) {
          best[s][u] = value;
          cut[s][u] = first;
        }
      }
    }
  }
  if (best[pp - 1][n] == inf) return {};
  std::vector<int> partition(pp);
  for (int s = pp - 1, end = n; s >= 0; --s) {
    int first = s == 0 ? 0 : cut[s][end];
    partition[s] = end - first;
    end = first;
  }
  return partition;
}

std::vector<int> min_bottleneck(const CutCosts& costs, int pp) {
  return partition_dp(costs, pp, std::numeric_limits<double>::infinity(),
                      [](double a, double b) { return std::max(a, b); });
}

std::vector<int> min_total(const CutCosts& costs, int pp, double cap_s) {
  return partition_dp(costs, pp, cap_s, [](double a, double b) { return a + b; });
}

double max_stage(const CutCosts& costs, const std::vector<int>& partition) {
  double worst = 0;
  for (int s = 0, first = 0; s < int(partition.size()); first += partition[s], ++s)
    worst = std::max(worst, costs.stage(s, first, first + partition[s]));
  return worst;
}

/// The partition that minimises CostPolicy::step_time_lower_bound exactly. The bound is the
/// latest of the chains "stages before k pass micro-batch 0 through, stage k works all m
/// micro-batches", so right to left: best[s][u] = the least latest chain of stages s.. on units
/// [u, n), counted from stage s's start; a stage [u, v) adds itself before the chains behind it.
/// Stage 0 adds its all-reduce, which depends on its units. Sends do not depend on the units.
struct LowerBoundPartition {
  std::vector<int> partition;  ///< {} if no partition is valid, or none's bound is below the cap
  double value_s = 0;          ///< its lower bound: no partition's step time is below it
};

/// Where stage s may start when every stage's compute stays below `stage_cap`: at or after
/// first[s] (the stages from s on can cover the rest) and at or before last[s] (the stages
/// before s can reach it). Segments are ignored and the bounds kept loose where a unit is too
/// dear for a stage's type, which only widens the ranges. Empty when no partition can.
struct StageStarts {
  std::vector<int> first, last;
};

StageStarts stage_starts(const CutCosts& costs, int pp, double stage_cap) {
  const int n = static_cast<int>(costs.segment_start.size());
  StageStarts starts;
  if (stage_cap == std::numeric_limits<double>::infinity()) {  // every start the stage count allows
    for (int s = 0; s <= pp; ++s) starts.first.push_back(s), starts.last.push_back(n - (pp - s));
    return starts;
  }
  starts.first.assign(pp + 1, n);
  starts.last.assign(pp + 1, 0);
  // From a later start a stage ends no earlier, unless it cannot pass that start: so the latest
  // end is the one from the latest start, or that start itself.
  for (int s = 0; s < pp; ++s) {
    int v = starts.last[s];
    while (v < n && costs.stage(s, starts.last[s], v + 1) < stage_cap) ++v;
    starts.last[s + 1] = std::max(v, s + 1);
  }
  for (int s = pp - 1; s >= 0; --s) {
    int u = starts.first[s + 1];
    while (u > 0 && costs.stage(s, u - 1, starts.first[s + 1]) < stage_cap) --u;
    starts.first[s] = std::min(u, n - (pp - s));
  }
  if (starts.last[pp] < n || starts.first[0] > 0) return {};
  return starts;
}

/// min_lower_bound below `cap_s`: stages that alone reach the cap are never tried, and when no
/// partition's bound is below it the result has no partition and the cap as its value.
/// `communication`: false leaves out the sends, the all-reduce and the embedding sync (each at
/// least 0): a floor under the full one that needs only the stages' types and unit times.
LowerBoundPartition min_lower_bound(const PlanContext& ctx, const CostPolicy& policy, const CutCosts& costs,
                                    double cap_s = std::numeric_limits<double>::infinity(),
                                    bool communication = true) {
  const int n = static_cast<int>(costs.segment_start.size()), pp = ctx.pp(), m = ctx.num_microbatches;
  const double inf = std::numeric_limits<double>::infinity();
  const LowerBoundPartition none{{}, cap_s};
  // The embedding sync ends every chain: the chains before it must stay below cap_s minus it.
  const double embedding_s = communication ? policy.embedding_allreduce_s(ctx) : 0, chain_cap_s = cap_s - embedding_s;
  // A stage's passes take at least this x its units' compute (recomputation adds to it).
  const double passes = policy.pass_time_factor(ctx);
  // Widened a little, so that rounding never drops a stage the chains below keep.
  const StageStarts starts = stage_starts(costs, pp, chain_cap_s / (m * passes) * (1 + 1e-9));
  if (starts.first.empty()) return none;
  std::vector<int> probe(pp, 1);
  probe.back() = n - (pp - 1);
  std::vector<double> pass(pp, 0);  // sends the chain crosses when it passes stage s
  if (communication) {
    const std::vector<StageTiming> sends = policy.stage_timings(ctx, probe);
    for (int s = 0; s + 1 < pp; ++s) pass[s] = sends[s].forward_send_s + sends[s + 1].backward_send_s;
  }
  // best[s * (n+1) + u]; cut: where stage s ends. Reused by the thread's next layout. A chain
  // of cap_s or more counts as none: it stays inf.
  static thread_local std::vector<double> best;
  static thread_local std::vector<int> cut;
  best.assign(size_t(pp) * (n + 1), inf);
  cut.assign(size_t(pp) * (n + 1), -1);
  auto at = [n](int s, int u) { return size_t(s) * (n + 1) + u; };
  for (int u = std::max(pp - 1, starts.first[pp - 1]); u <= starts.last[pp - 1] && u < n; ++u) {
    const double chain = m * (costs.stage(pp - 1, u, n) * passes);
    if (costs.segment_start[u] == costs.segment_start[n - 1] && chain < chain_cap_s) best[at(pp - 1, u)] = chain;
  }
  for (int s = pp - 2; s >= 1; --s) {
    const double* prefix = costs.prefix[costs.stage_type[s]].data();
    const double* behind = &best[at(s + 1, 0)];
    const int* segment = costs.segment_start.data();
    for (int u = std::max(s, starts.first[s]); u <= std::min(n - (pp - s), starts.last[s]); ++u) {
      double here = chain_cap_s;
      int here_cut = -1;
      for (int v = std::max(u + 1, starts.first[s + 1]); v <= n - (pp - 1 - s); ++v) {
        double t = (prefix[v] - prefix[u]) * passes;
        // The stage alone only grows with v: no longer stage can do better.
        if (m * t >= here || segment[v - 1] != segment[u]) break;
        double value = std::max(m * t, t + pass[s] + behind[v]);  // inf stays inf
        if (value < here) {
          here = value;
          here_cut = v;
        }
      }
      if (here_cut >= 0) best[at(s, u)] = here, cut[at(s, u)] = here_cut;
    }
  }
  std::vector<int> partition(pp, 0);
  double best_total = chain_cap_s;
  for (int v = std::max(1, starts.first[1]); v <= std::min(n - (pp - 1), starts.last[1]); ++v) {
    double t = costs.stage(0, 0, v) * passes;
    if (m * t >= best_total || costs.segment_start[v - 1] != 0) break;
    double rest = best[at(1, v)];
    if (rest == inf) continue;
    double value = std::max(m * t, t + pass[0] + rest);
    if (value >= best_total) continue;  // the all-reduce only adds
    probe[0] = v;
    probe.back() = n - v - (pp - 2);
    if (communication) value += policy.dp_allreduce_s(ctx, probe)[0];
    if (value < best_total) {
      best_total = value;
      partition[0] = v;
    }
  }
  if (partition[0] == 0) return none;
  for (int s = 1, u = partition[0]; s < pp; ++s) {
    int v = s == pp - 1 ? n : cut[at(s, u)];
    partition[s] = v - u;
    u = v;
  }
  return {partition, best_total + embedding_s};
}

}  // namespace

std::vector<int> exact_bottleneck_partition(const PlanContext& ctx) {
  const CutCosts costs(ctx);
  const int n = ctx.num_units(), pp = ctx.pp();
  const MemoryModel* memory = ctx.partition_memory ? &*ctx.partition_memory : nullptr;
  // What a stage sends per micro-batch besides its compute: forward to the next stage,
  // gradients to the previous one.
  std::vector<double> sends(pp, 0);
  for (int s = 0; s < pp; ++s) {
    if (s + 1 < pp) sends[s] += ctx.boundary_send_s[s];
    if (s > 0) sends[s] += ctx.boundary_send_s[s - 1];
  }
  const double inf = std::numeric_limits<double>::infinity();
  static thread_local std::vector<double> best;
  static thread_local std::vector<int> cut;
  best.assign(size_t(pp) * (n + 1), inf);
  cut.assign(size_t(pp) * (n + 1), -1);
  auto at = [n](int s, int u) { return size_t(s) * (n + 1) + u; };
  for (int u = 1; u <= n - (pp - 1) && costs.segment_start[u - 1] == 0; ++u) {
    if (memory && !memory->fits(0, 0, u)) break;  // memory only grows with the stage
    best[at(0, u)] = costs.stage(0, 0, u) + sends[0];
  }
  for (int s = 1; s < pp; ++s) {
    for (int u = s + 1; u <= n - (pp - 1 - s); ++u) {
      double& here = best[at(s, u)];
      // Widen the stage leftwards: its time and memory only grow.
      for (int first = u - 1; first >= s; --first) {
        double stage = costs.stage(s, first, u) + sends[s];
        if (stage >= here || costs.segment_start[first] != costs.segment_start[u - 1]) break;
        if (memory && !memory->fits(s, first, u)) break;
        double value = std::max(best[at(s - 1, first)], stage);
        if (value < here) {
          here = value;
          cut[at(s, u)] = first;
        }
      }
    }
  }
  if (best[at(pp - 1, n)] == inf) return {};
  std::vector<int> partition(pp);
  for (int s = pp - 1, end = n; s >= 0; --s) {
    int first = s == 0 ? 0 : cut[at(s, end)];
    partition[s] = end - first;
    end = first;
  }
  return partition;
}

std::vector<int> min_bottleneck_partition(const PlanContext& ctx) {
  return min_bottleneck(CutCosts(ctx), ctx.pp());
}

std::vector<int> min_total_partition(const PlanContext& ctx, double cap_s) {
  return min_total(CutCosts(ctx), ctx.pp(), cap_s);
}

std::vector<int> improve_partition(const PlanContext& ctx, const CostPolicy& policy,
                                   std::vector<int> current) {
  std::set<std::vector<int>> visited;
  const double current_s = step_time_s(ctx, policy, current);
  return descend(ctx, policy, std::move(current), current_s, visited).second;
}

std::pair<double, std::vector<int>> descend(const PlanContext& ctx, const CostPolicy& policy,
                                            std::vector<int> current, double current_s,
                                            std::set<std::vector<int>>& visited) {
  const int pp = ctx.pp();
  // A move is simulated only if its lower bound leaves it a chance to be the round's best; the
  // margin covers FASOP's single-precision sums. Cheapest bounds first find good moves early.
  constexpr double kBoundMargin = 1e-6;
  std::vector<std::pair<double, std::vector<int>>> moves;
  while (true) {
    // Steepest descent is deterministic: from a partition another descent passed through, it
    // ends where that one ended, which the caller already has.
    if (!visited.insert(current).second) return {current_s, current};
    moves.clear();
    for (int b = 0; b + 1 < pp; ++b) {
      for (int direction : {-1, +1}) {
        std::vector<int> candidate = current;
        candidate[b] += direction;
        candidate[b + 1] -= direction;
        if (!is_allowed(ctx, candidate)) continue;
        moves.emplace_back(policy.step_time_lower_bound(ctx, candidate), std::move(candidate));
      }
    }
    std::vector<size_t> order(moves.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return moves[a].first < moves[b].first; });
    // The steepest move; among equal step times the first in boundary order, as without bounds.
    size_t best = moves.size();
    double best_s = current_s;
    for (size_t i : order) {
      if (moves[i].first * (1 - kBoundMargin) >= best_s) break;
      double t = step_time_s(ctx, policy, moves[i].second);
      if (t < best_s || (t == best_s && best < moves.size() && i < best)) {
        best_s = t;
        best = i;
      }
    }
    if (best == moves.size()) return {current_s, current};
    current = moves[best].second;
    current_s = best_s;
  }
}

namespace {

/// Scores `candidates` exactly, dropping invalid and repeated ones: (step time, partition),
/// fastest first, ties in the given order.
std::vector<std::pair<double, std::vector<int>>> scored_seeds(const PlanContext& ctx, const CostPolicy& policy,
                                                              const std::vector<std::vector<int>>& candidates) {
  std::vector<std::pair<double, std::vector<int>>> seeds;
  for (const std::vector<int>& c : candidates) {
    if (!is_valid_partition(*ctx.model, c)) continue;
    bool seen = false;
    for (const auto& seed : seeds) seen = seen || seed.second == c;
    if (!seen) seeds.emplace_back(step_time_s(ctx, policy, c), c);
  }
  if (seeds.empty())
    throw SpecError("pp " + std::to_string(ctx.pp()) + ": no partition gives every stage a unit of one segment; "
                    "use fewer stages");
  std::stable_sort(seeds.begin(), seeds.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return seeds;
}

}  // namespace

std::vector<std::vector<int>> fasop_partitions(const PlanContext& ctx, const CostPolicy& policy) {
  if (ctx.pp() == 1) return {{ctx.num_units()}};
  std::vector<int> timed;
  std::vector<int> greedy = fasop_greedy_partition(ctx, policy, &timed);
  std::vector<std::vector<int>> out;
  for (const std::vector<int>* c : {&greedy, &timed})
    if (is_valid_partition(*ctx.model, *c) && (out.empty() || out.front() != *c)) out.push_back(*c);
  return out;
}

FloorPartition floor_partition(const PlanContext& ctx, const CostPolicy& policy, double cap_s) {
  if (ctx.pp() == 1) return {{ctx.num_units()}, step_time_s(ctx, policy, {ctx.num_units()})};
  LowerBoundPartition bound = min_lower_bound(ctx, policy, CutCosts(ctx), cap_s);
  if (cap_s != std::numeric_limits<double>::infinity() && (bound.partition.empty() || bound.value_s >= cap_s))
    return {{}, cap_s};
  if (bound.partition.empty())
    throw SpecError("pp " + std::to_string(ctx.pp()) + ": no partition gives every stage a unit of one segment; "
                    "use fewer stages");
  return {bound.partition, bound.value_s};
}

double compute_floor_s(const PlanContext& ctx, const CostPolicy& policy, double cap_s) {
  if (ctx.pp() == 1) return 0;
  const LowerBoundPartition bound = min_lower_bound(ctx, policy, CutCosts(ctx), cap_s, false);
  if (bound.partition.empty()) return cap_s == std::numeric_limits<double>::infinity() ? 0 : cap_s;
  return bound.value_s;
}

namespace {

/// Each unit at the fastest speed any stage has: the few distinct stage types, each unit's time
/// on the fastest of them, and their sum.
struct FastestStageUnits {
  std::vector<int> types;
  std::vector<double> unit_s;
  double whole_model_s = 0;
};

FastestStageUnits fastest_stage_units(const PlanContext& ctx) {
  FastestStageUnits fastest;
  for (int type : ctx.stage_node_type)
    if (std::find(fastest.types.begin(), fastest.types.end(), type) == fastest.types.end()) fastest.types.push_back(type);
  // A speed-split stage may run a unit faster than its slowest type (most layouts have none:
  // they are listed once, not looked for unit by unit).
  std::vector<int> split_stages;
  for (int s = 0; s < ctx.pp(); ++s)
    if (ctx.splits_stage(s)) split_stages.push_back(s);
  fastest.unit_s.assign(ctx.num_units(), std::numeric_limits<double>::infinity());
  for (int u = 0; u < ctx.num_units(); ++u) {
    for (int type : fastest.types) fastest.unit_s[u] = std::min(fastest.unit_s[u], ctx.unit_compute_s[type][u]);
    for (int s : split_stages) fastest.unit_s[u] = std::min(fastest.unit_s[u], ctx.split_floor_unit_s[s][u]);
    fastest.whole_model_s += fastest.unit_s[u];
  }
  return fastest;
}

/// The least ratio of `units` to `ref`, unit by unit (units without ref time apart).
double least_ratio(const std::vector<double>& units, const std::vector<double>& ref) {
  double ratio = std::numeric_limits<double>::infinity();
  for (size_t u = 0; u < ref.size(); ++u)
    if (ref[u] > 0) ratio = std::min(ratio, units[u] / ref[u]);
  return ratio;
}

}  // namespace

double coarse_step_time_floor_s(const PlanContext& ctx, const CostPolicy& policy) {
  const double whole_model = fastest_stage_units(ctx).whole_model_s * policy.pass_time_factor(ctx);
  // The pipeline runs the whole model once, and some stage m times its 1/pp share or more.
  return std::max(whole_model, ctx.num_microbatches * whole_model / ctx.pp()) + policy.embedding_allreduce_s(ctx);
}

bool some_partition_may_fit(const PlanContext& ctx) {
  if (!ctx.partition_memory) return true;
  const MemoryModel& m = *ctx.partition_memory;
  // Every stage holds at least its forward moment (the first); its rates' least over the stages
  // times the whole model's units bound the stages' sum from below.
  const double inf = std::numeric_limits<double>::infinity();
  double limits = 0, fixed = 0, per_param = inf, per_expert = inf, per_activation = inf;
  for (int s = 0; s < ctx.pp(); ++s) {
    const MemoryModel::MomentTotals& forward = m.stage_totals(s).front();
    limits += m.limit_bytes[s], fixed += forward.fixed;
    per_param = std::min(per_param, forward.per_param);
    per_expert = std::min(per_expert, forward.per_expert_param);
    per_activation = std::min(per_activation, forward.per_activation * m.held_samples[s]);
  }
  const double experts = m.expert_params_prefix.empty() ? 0 : m.expert_params_prefix.back();
  const double least = m.params_prefix.back() * per_param + experts * per_expert + m.activation_prefix.back() * per_activation + fixed;
  return least <= limits;
}

double stage_type_step_floor_s(const PlanContext& ctx, const CostPolicy& policy) {
  // ref(u): the unit's time on the fastest stage type; each stage type is r_t times slower at
  // the least. Stage s takes at least r_(t_s) x the ref time of its units, and the step at least
  // m times that, so the ref time of the whole model is at most T / m x sum_s 1 / r_(t_s).
  const FastestStageUnits fastest = fastest_stage_units(ctx);
  const std::vector<double>& ref = fastest.unit_s;
  const double whole_model = fastest.whole_model_s * policy.pass_time_factor(ctx);
  std::vector<double> ratio(ctx.cluster->node_types.size(), std::numeric_limits<double>::infinity());
  for (int type : fastest.types) ratio[type] = least_ratio(ctx.unit_compute_s[type], ref);
  double capacity = 0;
  for (int s = 0; s < ctx.pp(); ++s)
    capacity += 1 / (ctx.splits_stage(s) ? least_ratio(ctx.split_floor_unit_s[s], ref) : ratio[ctx.stage_node_type[s]]);
  const double work = capacity > 0 ? ctx.num_microbatches * whole_model / capacity : 0;
  return std::max(whole_model, work) + policy.embedding_allreduce_s(ctx);
}

FittingPartition exact_fitting_partition(const PlanContext& ctx) {
  FittingPartition result;
  if (ctx.pp() == 1) {
    result.partition = {ctx.num_units()};
    result.fits = fits_memory(ctx, result.partition);
    return result;
  }
  result.partition = exact_bottleneck_partition(ctx);
  if (!result.partition.empty()) return result;
  PlanContext unconstrained = ctx;
  unconstrained.partition_memory.reset();
  result.partition = exact_bottleneck_partition(unconstrained);
  result.fits = false;
  if (result.partition.empty())
    throw SpecError("pp " + std::to_string(ctx.pp()) + ": no partition gives every stage a unit of one segment; "
                    "use fewer stages");
  return result;
}

FittingStart fitting_start_partition(const PlanContext& ctx, const CostPolicy& policy) {
  FittingPartition exact = exact_fitting_partition(ctx);
  FittingStart start;
  start.partition = exact.partition;
  start.fits = exact.fits;
  start.step_s = step_time_s(ctx, policy, start.partition);
  if (ctx.pp() == 1) {
    start.floor_s = start.step_s;
    return start;
  }
  LowerBoundPartition bound = min_lower_bound(ctx, policy, CutCosts(ctx));
  start.floor_s = bound.value_s;
  if (!start.fits || bound.partition.empty() || bound.partition == start.partition || !fits_memory(ctx, bound.partition))
    return start;
  double bound_s = step_time_s(ctx, policy, bound.partition);
  if (bound_s < start.step_s) start.partition = bound.partition, start.step_s = bound_s;
  return start;
}

namespace {

/// best_partition where stages must fit their GPUs: the start (fitting_start_partition),
/// polished by descent among partitions that fit.
std::vector<int> best_fitting_partition(const PlanContext& ctx, const CostPolicy& policy) {
  FittingStart start = fitting_start_partition(ctx, policy);
  if (!start.fits) return start.partition;
  std::set<std::vector<int>> visited;
  return descend(ctx, policy, start.partition, start.step_s, visited).second;
}

}  // namespace

std::vector<int> best_partition(const PlanContext& ctx, const CostPolicy& policy) {
  if (ctx.pp() == 1) return {ctx.num_units()};
  if (ctx.partition_memory) return best_fitting_partition(ctx, policy);
  std::vector<int> timed;
  std::vector<std::vector<int>> candidates = {fasop_greedy_partition(ctx, policy, &timed), timed};
  // 1F1B costs about (m-1) x the slowest stage + the sum of all stages: balance the slowest
  // stage exactly, then trade a slightly slower bottleneck for less total compute; and the
  // partition whose step-time lower bound is least.
  const CutCosts costs(ctx);
  std::vector<int> balanced = min_bottleneck(costs, ctx.pp());
  candidates.push_back(balanced);
  if (!balanced.empty()) {
    double bottleneck = max_stage(costs, balanced);
    for (double slack : {1.0, 1.02, 1.05, 1.1, 1.25, 1.5, 2.0})
      candidates.push_back(min_total(costs, ctx.pp(), bottleneck * slack * (1 + 1e-12)));
    candidates.push_back(min_total(costs, ctx.pp(), std::numeric_limits<double>::infinity()));
  }
  // Polish the two best seeds by local search, and the partition whose step-time lower bound
  // is least: local optima differ, and each start finds plans the others miss.
  std::vector<std::pair<double, std::vector<int>>> seeds = scored_seeds(ctx, policy, candidates);
  seeds.resize(std::min<size_t>(seeds.size(), 2));
  std::vector<std::pair<double, std::vector<int>>> bound_seed =
      scored_seeds(ctx, policy, {min_lower_bound(ctx, policy, costs).partition});
  if (bound_seed.front().second != seeds.front().second &&
      (seeds.size() < 2 || bound_seed.front().second != seeds.back().second))
    seeds.push_back(bound_seed.front());
  std::vector<int> best = seeds.front().second;
  double best_s = seeds.front().first;
  std::set<std::vector<int>> visited;
  for (const auto& seed : seeds) {
    auto [t, improved] = descend(ctx, policy, seed.second, seed.first, visited);
    if (t < best_s) {
      best_s = t;
      best = std::move(improved);
    }
  }
  return best;
}

}  // namespace fasop
