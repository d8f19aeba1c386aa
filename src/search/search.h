#pragma once
// search: drives the cost model over a space of layouts.
//   enumerate_plan_keys  FASOP's layouts in FASOP's order (search_space.h)
//   most_layout_gpus     the most GPUs any layout uses: larger clusters have none (search_space.h)
//   best_partition       FASOP's greedy, exact DPs and local search (partitioner.h)
//   run_search           every layout at its best partition, sorted (this file)
#include <functional>
#include <limits>
#include <map>
#include <tuple>
#include <vector>

#include "costmodel/cost_policy.h"
#include "costmodel/estimate.h"
#include "search/search_space.h"
#include "specs/plan.h"

namespace fasop {

/// One candidate layout with its best partition and estimate.
struct CandidateResult {
  Plan plan;
  PlanEstimate estimate;
};

/// What the search needs: specs, profiles, the cost policy and the space to search.
struct SearchInput {
  const ModelSpec* model = nullptr;
  const ClusterSpec* cluster = nullptr;
  NodeTypeProfiles profiles;
  const CostPolicy* policy = nullptr;
  /// Profiles timed in another precision, with context or expert parallelism or another token
  /// dispatcher, per (precision, cp, ep, etp, dispatcher) other than ("", 1, 1, 1, alltoall),
  /// one per node type as `profiles`, which serves the layouts in the model's own precision
  /// without them.
  std::map<std::tuple<std::string, int, int, int, MoeDispatcher>, NodeTypeProfiles> parallel_profiles;
  /// The model trained in another precision (PlanKey::precision), per precision.
  std::map<std::string, const ModelSpec*> precision_models;
  SearchSpaceOptions space;
  double iterations = kFasopIterations;
  int threads = 0;  ///< 0: every CPU the process may use (resolve_threads)
  /// 0: best_partition on every layout (FASOP's space is small). K > 0: every layout at
  /// fitting_start_partition first, then best_partition only on those whose floor could put
  /// them among the K fastest: the K best are the same, at a fraction of the work.
  size_t refine_top = 0;
  /// The policy keeps partitions within memory (it has a memory model): plans that fit sort
  /// before those that do not (FASOP sorts by time alone), and quick evaluations start from
  /// fitting_start_partition rather than FASOP's greedy partition.
  bool memory_aware = false;
  /// Above this many layouts run_search drops each result's per-stage detail
  /// (PlanEstimate::stages) as it is estimated, so that a search of millions of layouts holds
  /// only what its table shows (evaluate_candidate with the plan's partition gives it back).
  size_t stage_detail_limit = std::numeric_limits<size_t>::max();

  /// The profiles a layout's layers are timed with: parallel_profiles' for its precision, cp,
  /// ep, etp and dispatcher, else `profiles`.
  const NodeTypeProfiles& profiles_for(const PlanKey& key) const {
    if (key.precision.empty() && key.cp == 1 && key.ep == 1 && key.etp == 1 &&
        key.moe_dispatcher == MoeDispatcher::kAlltoall)
      return profiles;
    auto found = parallel_profiles.find({key.precision, key.cp, key.ep, key.etp, key.moe_dispatcher});
    return found == parallel_profiles.end() ? profiles : found->second;
  }
  /// The model a layout trains: precision_models' for its precision, else `model`.
  const ModelSpec& model_for(const PlanKey& key) const {
    if (key.precision.empty()) return *model;
    auto found = precision_models.find(key.precision);
    return found == precision_models.end() ? *model : *found->second;
  }
};

/// Drops per-stage detail, which the tables do not show, so as not to hold it.
void drop_stage_detail(CandidateResult& result);

/// Called now and then with (candidates done, candidates in all).
using ProgressFn = std::function<void(size_t, size_t)>;

/// Estimates every layout of the space at its best partition. The result is sorted by step
/// time, ties in enumeration order; it does not depend on the thread count.
std::vector<CandidateResult> run_search(const SearchInput& input, const ProgressFn& progress = {});

/// run_search's order: plans that fit first where `memory_aware`, then by step time, equal ones
/// in the order given (a stable sort, without a buffer of the results' size).
void sort_by_fit_and_time(std::vector<CandidateResult>& results, bool memory_aware);

/// How `evaluate_candidate` times a partition the user gives.
enum class PartitionTiming {
  kExact,           ///< the partition as given
  kAsFasopReports,  ///< FASOP's figures: where FASOP's greedy partitioner ends on this
                    ///< partition by a last move it never re-times, FASOP's stage times are those
                    ///< of the partition before that move; reproduce them
};

/// Evaluates one layout: `partition` if given (validated), else the best one found.
/// `timed_as`, if not null, receives the partition whose stage times were used.
CandidateResult evaluate_candidate(const SearchInput& input, const PlanKey& key,
                                   const std::vector<int>& partition = {},
                                   PartitionTiming timing = PartitionTiming::kExact,
                                   std::vector<int>* timed_as = nullptr);

/// Evaluates one layout at fitting_start_partition's partition; `floor_s` receives the floor.
CandidateResult evaluate_fitting_start(const SearchInput& input, const PlanKey& key, double* floor_s);

/// The pareto search's cheap steps on one layout.
/// First: the faster of fasop_partitions (for a memory-aware policy, exact_bottleneck_partition
/// within memory); `coarse_floor_s` receives coarse_step_time_floor_s.
CandidateResult evaluate_fasop_partitions(const SearchInput& input, const PlanKey& key, double* coarse_floor_s);
/// The same on a context already made (make_plan_context of the layout).
CandidateResult evaluate_fasop_partitions(const SearchInput& input, const PlanContext& ctx, double* coarse_floor_s);
/// Then, where that floor leaves a chance: the floor partition replaces `result`'s if it is
/// faster; `floor_s` receives the exact floor.
void try_floor_partition(const SearchInput& input, CandidateResult& result, double* floor_s);

/// Plans whose step times are within this share of each other are a tie that memory breaks:
/// the cost model is not more precise than this, and a plan with more room is less likely to
/// run out of memory.
inline constexpr double kTimeTieShare = 0.01;

/// Within `results` sorted by step time, each run of fitting plans within kTimeTieShare of the
/// run's fastest is put in order of the GPU memory they leave free, most first (stable).
void rank_time_ties_by_room(std::vector<CandidateResult>& results);

}  // namespace fasop
