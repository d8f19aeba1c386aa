#include "search/bounded_pareto.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <unordered_map>

#include "costmodel/egress_floor.h"
#include "costmodel/estimate.h"
#include "costmodel/make_context.h"
#include "search/parallel_evaluate.h"
#include "search/pareto_steps.h"
#include "search/partitioner.h"
#include "search/shape_floor.h"

namespace fasop {
namespace {

/// Shapes whose every count lies between two corners.
struct ShapeBox {
  NodeCounts lo, hi;
  double shapes() const {
    double n = 1;
    for (size_t t = 0; t < lo.size(); ++t) n *= hi[t] - lo[t] + 1.0;
    return n;
  }
};

/// Enumeration indices: a shape's place in cluster_shapes order (the empty shape would be 0),
/// times this, plus the layout's place in the shape.
constexpr EnumerationIndex kLayoutsPerShape = EnumerationIndex(1) << 32;

EnumerationIndex shape_ordinal(const NodeCounts& counts, const NodeCounts& limits) {
  EnumerationIndex ordinal = 0;
  for (size_t t = 0; t < counts.size(); ++t) ordinal = ordinal * (limits[t] + 1) + counts[t];
  return ordinal;
}

std::optional<EgressFloor> egress_floor(const SearchInput& input) {
  const FloorFacts facts = input.policy->floor_facts();
  if (!facts.prices_zone_egress || !input.cluster->multi_zone()) return std::nullopt;
  return EgressFloor(*input.model, *input.cluster, facts.analytic ? facts.analytic->memory : MemorySettings{});
}

/// A shape's layout floors (ShapeFloor::layout_floor_s), each computed once: the floor reads a
/// layout's degrees, never its placement, and a shape lists each degree once per placement.
class LayoutFloors {
 public:
  LayoutFloors(const ShapeFloor& floor, const NodeCounts& counts) : floor_(floor), counts_(counts) {}
  double operator()(const PlanKey& key) {
    // Layouts the floors have no configuration for (virtual stages, per-stage degrees) get 0 at once.
    // The degrees in one word: tp < 2^8, mbs and dp < 2^16, pp < 2^16, ZeRO and recomputation < 2^4;
    // others are not kept.
    if (key.virtual_stages != 1 || !key.stage_tp.empty() || !key.stage_dp.empty() || key.tp >= 1 << 8 ||
        key.mbs >= 1 << 16 || key.dp >= 1 << 16 || key.pp >= 1 << 16)
      return floor_.layout_floor_s(counts_, key);
    const uint64_t degrees = uint64_t(key.tp) << 56 | uint64_t(key.mbs) << 40 | uint64_t(key.dp) << 24 |
                             uint64_t(key.pp) << 8 | uint64_t(key.zero_stage) << 4 | uint64_t(key.recompute_mode());
    const auto known = floors_.find(degrees);
    if (known != floors_.end()) return known->second;
    const double floor_s = floor_.layout_floor_s(counts_, key);
    floors_.emplace(degrees, floor_s);
    return floor_s;
  }

 private:
  const ShapeFloor& floor_;
  const NodeCounts& counts_;
  std::unordered_map<uint64_t, double> floors_;
};

/// The search's state: the front of every plan estimated so far, and what it counted.
class BoundedSearch {
 public:
  BoundedSearch(const ParetoInput& input, CandidateSink& sink)
      : input_(input),
        sink_(sink),
        // A speed split runs a mixed stage faster than its slowest type: the floor counts every type.
        floor_(input.search, input.search.policy->floor_facts().stage_type_is_slowest_rank && !input.search.space.speed_split,
               input.search.memory_aware && input.constraints.exclude_oom),
        known_(input.constraints, input.ranking, input.keep),
        exclude_unfitting_(input.search.memory_aware && input.constraints.exclude_oom),
        egress_(egress_floor(input.search)),
        most_gpus_(most_layout_gpus(*input.search.model, *input.search.cluster, input.search.space)),
        unit_times_(*input.search.model, input.search.profiles, divisors(largest_tp(*input.search.cluster, input.search.space)),
                    divisors(input.search.model->global_batch)) {}

