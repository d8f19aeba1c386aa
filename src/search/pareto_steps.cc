#include "search/pareto_steps.h"

#include <algorithm>
#include <limits>

namespace fasop {

ShapeWork shape_work(const ParetoInput& input, const NodeCounts& counts, const LayoutFilter& keep) {
  ShapeWork work;
  // A shape with more GPUs than any layout has no layouts: skipped before its cluster is built,
  // so that a large inventory costs its shapes, not their nodes squared.
  if (shape_gpus(*input.search.cluster, counts) > most_layout_gpus(*input.search.model, *input.search.cluster, input.search.space))
    return work;
  work.cluster = std::make_unique<ClusterSpec>(shape_cluster(*input.search.cluster, counts));
  work.keys = enumerate_plan_keys(*input.search.model, *work.cluster, input.search.space, keep);
  return work;
}

SearchInput input_for(const ParetoInput& input, const ShapeWork& work) {
  SearchInput shape_input = input.search;
  shape_input.cluster = work.cluster.get();
  return shape_input;
}

double run_usd_per_step_second(const ClusterSpec& cluster, double iterations) {
  return cluster.price_usd_per_s() * iterations;
}

bool cannot_reach_front(const std::vector<CandidateResult>& front, const PlanConstraints& constraints,
                        double floor_s, double usd_per_step_second) {
  return cannot_reach_front_at(front, constraints, floor_s, floor_s * usd_per_step_second);
}

bool cannot_reach_front_at(const std::vector<CandidateResult>& front, const PlanConstraints& constraints,
                           double floor_s, double floor_cost) {
  if (floor_s > constraints.max_step_time_s * (1 + kFloorMargin) ||
      floor_cost > constraints.max_cost_usd * (1 + kFloorMargin))
    return true;
  // The front runs cheapest (slowest) to dearest (fastest): the fastest point no dearer than
  // the floor's cost decides. Within a tolerance, a point at most (1 + tolerance) x the floor's
  // time and cost covers every plan above the floor.
  floor_s *= 1 + constraints.tolerance;
  const double cost_limit = floor_cost * (1 + constraints.tolerance) * (1 - kFloorMargin);
  auto dearer = std::upper_bound(front.begin(), front.end(), cost_limit, [](double c, const CandidateResult& r) {
    return c < r.estimate.train_cost_usd;
  });
  if (dearer == front.begin()) return false;
  return std::prev(dearer)->estimate.step_time_s <= floor_s * (1 - kFloorMargin);
}

double front_time_cap_s(const std::vector<CandidateResult>& front, const PlanConstraints& constraints,
                        double usd_per_step_second) {
  const double inf = std::numeric_limits<double>::infinity();
  // The time at which each clause of cannot_reach_front starts to hold, the least of them.
  auto at_cost = [&](double usd) {
    if (usd_per_step_second > 0) return usd / usd_per_step_second;
    return usd > 0 ? inf : 0.0;
  };
  double cap = std::min(constraints.max_step_time_s * (1 + kFloorMargin), at_cost(constraints.max_cost_usd * (1 + kFloorMargin)));
  for (const CandidateResult& point : front)
    cap = std::min(cap, std::max(point.estimate.step_time_s, at_cost(point.estimate.train_cost_usd)) /
                            ((1 - kFloorMargin) * (1 + constraints.tolerance)));
  // The clauses' boundaries are strict or not: a step past them, checked, else no cap.
  cap *= 1 + 1e-12;
  return cap < inf && cannot_reach_front(front, constraints, cap, usd_per_step_second) ? cap : inf;
}

bool ruled_out(const FrontTracker& front, const PlanConstraints& constraints, const CandidateResult& result,
               double floor_s, double usd_per_step_second, bool memory_aware) {
  const PlanEstimate& e = result.estimate;
  if (memory_aware && constraints.exclude_oom && e.memory.is_oom && !result.plan.partition.empty()) return true;
  if (result.plan.partition.empty() || !(e.step_time_s > 0) || e.step_time_s == std::numeric_limits<double>::infinity())
    return false;
  return cannot_reach_front(front.bound(), constraints, floor_s, usd_per_step_second);
}

}  // namespace fasop
