#include "search/search.h"

#include <algorithm>
#include <atomic>
#include <string>

#include "costmodel/make_context.h"
#include "search/partitioner.h"
#include "specs/spec_error.h"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace fasop {

CandidateResult evaluate_candidate(const SearchInput& input, const PlanKey& key,
                                   const std::vector<int>& partition, PartitionTiming timing,
                                   std::vector<int>* timed_as) {
  PlanContext ctx = make_plan_context(*input.model, *input.cluster, input.profiles, *input.policy, key);
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
      validate_partition(*input.model, key, partition);
    }
  }
  if (timed.empty()) timed = result.plan.partition;
  if (timed_as) *timed_as = timed;
  result.estimate = estimate_plan(ctx, *input.policy, result.plan.partition, input.iterations, &timed);
  return result;
}

std::vector<CandidateResult> run_search(const SearchInput& input, const ProgressFn& progress) {
  const std::vector<PlanKey> keys = enumerate_plan_keys(*input.model, *input.cluster, input.space);
  std::vector<CandidateResult> results(keys.size());
  std::atomic<size_t> done{0};
  std::vector<std::string> errors(keys.size());  // exceptions must not leave the parallel loop
#ifdef _OPENMP
  int threads = input.threads > 0 ? input.threads : omp_get_max_threads();
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
#endif
  for (long i = 0; i < static_cast<long>(keys.size()); ++i) {
    try {
      results[i] = evaluate_candidate(input, keys[i]);
    } catch (const SpecError& e) {
      errors[i] = e.what();
    }
    size_t finished = ++done;
    if (progress && (finished % 64 == 0 || finished == keys.size())) {
#ifdef _OPENMP
#pragma omp critical(progress)
#endif
      progress(finished, keys.size());
    }
  }
  for (const std::string& error : errors)
    if (!error.empty()) throw SpecError(error);
  std::stable_sort(results.begin(), results.end(), [](const CandidateResult& a, const CandidateResult& b) {
    return a.estimate.step_time_s < b.estimate.step_time_s;
  });
  return results;
}

}  // namespace fasop
