#include "search/pareto_search.h"

#include <algorithm>
#include <limits>
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
  // A shape with more GPUs than any layout has no layouts: skipped before its cluster is built,
  // so that a large inventory costs its shapes, not their nodes squared.
  long long gpus = 0;
  for (size_t t = 0; t < counts.size(); ++t) gpus += 1LL * counts[t] * input.search.cluster->node_types[t].gpus_per_node;
  if (gpus > most_layout_gpus(*input.search.model, *input.search.cluster, input.search.space)) return work;
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
    ShapeWork work = shape_work(input, counts);
    if (work.keys.empty()) continue;  // nothing to plan, and nothing to hold until the flush
    chunk.shapes.push_back(std::move(work));
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

/// True when a plan no faster than `floor_s`, whose training cost is `usd_per_step_second`
/// times its step time, could not be admitted or could not reach `front`.
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

/// True when `result`, whose step time cannot go below `floor_s`, could not reach `front`.
/// A memory-aware policy's partition runs out of memory only where no partition fits, so such
/// a candidate cannot meet --exclude-oom whatever its partition.
bool ruled_out(const FrontTracker& front, const PlanConstraints& constraints, const CandidateResult& result,
               double floor_s, bool memory_aware) {
  const PlanEstimate& e = result.estimate;
  if (memory_aware && constraints.exclude_oom && e.memory.is_oom && !result.plan.partition.empty()) return true;
  if (result.plan.partition.empty() || !(e.step_time_s > 0) || e.step_time_s == std::numeric_limits<double>::infinity())
    return false;
  return cannot_reach_front(front.front(), constraints, floor_s, e.train_cost_usd / e.step_time_s);
}

/// Step 1 on one chunk: every candidate at FASOP's partitions (a memory-aware policy's: the
/// exact bottleneck partition that fits), with its coarse floor.
std::vector<CandidateResult> fasop_results(const ParetoInput& input, const Chunk& chunk, std::vector<double>& floors,
                                           const ProgressFn& progress, size_t total) {
  floors.assign(chunk.candidates.size(), 0);
  std::vector<CandidateResult> results = evaluate_in_parallel(
      chunk.candidates.size(), input.search.threads,
      [&](size_t i) {
        CandidateResult r = evaluate_fasop_partitions(input_for(input, *chunk.candidates[i].first),
                                                      *chunk.candidates[i].second, &floors[i]);
        drop_stage_detail(r);
        return r;
      },
      progress, chunk.first_index, total);
  return results;
}

/// Step 2: the floor partition and the exact floor for each candidate `front` does not rule out.
void try_floor_partitions(const ParetoInput& input, const Chunk& chunk, std::vector<CandidateResult>& results,
                          std::vector<double>& floors, const FrontTracker& front) {
  std::vector<size_t> open;
  for (size_t i = 0; i < results.size(); ++i)
    if (!ruled_out(front, input.constraints, results[i], floors[i], input.search.memory_aware)) open.push_back(i);
  evaluate_in_parallel(open.size(), input.search.threads, [&](size_t j) {
    size_t i = open[j];
    try_floor_partition(input_for(input, *chunk.candidates[i].first), results[i], &floors[i]);
    drop_stage_detail(results[i]);
    return CandidateResult{};
  });
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
  // Step 1: every candidate at FASOP's partitions. Their front rules out the candidates whose
  // coarse floor it beats; step 2 gives the others the floor partition and the exact floor.
  // The front after that rules out more; step 3 gives the rest best_partition.
  FrontTracker fasop_front(input.constraints), cheap_front(input.constraints);
  auto refine_and_emit = [&](const Chunk& chunk, std::vector<CandidateResult>& results,
                             const std::vector<double>& floors) {
    std::vector<size_t> refine;
    for (size_t i = 0; i < results.size(); ++i)
      if (input.refine_all || !ruled_out(cheap_front, input.constraints, results[i], floors[i], input.search.memory_aware)) refine.push_back(i);
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
    // Everything in one chunk: each step is one parallel loop, and nothing is computed twice.
    for_each_chunk(input, total, [&](const Chunk& chunk) {
      std::vector<CandidateResult> results = fasop_results(input, chunk, floors, first_pass, total);
      fasop_front.consume(results, chunk.first_index);
      try_floor_partitions(input, chunk, results, floors, fasop_front);
      cheap_front.consume(results, chunk.first_index);
      refine_and_emit(chunk, results, floors);
    });
  } else {
    // Bounded memory: chunk by chunk, one pass a step, each recomputing the cheaper steps.
    for_each_chunk(input, kChunkCandidates, [&](const Chunk& chunk) {
      std::vector<CandidateResult> results = fasop_results(input, chunk, floors, first_pass, total);
      fasop_front.consume(results, chunk.first_index);
    });
    for_each_chunk(input, kChunkCandidates, [&](const Chunk& chunk) {
      std::vector<CandidateResult> results = fasop_results(input, chunk, floors, {}, total);
      try_floor_partitions(input, chunk, results, floors, fasop_front);
      cheap_front.consume(results, chunk.first_index);
    });
    for_each_chunk(input, kChunkCandidates, [&](const Chunk& chunk) {
      std::vector<CandidateResult> results = fasop_results(input, chunk, floors, {}, total);
      try_floor_partitions(input, chunk, results, floors, fasop_front);
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