  /// The floors of every shape of `box`; none (infinity) where no shape of it can have a plan,
  /// or none can reach the front. `parent`: the floors of a box that holds it.
  ShapeFloor::BoxFloor floor(const ShapeBox& box, const ShapeFloor::BoxFloor* parent) const {
    const ClusterSpec& inventory = *input_.search.cluster;
    constexpr double kInf = std::numeric_limits<double>::infinity();
    if (shape_gpus(inventory, box.lo) > most_gpus_ || !floor_.may_fit(box.hi)) return {kInf, kInf, {}, true};
    return floor_.box_floor(box.lo, box.hi, [&](double step_s, double step_cost_usd) {
      return !cannot_reach_front_at(known_.bound(), input_.constraints, step_s, step_cost_usd * input_.search.iterations);
    }, parent);
  }
  /// False when no shape of a box of floors `floor` can reach the front.
  bool open(const ShapeFloor::BoxFloor& floor) const {
    if (floor.step_s == std::numeric_limits<double>::infinity()) return false;
    return !cannot_reach_front_at(known_.bound(), input_.constraints, floor.step_s,
                                  floor.step_cost_usd * input_.search.iterations);
  }

  /// Every layout of one shape, each as far as the front so far leaves it a chance; `box`: the
  /// shape's floors as a box of its own (their options the front had ruled out stay so).
  void evaluate_shape(const NodeCounts& counts, const ShapeFloor::BoxFloor& box) {
    const double usd_per_step_second =
        shape_price_usd_per_s(*input_.search.cluster, counts) * input_.search.iterations;
    // The configuration's floor at a layout's own degrees needs no context and no placement:
    // most layouts of a shape the front has all but ruled out are never listed, and the rest
    // are ruled out here before any thread starts.
    // `egress_usd`: a floor under the layout's egress for the whole run.
    auto reaches_front = [&](double floor_s, double egress_usd) {
      return floor_s < std::numeric_limits<double>::infinity() &&  // else its stages cannot hold the layers
             !cannot_reach_front_at(known_.bound(), input_.constraints, floor_s, floor_s * usd_per_step_second + egress_usd);
    };
    LayoutFloors layout_floor_s(floor_, counts);
    ShapeWork work = shape_work(input_, counts, [&](const PlanKey& key) {
      return floor_.option_open(box, key) && reaches_front(layout_floor_s(key), 0);
    });
    if (work.keys.empty()) return;
    const SearchInput shape_input = input_for(input_, work);
    const EnumerationIndex first = shape_ordinal(counts, input_.limits) * kLayoutsPerShape;
    const size_t n = work.keys.size();
    // Each layout's floors against the front so far, before any partition is simulated: the
    // stage-type floor, then the exact floor (a dynamic program); then FASOP's partitions (a
    // memory-aware policy's exact partition that fits) where they leave a chance.
    std::vector<double> floors(n, 0);
    std::vector<char> estimated(n, 0);
    // Floors at or above this cannot reach the front: the exact floor's program stops there.
    const double cap_s = front_time_cap_s(known_.bound(), input_.constraints, usd_per_step_second);
    // Here each layout with its placement: the egress its ranks' zones make it pay, and the
    // layouts the filter did not see (per-stage degrees, speed splits).
    std::vector<size_t> open;
    std::vector<double> layout_floors(n, 0), egress_usd(n, 0);
    // The egress floors wait for the threads (each layout's is its own).
    for (size_t i = 0; i < n; ++i) {
      layout_floors[i] = layout_floor_s(work.keys[i]);
      if (reaches_front(layout_floors[i], 0)) open.push_back(i);
    }
    if (open.empty()) return;
    std::vector<CandidateResult> opened = evaluate_in_parallel(open.size(), input_.search.threads, [&](size_t k) {
      const size_t i = open[k];
      const double layout_floor_s = layout_floors[i];
      if (egress_) egress_usd[i] = egress_->usd_per_step(work.keys[i]) * input_.search.iterations;
      if (!reaches_front(layout_floor_s, egress_usd[i])) return CandidateResult{};
      // Plans that cannot fit are never admitted where plans must fit: most layouts of a large
      // model are ruled out so, before their unit times are looked up.
      // The layout's own precision, cp and ep: its model and profiles (the table holds the
      // search's own profiles' unit times; it finds none for the others).
      const PlanKey& key = work.keys[i];
      const CostPolicy& policy = *shape_input.policy;
      PlanContext ctx = make_rank_context(shape_input.model_for(key), *shape_input.cluster, policy, key);
      // Its memory model, and whether no partition can fit in it.
      auto cannot_fit = [&] {
        add_memory_model(ctx, policy);
        return exclude_unfitting_ && !some_partition_may_fit(ctx);
      };
      // A speed-split layout's memory model is built twice (make_context.h): it stays in the order below.
      if (key.speed_split && cannot_fit()) return CandidateResult{};
      add_unit_times(ctx, shape_input.profiles_for(key), policy, &unit_times_);
      double floor_s = std::max(layout_floor_s, stage_type_step_floor_s(ctx, policy));
      if (!reaches_front(floor_s, egress_usd[i])) return CandidateResult{};
      // The exact floor's compute alone rules out most layouts, before their memory model and
      // sends are built (three quarters of those of Sailor's budget problem (b)).
      floor_s = std::max(floor_s, compute_floor_s(ctx, policy, cap_s));
      if (!reaches_front(floor_s, egress_usd[i])) return CandidateResult{};
      if (!key.speed_split && cannot_fit()) return CandidateResult{};
      add_stage_sends(ctx, policy);
      const double exact_floor_s = std::max(floor_s, floor_partition(ctx, policy, cap_s).floor_s);
      if (!reaches_front(exact_floor_s, egress_usd[i])) return CandidateResult{};
      double coarse = 0;
      CandidateResult r = evaluate_fasop_partitions(shape_input, ctx, &coarse);
      floors[i] = std::max(exact_floor_s, coarse);
      estimated[i] = 1;
      drop_stage_detail(r);
      return r;
    });
    std::vector<CandidateResult> results(n);
    for (size_t k = 0; k < open.size(); ++k) results[open[k]] = std::move(opened[k]);
    std::vector<size_t> kept;
    for (size_t i = 0; i < n; ++i)
      if (estimated[i]) kept.push_back(i);
    if (kept.empty()) return;
    learn(results, kept, first);
    // The floor partition where the front still leaves a chance.
    std::vector<size_t> step2 = still_open(results, floors, kept, usd_per_step_second);
    evaluate_in_parallel(step2.size(), input_.search.threads, [&](size_t j) {
      double exact = 0;
      try_floor_partition(shape_input, results[step2[j]], &exact);
      drop_stage_detail(results[step2[j]]);
      return CandidateResult{};
    });
    learn(results, step2, first);
    // The full partitioner waits for the end, when the front knows every shape's quick plans.
    ShapeResults held{counts, {}, {}, {}};
    for (size_t i : kept) {
      held.key_index.push_back(i);
      held.results.push_back(std::move(results[i]));
      held.floors.push_back(floors[i]);
    }
    stats_.candidates += kept.size();
    ++stats_.shapes_estimated;
    held_.push_back(std::move(held));
  }

