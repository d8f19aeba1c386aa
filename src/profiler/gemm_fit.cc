#include "profiler/gemm_fit.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "profiles/analytic_profile.h"
#include "specs/gpu_spec.h"

namespace fasop {
namespace {

PrecisionEfficiency efficiency_of(double share, double half_dim) {
  PrecisionEfficiency e;
  e.gemm_peak_share = share;
  e.gemm_half_dim = half_dim;
  return e;
}

/// For a half-dimension: the best log share (capped at 0, a share of 1) and the sum of squared
/// log errors it leaves.
struct ShareFit {
  double log_share = 0, squared_error = 0;
};

ShareFit fit_share(const std::vector<GemmPoint>& points, double peak_flops, double half_dim) {
  // log t = log(F / peak) - log share - sum_d log(d / (d + h)); with y the measured log share
  // less the shape term, the error of a point is log share - y.
  std::vector<double> y;
  y.reserve(points.size());
  for (const GemmPoint& p : points) {
    double shape = 0;
    if (half_dim > 0)
      for (double d : {p.m, p.n, p.k}) shape += std::log(d / (d + half_dim));
    y.push_back(std::log(p.flops() / (peak_flops * p.seconds)) - shape);
  }
  ShareFit fit;
  for (double v : y) fit.log_share += v;
  fit.log_share = std::min(0.0, fit.log_share / double(y.size()));
  for (double v : y) fit.squared_error += (fit.log_share - v) * (fit.log_share - v);
  return fit;
}

}  // namespace

double GemmFit::predict_s(double m, double n, double k, double peak_flops) const {
  Gemm gemm;
  gemm.m = m, gemm.n = n, gemm.k = k;
  return gemm.flops() / (peak_flops * gemm_efficiency(gemm, efficiency_of(gemm_peak_share, gemm_half_dim), 0));
}

GemmFit fit_gemm(const std::vector<GemmPoint>& points, double peak_flops) {
  if (points.empty()) throw std::invalid_argument("fit_gemm: no points");
  if (!(peak_flops > 0)) throw std::invalid_argument("fit_gemm: the peak must be positive");
  double smallest = points.front().m, largest = smallest;
  for (const GemmPoint& p : points) {
    if (!(p.seconds > 0) || !(p.m > 0) || !(p.n > 0) || !(p.k > 0))
      throw std::invalid_argument("fit_gemm: every point needs positive dimensions and time");
    smallest = std::min({smallest, p.m, p.n, p.k});
    largest = std::max({largest, p.m, p.n, p.k});
  }
  auto error_at = [&](double h) { return fit_share(points, peak_flops, h).squared_error; };
  // The grid: 0, then log-spaced from 1/100 of the smallest dimension to 10 x the largest. The
  // error need not be unimodal over all of it, so the grid picks the valley and golden section
  // refines it between the neighbouring grid points.
  constexpr int kSteps = 400;
  std::vector<double> grid = {0};
  const double low = smallest / 100, high = 10 * largest;
  for (int i = 0; i <= kSteps; ++i) grid.push_back(low * std::pow(high / low, double(i) / kSteps));
  size_t best = 0;
  double best_error = error_at(grid[0]);
  for (size_t i = 1; i < grid.size(); ++i) {
    double e = error_at(grid[i]);
    if (e < best_error * (1 - 1e-12)) best = i, best_error = e;  // the smallest h among equals
  }
  double half_dim = grid[best];
  if (best > 0) {
    double a = grid[best - 1], b = grid[std::min(best + 1, grid.size() - 1)];
    const double ratio = (std::sqrt(5.0) - 1) / 2;
    double c = b - ratio * (b - a), d = a + ratio * (b - a);
    double fc = error_at(c), fd = error_at(d);
    for (int i = 0; i < 100 && b - a > 1e-9 * b; ++i) {
      if (fc < fd) {
        b = d, d = c, fd = fc, c = b - ratio * (b - a), fc = error_at(c);
      } else {
        a = c, c = d, fc = fd, d = a + ratio * (b - a), fd = error_at(d);
      }
    }
    double refined = (a + b) / 2;
    if (error_at(refined) < best_error) half_dim = refined;
  }
  GemmFit fit;
  fit.gemm_half_dim = half_dim;
  fit.gemm_peak_share = std::exp(fit_share(points, peak_flops, half_dim).log_share);
  std::vector<double> errors;
  for (const GemmPoint& p : points)
    errors.push_back(std::abs(fit.predict_s(p.m, p.n, p.k, peak_flops) - p.seconds) / p.seconds);
  std::sort(errors.begin(), errors.end());
  const size_t n = errors.size();
  fit.median_error = n % 2 ? errors[n / 2] : (errors[n / 2 - 1] + errors[n / 2]) / 2;
  fit.worst_error = errors.back();
  return fit;
}

bool gemm_aligned(const GemmPoint& point, double element_bytes) {
  Gemm gemm;
  gemm.m = point.m, gemm.n = point.n, gemm.k = point.k;
  return gemm.aligned(element_bytes);
}

double launch_bound_s(const std::vector<GemmPoint>& points) {
  if (points.empty()) return 0;
  const GemmPoint* shortest = &points.front();
  double best_rate = 0;
  for (const GemmPoint& p : points) {
    if (p.seconds < shortest->seconds) shortest = &p;
    best_rate = std::max(best_rate, p.flops() / p.seconds);
  }
  return shortest->flops() / shortest->seconds < 0.1 * best_rate ? kLaunchBoundFactor * shortest->seconds : 0;
}

std::vector<GemmPoint> outlasting_launch(const std::vector<GemmPoint>& points, double element_bytes) {
  const double floor_s = launch_bound_s(points);
  std::vector<GemmPoint> kept;
  bool any_aligned = false;
  for (const GemmPoint& p : points)
    if (p.seconds >= floor_s) {
      kept.push_back(p);
      any_aligned |= gemm_aligned(p, element_bytes);
    }
  return any_aligned ? kept : points;
}

GemmSweepFit fit_gemm_sweep(const std::vector<GemmPoint>& points, double peak_flops, double element_bytes) {
  GemmSweepFit out;
  if (points.empty()) throw std::invalid_argument("fit_gemm_sweep: no points");
  const std::vector<GemmPoint> kept = outlasting_launch(points, element_bytes);
  out.launch_bound = int(points.size() - kept.size());
  std::vector<GemmPoint> aligned, unaligned;
  for (const GemmPoint& p : kept) (gemm_aligned(p, element_bytes) ? aligned : unaligned).push_back(p);
  if (aligned.empty()) throw std::invalid_argument("fit_gemm_sweep: no aligned GEMM (n and k multiples of 16 bytes)");
  out.aligned = int(aligned.size());
  out.unaligned = int(unaligned.size());
  out.fit = fit_gemm(aligned, peak_flops);
  if (!unaligned.empty()) {
    double log_share = 0;
    for (const GemmPoint& p : unaligned) log_share += std::log(out.fit.predict_s(p.m, p.n, p.k, peak_flops) / p.seconds);
    out.gemm_unaligned_share = std::min(1.0, std::exp(log_share / double(unaligned.size())));
  }
  return out;
}

}  // namespace fasop
