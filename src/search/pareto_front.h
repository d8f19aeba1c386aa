#pragma once
#include <cstddef>
#include <limits>
#include <vector>

#include "costmodel/estimate.h"

namespace fasop {

/// A candidate as the front sees it: seconds per step against dollars for the whole run.
struct CostTimePoint {
  double step_time_s = 0;
  double cost_usd = 0;
};

/// Indices of the points that no other point beats on both step time and cost (a point beats
/// another when it is no worse on both and better on one), cheapest first. Of equal points
/// only the one with the lowest index is listed, so that the front has one line per trade-off.
std::vector<size_t> pareto_front(const std::vector<CostTimePoint>& points);

/// Limits a plan must respect to be on the constrained front or be called best.
struct PlanConstraints {
  double max_step_time_s = std::numeric_limits<double>::infinity();
  double max_cost_usd = std::numeric_limits<double>::infinity();  ///< for the whole run
  bool exclude_oom = false;  ///< drop plans that do not fit without ZeRO
  /// The shape searches may leave a plan out where one they keep is at most this share slower
  /// and this share dearer (0: the exact front; 0.05: every plan of the exact front has a kept
  /// one within 5% of its time and 5% of its cost). Not a constraint on the plans admitted.
  double tolerance = 0;

  bool admits(const PlanEstimate& estimate) const {
    return estimate.step_time_s <= max_step_time_s && estimate.train_cost_usd <= max_cost_usd &&
           !(exclude_oom && estimate.memory.is_oom);
  }
};

}  // namespace fasop