  /// The full partitioner on every held candidate the final front of quick plans leaves a
  /// chance (as run_pareto_search's third step), then every held candidate to the sink, shape by
  /// shape in the order they came.
  void refine_and_emit(const ProgressFn& progress = {}) {
    // Every held candidate the front still leaves a chance, of every shape, in one loop: a shape
    // holds a few, too few to share among threads.
    std::vector<std::pair<size_t, size_t>> refine;  // (held shape, its candidate)
    for (size_t s = 0; s < held_.size(); ++s) {
      const ShapeResults& shape = held_[s];
      const double usd_per_step_second = shape_price_usd_per_s(*input_.search.cluster, shape.counts) * input_.search.iterations;
      std::vector<size_t> all(shape.results.size());
      for (size_t j = 0; j < all.size(); ++j) all[j] = j;
      for (size_t j : still_open(shape.results, shape.floors, all, usd_per_step_second)) refine.emplace_back(s, j);
    }
    if (progress) progress(0, refine.size());  // the pace counts from here
    // Each result replaces its quick one in place: no second copy of half a million results.
    for_each_in_parallel(refine.size(), input_.search.threads, [&](size_t k) {
      const auto [s, j] = refine[k];
      // The held results carry their layouts: only the shape's cluster is built again.
      const ClusterSpec cluster = shape_cluster(*input_.search.cluster, held_[s].counts);
      SearchInput shape_input = input_.search;
      shape_input.cluster = &cluster;
      CandidateResult r = evaluate_candidate(shape_input, held_[s].results[j].plan.key);
      drop_stage_detail(r);
      held_[s].results[j] = std::move(r);
    }, progress);
    stats_.refined += refine.size();
    // To the sink shape by shape, in the order they came.
    for (ShapeResults& shape : held_) {
      const EnumerationIndex first = shape_ordinal(shape.counts, input_.limits) * kLayoutsPerShape;
      std::vector<EnumerationIndex> index;
      for (size_t i : shape.key_index) index.push_back(first + i);
      sink_.consume(shape.results, index);
      shape = ShapeResults();
    }
  }

