#pragma once
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

/// The best partition the search finds: never slower than FASOP's greedy one.
std::vector<int> best_partition(const PlanContext& ctx, const CostPolicy& policy);

}  // namespace fasop
