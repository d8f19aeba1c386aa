#pragma once
#include <limits>
#include <set>
#include <utility>
#include <vector>

#include "costmodel/cost_policy.h"
#include "costmodel/plan_context.h"

namespace fasop {

/// FASOP's greedy partitioner (pipe.py minmax, and its encoder/decoder split for two-segment
/// models), reproduced with its quirks: start balanced, move one unit from the slowest stage to
/// the fastest until the slowest stops improving. For two segments it partitions each half on
/// the first half's unit costs and keeps the split with the lowest pipeline latency.
/// `timed`, if given, receives the partition FASOP's stage times describe where its last step
/// changed the partition without re-timing it (else it is left as is).
std::vector<int> fasop_greedy_partition(const PlanContext& ctx, const CostPolicy& policy,
                                        std::vector<int>* timed = nullptr);

/// The exact layer partitioner: the partition that minimises the slowest stage's time per
/// micro-batch (compute plus the sends it makes), each stage within its GPU's memory where the
/// policy models memory (PlanContext::partition_memory); stages never span two segments.
/// Dynamic programming over cut points, O(pp x units x widest stage); {} if nothing fits.
std::vector<int> exact_bottleneck_partition(const PlanContext& ctx);

/// exact_bottleneck_partition within memory; where nothing fits, the same regardless of memory
/// (fits = false), so that the plan is reported out of memory. One stage: the whole model.
struct FittingPartition {
  std::vector<int> partition;
  bool fits = true;
};
FittingPartition exact_fitting_partition(const PlanContext& ctx);

/// Where best_partition starts when stages must fit their GPUs: exact_fitting_partition, or the
/// floor partition if it fits and is faster. With its step time and the floor (floor_partition's).
struct FittingStart {
  std::vector<int> partition;
  bool fits = true;
  double step_s = 0;
  double floor_s = 0;
};
FittingStart fitting_start_partition(const PlanContext& ctx, const CostPolicy& policy);

/// The partition that minimises the slowest stage's compute time, exactly (dynamic
/// programming over cut points); stages never span two segments.
std::vector<int> min_bottleneck_partition(const PlanContext& ctx);

/// The partition with the least total compute among those whose every stage costs at most
/// `cap_s` (exact dynamic programming); {} if none fits.
std::vector<int> min_total_partition(const PlanContext& ctx, double cap_s);

/// Steepest descent on the step time: moves one unit across a stage boundary while that
/// lowers the estimated step time. Never returns a worse partition than `start`.
std::vector<int> improve_partition(const PlanContext& ctx, const CostPolicy& policy,
                                   std::vector<int> start);

/// improve_partition from `start` (whose step time is `start_s`), sharing `visited` with
/// other descents: it stops early on a partition in `visited` (where an earlier descent went
/// on to its end) and adds the partitions it passes. Returns the end and its step time.
std::pair<double, std::vector<int>> descend(const PlanContext& ctx, const CostPolicy& policy,
                                            std::vector<int> start, double start_s,
                                            std::set<std::vector<int>>& visited);

/// The best partition the search finds: seeds from FASOP's greedy, the exact DPs above and the
/// exact minimiser of the step time's lower bound, the two best polished by local search.
/// Never slower than FASOP's greedy one.
std::vector<int> best_partition(const PlanContext& ctx, const CostPolicy& policy);

/// True when every stage of `partition` fits its GPU (always, for a policy without a memory model).
bool fits_memory(const PlanContext& ctx, const std::vector<int>& partition);

/// FASOP's greedy partition, and the partition its figures describe if that differs (valid
/// ones, distinct, in that order).
std::vector<std::vector<int>> fasop_partitions(const PlanContext& ctx, const CostPolicy& policy);

/// The exact minimiser of CostPolicy::step_time_lower_bound's chains over partitions (dynamic
/// programming), and that minimum: a floor no partition's step time goes below. With a finite
/// `cap_s`, a floor of cap_s or more comes back as cap_s with no partition, sooner: the program
/// never tries a stage that alone reaches the cap (a search passes the time its front rules out).
struct FloorPartition {
  std::vector<int> partition;
  double floor_s = 0;
};
FloorPartition floor_partition(const PlanContext& ctx, const CostPolicy& policy,
                               double cap_s = std::numeric_limits<double>::infinity());

/// floor_partition's floor without the sends, the all-reduce and the embedding sync: no higher,
/// and it needs only the stages' node types and unit times (make_context.h's add_unit_times),
/// not the memory model nor the sends. cap_s as there (a floor of cap_s or more may come back
/// as cap_s); 0 for one stage.
double compute_floor_s(const PlanContext& ctx, const CostPolicy& policy,
                       double cap_s = std::numeric_limits<double>::infinity());

/// A floor under every partition's step time without a dynamic program: the pipeline runs the
/// whole model once and some stage at least m times its 1/pp share, each unit at the fastest
/// speed of any stage. Looser than floor_partition's, and far cheaper.
double coarse_step_time_floor_s(const PlanContext& ctx, const CostPolicy& policy);

/// False when no partition can fit every stage in its GPU (a necessary condition, no dynamic
/// program): the stages' limits together fall short of every parameter at the fewest bytes any
/// stage gives one, every activation at the fewest micro-batches any stage holds, and the fixed
/// bytes of each. True for a policy without a memory model.
bool some_partition_may_fit(const PlanContext& ctx);

/// A floor like coarse_step_time_floor_s, tighter where stages run on node types of different
/// speeds: each stage type's least slowdown against the fastest, unit by unit, caps the share
/// of the model its stages can take (no dynamic program either).
double stage_type_step_floor_s(const PlanContext& ctx, const CostPolicy& policy);

}  // namespace fasop