  const ParetoStats& stats() const { return stats_; }
  /// With an objective, what a plan's floor on it must beat once `keep` plans are known (in the
  /// box floors' units: seconds or USD a step); infinity before.
  double objective_bound() const {
    const std::vector<CandidateResult>& bound = known_.bound();
    if (input_.ranking == Ranking::kFront || bound.empty()) return std::numeric_limits<double>::infinity();
    const PlanEstimate& last = bound.back().estimate;
    return input_.ranking == Ranking::kFastest ? last.step_time_s : last.train_cost_usd / input_.search.iterations;
  }

 private:
  /// Adds the candidates `which` of `results` to the front of what can run.
  void learn(std::vector<CandidateResult>& results, const std::vector<size_t>& which, EnumerationIndex first) {
    std::vector<CandidateResult> chunk;
    std::vector<EnumerationIndex> index;
    for (size_t i : which) {
      chunk.push_back(results[i]);
      index.push_back(first + i);
    }
    known_.consume(chunk, index);
  }

  /// A shape's estimated candidates, held for the full partitioner.
  struct ShapeResults {
    NodeCounts counts;
    std::vector<size_t> key_index;  ///< each candidate's layout in the shape's enumeration
    std::vector<CandidateResult> results;
    std::vector<double> floors;
  };
  std::vector<ShapeResults> held_;

  std::vector<size_t> still_open(const std::vector<CandidateResult>& results, const std::vector<double>& floors,
                                 const std::vector<size_t>& which, double usd_per_step_second) const {
    std::vector<size_t> open;
    for (size_t i : which)
      if (input_.refine_all ||
          !ruled_out(known_, input_.constraints, results[i], floors[i], usd_per_step_second, input_.search.memory_aware))
        open.push_back(i);
    return open;
  }

