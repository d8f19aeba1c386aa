#include "search/pareto_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <tuple>

#include "search/parallel_evaluate.h"
#include "search/pareto_steps.h"

namespace fasop {
namespace {

/// Candidates estimated together: enough to keep every thread busy, few enough to hold.
constexpr size_t kChunkCandidates = 4096;

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

double usd_per_step_second(const ParetoInput& input, const Chunk& chunk, size_t i) {
  return run_usd_per_step_second(*chunk.candidates[i].first->cluster, input.search.iterations);
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
    if (!ruled_out(front, input.constraints, results[i], floors[i], usd_per_step_second(input, chunk, i),
                   input.search.memory_aware))
      open.push_back(i);
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
      if (input.refine_all || !ruled_out(cheap_front, input.constraints, results[i], floors[i],
                                         usd_per_step_second(input, chunk, i), input.search.memory_aware))
        refine.push_back(i);
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
    sink.consume(results, consecutive_indices(chunk.first_index, results.size()));
  };
  std::vector<double> floors;
  if (!streamed) {
    // Everything in one chunk: each step is one parallel loop, and nothing is computed twice.
    for_each_chunk(input, total, [&](const Chunk& chunk) {
      std::vector<CandidateResult> results = fasop_results(input, chunk, floors, first_pass, total);
      fasop_front.consume(results, consecutive_indices(chunk.first_index, results.size()));
      try_floor_partitions(input, chunk, results, floors, fasop_front);
      cheap_front.consume(results, consecutive_indices(chunk.first_index, results.size()));
      refine_and_emit(chunk, results, floors);
    });
  } else {
    // Bounded memory: chunk by chunk, one pass a step, each recomputing the cheaper steps.
    for_each_chunk(input, kChunkCandidates, [&](const Chunk& chunk) {
      std::vector<CandidateResult> results = fasop_results(input, chunk, floors, first_pass, total);
      fasop_front.consume(results, consecutive_indices(chunk.first_index, results.size()));
    });
    for_each_chunk(input, kChunkCandidates, [&](const Chunk& chunk) {
      std::vector<CandidateResult> results = fasop_results(input, chunk, floors, {}, total);
      try_floor_partitions(input, chunk, results, floors, fasop_front);
      cheap_front.consume(results, consecutive_indices(chunk.first_index, results.size()));
    });
    for_each_chunk(input, kChunkCandidates, [&](const Chunk& chunk) {
      std::vector<CandidateResult> results = fasop_results(input, chunk, floors, {}, total);
      try_floor_partitions(input, chunk, results, floors, fasop_front);
      refine_and_emit(chunk, results, floors);
    });
  }
  return stats;
}

std::vector<EnumerationIndex> consecutive_indices(size_t first, size_t count) {
  std::vector<EnumerationIndex> index(count);
  for (size_t i = 0; i < count; ++i) index[i] = first + i;
  return index;
}

void FrontTracker::consume(std::vector<CandidateResult>& chunk, const std::vector<EnumerationIndex>& index) {
  if (ranking_ != Ranking::kFront) return consume_ranked(chunk, index);
  // The pool in enumeration order, so that pareto_front's lowest-index rule keeps the first of
  // equal points in enumeration order, however the candidates arrived.
  std::vector<std::pair<EnumerationIndex, const CandidateResult*>> pool;
  for (size_t i = 0; i < front_.size(); ++i) pool.emplace_back(front_index_[i], &front_[i]);
  for (size_t i = 0; i < chunk.size(); ++i) {
    if (!constraints_.admits(chunk[i].estimate)) continue;
    ++admitted_;
    pool.emplace_back(index[i], &chunk[i]);
  }
  std::stable_sort(pool.begin(), pool.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<CostTimePoint> points;
  for (const auto& [i, r] : pool) points.push_back({r->estimate.step_time_s, r->estimate.train_cost_usd});
  std::vector<CandidateResult> front;
  std::vector<EnumerationIndex> front_index;
  for (size_t i : pareto_front(points)) {
    front.push_back(*pool[i].second);
    front_index.push_back(pool[i].first);
  }
  front_ = std::move(front);
  front_index_ = std::move(front_index);
}

void FrontTracker::consume_ranked(std::vector<CandidateResult>& chunk, const std::vector<EnumerationIndex>& index) {
  const bool by_cost = ranking_ == Ranking::kCheapest;
  auto key = [&](const CandidateResult& r, EnumerationIndex i) {
    const PlanEstimate& e = r.estimate;
    return by_cost ? std::make_tuple(e.train_cost_usd, e.step_time_s, i) : std::make_tuple(e.step_time_s, e.train_cost_usd, i);
  };
  std::vector<std::pair<EnumerationIndex, const CandidateResult*>> pool;
  for (size_t i = 0; i < front_.size(); ++i) pool.emplace_back(front_index_[i], &front_[i]);
  for (size_t i = 0; i < chunk.size(); ++i) {
    const PlanEstimate& e = chunk[i].estimate;
    // A result without a partition (ruled out before any) or a time has nothing to rank.
    if (chunk[i].plan.partition.empty() || !(e.step_time_s > 0) || !std::isfinite(e.step_time_s) || !constraints_.admits(e))
      continue;
    ++admitted_;
    pool.emplace_back(index[i], &chunk[i]);
  }
  std::sort(pool.begin(), pool.end(),
            [&](const auto& a, const auto& b) { return key(*a.second, a.first) < key(*b.second, b.first); });
  // A candidate comes again when a better partition is found for it: it holds one place, at its
  // best estimate, or two of its estimates would push the keep-th plan up and the bound with it.
  std::vector<CandidateResult> best;
  std::vector<EnumerationIndex> best_index;
  for (const auto& [i, r] : pool) {
    if (best.size() == keep_) break;
    if (std::find(best_index.begin(), best_index.end(), i) != best_index.end()) continue;
    best.push_back(*r);
    best_index.push_back(i);
  }
  front_ = std::move(best);
  front_index_ = std::move(best_index);
  bound_.clear();
  if (front_.size() < keep_) return;
  CandidateResult last;
  last.estimate.train_cost_usd = by_cost ? front_.back().estimate.train_cost_usd : 0;
  last.estimate.step_time_s = by_cost ? 0 : front_.back().estimate.step_time_s;
  bound_.push_back(std::move(last));
}

}  // namespace fasop
