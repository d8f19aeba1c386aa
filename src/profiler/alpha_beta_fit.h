#pragma once
#include <vector>

namespace fasop {

/// One measured point: a message size and the seconds an operation took.
struct TimedMessage {
  double bytes = 0;
  double seconds = 0;
};

/// The alpha-beta model t = latency + bytes / bandwidth fitted to measured points.
struct AlphaBeta {
  double latency_s = 0;
  double bytes_per_s = 0;
  double predict_s(double bytes) const { return latency_s + bytes / bytes_per_s; }
  /// The largest relative error |predicted - measured| / measured over `points`.
  double worst_relative_error(const std::vector<TimedMessage>& points) const;
};

/// Least squares of relative error (each point weighs the same whatever its size), latency
/// and bandwidth kept positive. Needs two or more distinct sizes.
AlphaBeta fit_alpha_beta(const std::vector<TimedMessage>& points);

}  // namespace fasop