  const ParetoInput& input_;
  CandidateSink& sink_;
  ShapeFloor floor_;
  FrontTracker known_;
  bool exclude_unfitting_;
  /// Floors under the layouts' egress where the policy prices it and the inventory has zones.
  std::optional<EgressFloor> egress_;
  long long most_gpus_;
  /// The profiles' unit times at every tp and micro-batch size, looked up once for all shapes.
  const UnitTimeTable unit_times_;
  ParetoStats stats_;
};

}  // namespace

namespace {

/// A box to search, with its floors and its place in the order boxes were made (ties in a
/// best-first search go to the earlier box, so the order never depends on anything else).
struct QueuedBox {
  ShapeBox box;
  ShapeFloor::BoxFloor floor;
  size_t order = 0;
  int depth = 0;  ///< splits from the whole inventory's box
};

/// Splits `box` in two along its widest count: the lower half, then the upper.
std::pair<ShapeBox, ShapeBox> split(const ShapeBox& box) {
  size_t widest = 0;
  for (size_t t = 1; t < box.lo.size(); ++t)
    if (box.hi[t] - box.lo[t] > box.hi[widest] - box.lo[widest]) widest = t;
  ShapeBox lower = box, upper = box;
  lower.hi[widest] = box.lo[widest] + (box.hi[widest] - box.lo[widest]) / 2;
  upper.lo[widest] = lower.hi[widest] + 1;
  return {lower, upper};
}

}  // namespace

ParetoStats run_bounded_pareto_search(const ParetoInput& input, CandidateSink& sink, const ShapeProgressFn& progress) {
  BoundedSearch search(input, sink);
  const double total = shape_count(input.limits);
  double settled = 0;
  // For the front: depth first, the smaller half of each box first (small shapes are cheap, and
  // their plans make the front that rules out larger boxes whole). For the cheapest or the
  // fastest plans: best first by that measure's floor, so the best plans come early and rule
  // out every box whose floor they beat.
  const bool best_first = input.ranking != Ranking::kFront;
  auto key = [&](const ShapeFloor::BoxFloor& f) { return input.ranking == Ranking::kFastest ? f.step_s : f.step_cost_usd; };
  auto later = [&](const QueuedBox& a, const QueuedBox& b) {
    const double ka = key(a.floor), kb = key(b.floor);
    return ka != kb ? ka > kb : a.order > b.order;
  };
  std::vector<QueuedBox> queue;
  size_t made = 0;
  double tree_settled = 0;
  auto push = [&](ShapeBox box, const ShapeFloor::BoxFloor* parent, int depth) {
    ShapeFloor::BoxFloor floor = search.floor(box, parent);
    queue.push_back({std::move(box), std::move(floor), made++, depth});
    if (best_first) std::push_heap(queue.begin(), queue.end(), later);
  };
  push({NodeCounts(input.limits.size(), 0), input.limits}, nullptr, 0);
  while (!queue.empty()) {
    if (best_first) std::pop_heap(queue.begin(), queue.end(), later);
    QueuedBox next = std::move(queue.back());
    queue.pop_back();
    const ShapeBox& box = next.box;
    const double shapes = box.shapes();
    const bool has_empty = std::all_of(box.lo.begin(), box.lo.end(), [](int c) { return c == 0; });
    if (!search.open(next.floor)) {
      settled += shapes - (has_empty ? 1 : 0);
    } else if (box.lo == box.hi) {
      search.evaluate_shape(box.lo, next.floor);
      settled += 1;
    } else {
      auto [lower, upper] = split(box);
      // Depth first pops the last pushed: the lower half first.
      push(std::move(upper), &next.floor, next.depth + 1);
      push(std::move(lower), &next.floor, next.depth + 1);
      continue;
    }
    tree_settled += std::ldexp(1.0, -next.depth);
    if (progress) {
      ShapeProgress now{.settled = settled, .total = total, .candidates = search.stats().candidates,
                        .shapes_estimated = search.stats().shapes_estimated, .open_boxes = queue.size(),
                        .tree_settled = tree_settled, .refining = false, .refined = 0, .to_refine = 0};
      if (best_first) {
        now.best_first = true;
        now.objective_is_cost = input.ranking == Ranking::kCheapest;
        now.lowest_open_floor = queue.empty() ? std::numeric_limits<double>::infinity() : key(queue.front().floor);
        now.objective_bound = search.objective_bound();
      }
      progress(now);
    }
  }
  search.refine_and_emit([&](size_t done, size_t held) {
    if (progress)
      progress({.settled = total, .total = total, .candidates = search.stats().candidates,
                .shapes_estimated = search.stats().shapes_estimated, .open_boxes = 0, .tree_settled = 1,
                .refining = true, .refined = done, .to_refine = held});
  });
  return search.stats();
}

}  // namespace fasop
