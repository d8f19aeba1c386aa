#include "search/search.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "costmodel/make_context.h"
#include "search/parallel_evaluate.h"
#include "search/partitioner.h"
#include "specs/spec_error.h"

namespace fasop {

CandidateResult evaluate_candidate(const SearchInput& input, const PlanKey& key,
                                   const std::vector<int>& partition, PartitionTiming timing,
                                   std::vector<int>* timed_as) {
  PlanContext ctx = make_plan_context(input.model_for(key), *input.cluster, input.profiles_for(key), *input.policy, key);
  CandidateResult result;
  result.plan.key = key;
  std::vector<int> timed;
  if (partition.empty()) {
    result.plan.partition = best_partition(ctx, *input.policy);
  } else {
    result.plan.partition = partition;
    // FASOP's own partition is taken as FASOP reports it, even with an empty stage (its
    // greedy can leave one); any other partition must be valid.
    bool fasop_reported = timing == PartitionTiming::kAsFasopReports &&
                          fasop_greedy_partition(ctx, *input.policy, &timed) == partition;
    if (!fasop_reported) {
      timed.clear();
      validate_partition(input.model_for(key), key, partition);
    }
  }
  if (timed.empty()) timed = result.plan.partition;
  if (timed_as) *timed_as = timed;
  result.estimate = estimate_plan(ctx, *input.policy, result.plan.partition, input.iterations, &timed, true);
  return result;
}

CandidateResult evaluate_fasop_partitions(const SearchInput& input, const PlanKey& key, double* coarse_floor_s) {
  return evaluate_fasop_partitions(
      input, make_plan_context(input.model_for(key), *input.cluster, input.profiles_for(key), *input.policy, key), coarse_floor_s);
}

CandidateResult evaluate_fasop_partitions(const SearchInput& input, const PlanContext& ctx, double* coarse_floor_s) {
  *coarse_floor_s = coarse_step_time_floor_s(ctx, *input.policy);
  CandidateResult best;
  best.plan.key = ctx.key;
  if (ctx.partition_memory) {
    // A memory-aware policy starts from the exact bottleneck partition that fits.
    best.plan.partition = exact_fitting_partition(ctx).partition;
    best.estimate = estimate_plan(ctx, *input.policy, best.plan.partition, input.iterations);
    return best;
  }
  for (const std::vector<int>& partition : fasop_partitions(ctx, *input.policy)) {
    PlanEstimate e = estimate_plan(ctx, *input.policy, partition, input.iterations);
    if (best.plan.partition.empty() || e.step_time_s < best.estimate.step_time_s) {
      best.plan.partition = partition;
      best.estimate = std::move(e);
    }
  }
  if (best.plan.partition.empty()) {  // FASOP's greedy left a stage empty: the floor's comes next
    best.estimate.step_time_s = std::numeric_limits<double>::infinity();
    best.estimate.train_cost_usd = std::numeric_limits<double>::infinity();
  }
  return best;
}

void try_floor_partition(const SearchInput& input, CandidateResult& result, double* floor_s) {
  PlanContext ctx = make_plan_context(input.model_for(result.plan.key), *input.cluster, input.profiles_for(result.plan.key), *input.policy, result.plan.key);
  FloorPartition floor = floor_partition(ctx, *input.policy);
  *floor_s = floor.floor_s;
  if (floor.partition == result.plan.partition || !fits_memory(ctx, floor.partition)) return;
  PlanEstimate e = estimate_plan(ctx, *input.policy, floor.partition, input.iterations);
  if (result.plan.partition.empty() || e.step_time_s < result.estimate.step_time_s) {
    result.plan.partition = floor.partition;
    result.estimate = std::move(e);
  }
}

CandidateResult evaluate_fitting_start(const SearchInput& input, const PlanKey& key, double* floor_s) {
  PlanContext ctx = make_plan_context(input.model_for(key), *input.cluster, input.profiles_for(key), *input.policy, key);
  FittingStart start = fitting_start_partition(ctx, *input.policy);
  *floor_s = start.floor_s;
  CandidateResult result;
  result.plan.key = key;
  result.plan.partition = start.partition;
  result.estimate = estimate_plan(ctx, *input.policy, start.partition, input.iterations);
  return result;
}

void drop_stage_detail(CandidateResult& result) {
  result.estimate.stages.clear();
  result.estimate.stages.shrink_to_fit();
}

std::vector<CandidateResult> run_search(const SearchInput& input, const ProgressFn& progress) {
  const std::vector<PlanKey> keys = enumerate_plan_keys(*input.model, *input.cluster, input.space);
  std::vector<CandidateResult> results;
  const bool drop_detail = keys.size() > input.stage_detail_limit;
  auto held = [&](CandidateResult r) {
    if (drop_detail) drop_stage_detail(r);
    return r;
  };
  if (input.refine_top == 0) {
    results = evaluate_in_parallel(
        keys.size(), input.threads, [&](size_t i) { return held(evaluate_candidate(input, keys[i])); }, progress);
  } else {
    std::vector<double> floors(keys.size());
    results = evaluate_in_parallel(
        keys.size(), input.threads, [&](size_t i) { return held(evaluate_fitting_start(input, keys[i], &floors[i])); },
        progress);
    // A layout whose floor is above the K-th fastest fitting plan cannot enter the K best.
    std::vector<double> fitting;
    for (const CandidateResult& r : results)
      if (!r.estimate.memory.is_oom) fitting.push_back(r.estimate.step_time_s);
    double threshold = std::numeric_limits<double>::infinity();
    if (fitting.size() >= input.refine_top) {
      std::nth_element(fitting.begin(), fitting.begin() + (input.refine_top - 1), fitting.end());
      threshold = fitting[input.refine_top - 1];
    }
    std::vector<size_t> refine;
    for (size_t i = 0; i < results.size(); ++i)
      if (!results[i].estimate.memory.is_oom && floors[i] <= threshold * (1 + 1e-6)) refine.push_back(i);
    std::vector<CandidateResult> refined = evaluate_in_parallel(
        refine.size(), input.threads, [&](size_t j) { return held(evaluate_candidate(input, keys[refine[j]])); });
    for (size_t j = 0; j < refine.size(); ++j) results[refine[j]] = std::move(refined[j]);
  }
  sort_by_fit_and_time(results, input.memory_aware);
  if (input.memory_aware) rank_time_ties_by_room(results);
  return results;
}

void sort_by_fit_and_time(std::vector<CandidateResult>& results, bool memory_aware) {
  // A stable sort of the indices, then the results moved into place along the permutation's
  // cycles: std::stable_sort of the results themselves takes a buffer of half of them (270 MB
  // for a 4-type --stage-dp search's 1.26 million).
  std::vector<uint32_t> order(results.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = uint32_t(i);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t i, uint32_t j) {
    const PlanEstimate &a = results[i].estimate, &b = results[j].estimate;
    if (memory_aware && a.memory.is_oom != b.memory.is_oom) return !a.memory.is_oom;
    return a.step_time_s < b.step_time_s;
  });
  // Place k takes results[order[k]]: follow each cycle once, holding one result aside.
  for (size_t start = 0; start < order.size(); ++start) {
    if (order[start] == start) continue;
    CandidateResult held = std::move(results[start]);
    size_t at = start;
    while (order[at] != start) {
      const size_t from = order[at];
      results[at] = std::move(results[from]);
      order[at] = uint32_t(at);
      at = from;
    }
    results[at] = std::move(held);
    order[at] = uint32_t(at);
  }
}

void rank_time_ties_by_room(std::vector<CandidateResult>& results) {
  // Runs of fitting plans within kTimeTieShare of the run's fastest: a deterministic grouping
  // (a pairwise "within noise" is no order).
  for (size_t first = 0; first < results.size();) {
    size_t end = first + 1;
    const double limit_s = results[first].estimate.step_time_s * (1 + kTimeTieShare);
    while (end < results.size() && !results[end].estimate.memory.is_oom && !results[first].estimate.memory.is_oom &&
           results[end].estimate.step_time_s <= limit_s)
      ++end;
    std::stable_sort(results.begin() + first, results.begin() + end, [](const CandidateResult& a, const CandidateResult& b) {
      return a.estimate.memory.free_gib > b.estimate.memory.free_gib;
    });
    first = end;
  }
}

}  // namespace fasop
