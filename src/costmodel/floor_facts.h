#pragma once
#include <array>

namespace fasop {

struct AnalyticOptions;

/// What the search's floors may assume of a cost policy: facts about its formulas, not
/// formulas (docs/search.md#floors). The defaults assume nothing.
struct FloorFacts {
  /// The analytic policy's switches (communication, memory, headroom), which the floors price
  /// alike; none for FASOP's policy.
  const AnalyticOptions* analytic = nullptr;
  /// Each stage runs at the slowest node type (by whole-model compute) among its own ranks'
  /// nodes, so the floors can be tighter (shape_floor.h).
  bool stage_type_is_slowest_rank = false;
  /// By ZeRO stage: a bound on a stage's forward seconds a micro-batch over its forward plus
  /// backward seconds, for the pipeline floors (1: no bound).
  std::array<double, 4> forward_share_bound{1, 1, 1, 1};
  /// The policy's egress_usd_per_step prices zone_traffic (zone_egress.h), which EgressFloor
  /// bounds.
  bool prices_zone_egress = false;
};

}  // namespace fasop
