#include "search/pareto_search.h"

#include <algorithm>
#include <memory>

#include "search/parallel_evaluate.h"

namespace fasop {
namespace {

/// Candidates estimated together: enough to keep every thread busy, few enough to hold.
constexpr size_t kChunkCandidates = 4096;
/// Relative margin under which a floor counts as beaten: covers FASOP's float32 sums.
constexpr double kFloorMargin = 1e-6;

/// The layouts of one shape, with the cluster they are planned on.
struct ShapeWork {
  std::unique_ptr<ClusterSpec> cluster;
  std::vector<PlanKey> keys;
};

ShapeWork shape_work(const ParetoInput& input, const NodeCounts& counts) {
  ShapeWork work;
  work.cluster = std::make_unique<ClusterSpec>(shape_cluster(*input.search.cluster, counts));
  work.keys = enumerate_plan_keys(*input.search.model, *work.cluster, input.search.space);
  return work;
}

/// One chunk of candidates: each with its shape, in enumeration order.
struct Chunk {
  std::vector<ShapeWork> shapes;
  std::vector<std::pair<const ShapeWork*, const PlanKey*>> candidates;
  size_t first_index = 0;
};

/// Calls `visit(chunk)` for chunks of about `chunk_candidates` candidates (whole shapes), in
/// enumeration order.
template <typename Visit>
void for_each_chunk(const ParetoInput& input, size_t chunk_candidates, Visit visit) {
  Chunk chunk;
  size_t index = 0;
  auto flush = [&] {
    for (const ShapeWork& work : chunk.shapes)
      for (const PlanKey& key : work.keys) chunk.candidates.emplace_back(&work, &key);
    chunk.first_index = index;
    index += chunk.candidates.size();
    visit(chunk);
    chunk = Chunk();
  };
  size_t pending = 0;
  for (const NodeCounts& counts : cluster_shapes(input.limits)) {
    chunk.shapes.push_back(shape_work(input, counts));
    pending += chunk.shapes.back().keys.size();
    if (pending >= chunk_candidates) {
      flush();
      pending = 0;
    }
  }
  if (pending > 0) flush();
}

SearchInput input_for(const ParetoInput& input, const ShapeWork& work) {
  SearchInput shape_input = input.search;
  shape_input.cluster = work.cluster.get();
  return shape_input;
}

void drop_stage_detail(CandidateResult& result) {
  result.estimate.stages.clear();  // per-stage detail is not reported; do not hold it
  result.estimate.stages.shrink_to_fit();
}

/// The quick pass over one chunk: results and floors.
std::vector<CandidateResult> quick_results(const ParetoInput& input, const Chunk& chunk, std::vector<double>& floors,
                                           const ProgressFn& progress, size_t total) {
  floors.assign(chunk.candidates.size(), 0);
  return evaluate_in_parallel(
      chunk.candidates.size(), input.search.threads,
      [&](size_t i) {
        CandidateResult r = evaluate_quickly(input_for(input, *chunk.candidates[i].first), *chunk.candidates[i].second,
                                             &floors[i]);
        drop_stage_detail(r);
        return r;
      },
      progress, chunk.first_index, total);
}

/// True when a plan no faster than `floor_s` on a cluster costing `usd_per_s_times_steps`
/// per second of step time could not be admitted or could not reach `front`.
bool cannot_reach_front(const std::vector<CandidateResult>& front, const PlanConstraints& constraints,
                        double floor_s, double usd_per_step_second) {
  const double floor_cost = floor_s * usd_per_step_second;
  if (floor_s > constraints.max_step_time_s * (1 + kFloorMargin) ||
      floor_cost > constraints.max_cost_usd * (1 + kFloorMargin))
    return true;
  // The front runs cheapest (slowest) to dearest (fastest): the fastest point no dearer than
  // the floor's cost decides.
  const double cost_limit = floor_cost * (1 - kFloorMargin);
  auto dearer = std::upper_bound(front.begin(), front.end(), cost_limit, [](double c, const CandidateResult& r) {
    return c < r.estimate.train_cost_usd;
  });
  if (dearer == front.begin()) return false;
  return std::prev(dearer)->estimate.step_time_s <= floor_s * (1 - kFloorMargin);
}

}  // namespace

ParetoSize count_pareto_candidates(const ParetoInput& input) {
  ParetoSize size;
  for (const NodeCounts& counts : cluster_shapes(input.limits)) {
    ++size.shapes;
    size.candidates += shape_work(input, counts).keys.size();
  }
  return size;
}

ParetoStats run_pareto_search(const ParetoInput& input, CandidateSink& sink, const PassProgressFn& progress) {
  const size_t total = count_pareto_candidates(input).candidates;
  const bool streamed = total > input.hold_limit;
  ProgressFn first_pass, second_pass;
  if (progress) {
    first_pass = [&](size_t done, size_t all) { progress(1, done, all); };
    second_pass = [&](size_t done, size_t all) { progress(2, done, all); };
  }
  ParetoStats stats;
  stats.candidates = total;
  // Pass 1: every candidate at its quick partition; the front of those is what a candidate's
  // floor must beat for best_partition to be worth running on it.
  FrontTracker quick_front(input.constraints);
  // Pass 2: best_partition on the candidates that could still reach the front; all to the sink.
  auto refine_and_emit = [&](const Chunk& chunk, std::vector<CandidateResult>& results,
                             const std::vector<double>& floors) {
    std::vector<size_t> refine;
    for (size_t i = 0; i < results.size(); ++i) {
      const PlanEstimate& e = results[i].estimate;
      double usd_per_step_second = e.step_time_s > 0 ? e.train_cost_usd / e.step_time_s : 0;
      if (!cannot_reach_front(quick_front.front(), input.constraints, floors[i], usd_per_step_second))
        refine.push_back(i);
    }
    stats.refined += refine.size();
    std::vector<CandidateResult> refined = evaluate_in_parallel(
        refine.size(), input.search.threads,
        [&](size_t j) {
          const auto& candidate = chunk.candidates[refine[j]];
          CandidateResult r = evaluate_candidate(input_for(input, *candidate.first), *candidate.second);
          drop_stage_detail(r);
          return r;
        },
        streamed ? ProgressFn{} : second_pass);
    if (streamed && second_pass) second_pass(chunk.first_index + results.size(), total);
    for (size_t j = 0; j < refine.size(); ++j) results[refine[j]] = std::move(refined[j]);
    sink.consume(results, chunk.first_index);
  };
  std::vector<double> floors;
  if (!streamed) {
    // Everything in one chunk: each pass is one parallel loop, and nothing is computed twice.
    for_each_chunk(input, total, [&](const Chunk& chunk) {
      std::vector<CandidateResult> results = quick_results(input, chunk, floors, first_pass, total);
      quick_front.consume(results, chunk.first_index);
      refine_and_emit(chunk, results, floors);
    });
  } else {
    // Bounded memory: chunk by chunk, the quick results computed again in the second pass.
    for_each_chunk(input, kChunkCandidates, [&](const Chunk& chunk) {
      std::vector<CandidateResult> results = quick_results(input, chunk, floors, first_pass, total);
      quick_front.consume(results, chunk.first_index);
    });
    for_each_chunk(input, kChunkCandidates, [&](const Chunk& chunk) {
      std::vector<CandidateResult> results = quick_results(input, chunk, floors, {}, total);
      refine_and_emit(chunk, results, floors);
    });
  }
  return stats;
}

void FrontTracker::consume(std::vector<CandidateResult>& chunk, size_t) {
  // The front so far comes before the chunk in enumeration order, so pareto_front's
  // lowest-index rule keeps the first of equal points across chunks too.
  std::vector<const CandidateResult*> pool;
  for (const CandidateResult& r : front_) pool.push_back(&r);
  for (const CandidateResult& r : chunk) {
    if (!constraints_.admits(r.estimate)) continue;
    ++admitted_;
    pool.push_back(&r);
  }
  std::vector<CostTimePoint> points;
  for (const CandidateResult* r : pool) points.push_back({r->estimate.step_time_s, r->estimate.train_cost_usd});
  std::vector<CandidateResult> front;
  for (size_t i : pareto_front(points)) front.push_back(*pool[i]);
  front_ = std::move(front);
}

}  // namespace fasop
