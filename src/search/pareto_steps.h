#pragma once
// What the pareto searches (pareto_search.h, bounded_pareto.h) share: the layouts of one shape
// and the test that rules a candidate out against the front found so far.
#include <memory>
#include <vector>

#include "search/pareto_search.h"

namespace fasop {

/// Relative margin under which a floor counts as beaten: covers FASOP's float32 sums.
constexpr double kFloorMargin = 1e-6;

/// The layouts of one shape, with the cluster they are planned on.
struct ShapeWork {
  std::unique_ptr<ClusterSpec> cluster;
  std::vector<PlanKey> keys;
};

/// The layouts of the shape with `counts` nodes of each inventory type (none where the shape has
/// more GPUs than any layout uses: its cluster is then not even built), less the uniform
/// layouts `keep` drops (enumerate_plan_keys).
ShapeWork shape_work(const ParetoInput& input, const NodeCounts& counts, const LayoutFilter& keep = {});

/// The search input of one shape: the pareto search's, planned on the shape's cluster.
SearchInput input_for(const ParetoInput& input, const ShapeWork& work);

/// USD per second of the nodes of `cluster` (egress apart), times `iterations`: what a plan on
/// it costs for the whole run per second of its step time, at the least.
double run_usd_per_step_second(const ClusterSpec& cluster, double iterations);

/// True when a plan no faster than `floor_s`, whose training cost is at least
/// `usd_per_step_second` times its step time, could not be admitted or could not reach `front`.
bool cannot_reach_front(const std::vector<CandidateResult>& front, const PlanConstraints& constraints,
                        double floor_s, double usd_per_step_second);

/// The same with the cost floor given apart from the time's (a box of shapes has a tighter
/// one than its least price times its time floor): `floor_cost_usd` for the whole run.
bool cannot_reach_front_at(const std::vector<CandidateResult>& front, const PlanConstraints& constraints,
                           double floor_s, double floor_cost_usd);

/// A step time from which on cannot_reach_front holds (it only grows with the time), as low as
/// the front and the constraints allow; infinity when none is known. A floor program may stop
/// at it (floor_partition's cap).
double front_time_cap_s(const std::vector<CandidateResult>& front, const PlanConstraints& constraints,
                        double usd_per_step_second);

/// True when `result`, whose step time cannot go below `floor_s`, could not reach `front`.
/// A memory-aware policy's partition runs out of memory only where no partition fits, so such
/// a candidate cannot meet --exclude-oom whatever its partition.
bool ruled_out(const FrontTracker& front, const PlanConstraints& constraints, const CandidateResult& result,
               double floor_s, double usd_per_step_second, bool memory_aware);

}  // namespace fasop
