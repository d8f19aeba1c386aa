#include "profiler/alpha_beta_fit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <stdexcept>
#include <string>

namespace fasop {

namespace {

/// A number for messages, %g style (std::to_string would print 1e-10 as 0.000000).
std::string text(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", value);
  return buffer;
}

/// Throws unless every point has a finite non-negative size and a finite positive time
/// (relative error divides by the time) and there are two or more distinct sizes.
void check_points(const std::vector<TimedMessage>& points) {
  std::set<double> sizes;
  for (const TimedMessage& p : points) {
    if (!std::isfinite(p.bytes) || p.bytes < 0)
      throw std::invalid_argument("alpha-beta fit: message size " + text(p.bytes) +
                                  " bytes is not a finite non-negative number");
    if (!std::isfinite(p.seconds) || p.seconds <= 0)
      throw std::invalid_argument("alpha-beta fit: time " + text(p.seconds) +
                                  " s is not a finite positive number");
    sizes.insert(p.bytes);
  }
  if (sizes.size() < 2)
    throw std::invalid_argument("alpha-beta fit: needs two or more distinct message sizes, got " +
                                std::to_string(sizes.size()));
}

/// The largest size: sizes are divided by it so that the normal equations hold numbers near 1
/// (bytes reach 1e8 and their squares 1e16, next to latency terms of order 1).
double largest_bytes(const std::vector<TimedMessage>& points) {
  double largest = 0;
  for (const TimedMessage& p : points) largest = std::max(largest, p.bytes);
  return largest;
}

/// Latency and seconds per byte minimising sum(((latency + spb * bytes) - t) / t)^2: the
/// weighted (1/t^2) linear least squares, by its 2x2 normal equations in scaled sizes.
/// Returns false when the equations are singular (which distinct sizes rule out in exact
/// arithmetic, but not if they differ only in the last bits).
bool solve_with_latency(const std::vector<TimedMessage>& points, double scale_bytes, double& latency_s,
                        double& s_per_byte) {
  // Each point is the row [1/t, u/t] with target 1, u = bytes / scale.
  double s11 = 0, s12 = 0, s22 = 0, r1 = 0, r2 = 0;
  for (const TimedMessage& p : points) {
    double a = 1 / p.seconds, b = p.bytes / scale_bytes / p.seconds;
    s11 += a * a;
    s12 += a * b;
    s22 += b * b;
    r1 += a;
    r2 += b;
  }
  double det = s11 * s22 - s12 * s12;
  if (!(det > 1e-12 * s11 * s22)) return false;
  latency_s = (r1 * s22 - r2 * s12) / det;
  s_per_byte = (s11 * r2 - s12 * r1) / det / scale_bytes;
  return true;
}

/// Seconds per byte minimising the same relative error with the latency held at 0.
double solve_without_latency(const std::vector<TimedMessage>& points) {
  double num = 0, den = 0;
  for (const TimedMessage& p : points) {
    double x = p.bytes / p.seconds;
    num += x;
    den += x * x;
  }
  return den > 0 ? num / den : 0;
}

}  // namespace

double AlphaBeta::worst_relative_error(const std::vector<TimedMessage>& points) const {
  double worst = 0;
  for (const TimedMessage& p : points)
    worst = std::max(worst, std::fabs(predict_s(p.bytes) - p.seconds) / p.seconds);
  return worst;
}

AlphaBeta fit_alpha_beta(const std::vector<TimedMessage>& points) {
  check_points(points);
  double latency_s = 0, s_per_byte = 0;
  bool solved = solve_with_latency(points, largest_bytes(points), latency_s, s_per_byte);
  // A negative latency is an artefact of noise at the small sizes (or of a time that grows
  // faster than linearly); a link has none, so fit the bandwidth alone.
  if (!solved || latency_s < 0) {
    latency_s = 0;
    s_per_byte = solve_without_latency(points);
  }
  if (!(s_per_byte > 0) || !std::isfinite(s_per_byte))
    throw std::invalid_argument(
        "alpha-beta fit: the time does not grow with the message size (fitted seconds per byte " +
        text(s_per_byte) + "), so there is no bandwidth to report");
  AlphaBeta fit;
  fit.latency_s = latency_s;
  fit.bytes_per_s = 1 / s_per_byte;
  return fit;
}

}  // namespace fasop
