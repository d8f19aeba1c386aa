#include "validate/efficiency_fit.h"

#include <cmath>
#include <limits>

#include "validate/validate.h"

namespace fasop {
namespace {

// Element-wise kernels reach at most about 90% of HBM bandwidth (STREAM-like copies on A100
// and H100): a fit above it would hide traffic the model overcounts behind impossible hardware.
constexpr double kMaxMemoryEfficiency = 0.90;

double mean_abs_error_pct(const std::vector<ValidationCase>& cases, double compute, double memory) {
  double sum = 0;
  for (ValidationCase c : cases) {
    c.node_type.compute_efficiency = compute;
    c.node_type.memory_efficiency = memory;
    sum += std::fabs(predict_case(c).error_pct);
  }
  return sum / cases.size();
}

/// The best point of the grid compute in [c0, c1], memory in [m0, m1], both by `step`.
EfficiencyFit best_on_grid(const std::vector<ValidationCase>& cases, double c0, double c1, double m0, double m1,
                           double step) {
  EfficiencyFit best;
  best.mean_abs_error_pct = std::numeric_limits<double>::infinity();
  const int nc = static_cast<int>(std::round((c1 - c0) / step)), nm = static_cast<int>(std::round((m1 - m0) / step));
  for (int i = 0; i <= nc; ++i)
    for (int j = 0; j <= nm; ++j) {
      const double compute = c0 + i * step, memory = m0 + j * step;
      if (compute <= 0 || compute > 1 || memory <= 0 || memory > kMaxMemoryEfficiency + 1e-9) continue;
      const double error = mean_abs_error_pct(cases, compute, memory);
      if (error < best.mean_abs_error_pct) best = {compute, memory, error};
    }
  return best;
}

}  // namespace

EfficiencyFit fit_efficiencies(const std::vector<ValidationCase>& cases) {
  EfficiencyFit coarse = best_on_grid(cases, 0.30, 0.98, 0.40, 0.90, 0.02);
  return best_on_grid(cases, coarse.compute_efficiency - 0.02, coarse.compute_efficiency + 0.02,
                      coarse.memory_efficiency - 0.02, coarse.memory_efficiency + 0.02, 0.005);
}

std::vector<ValidationCase> with_efficiencies(std::vector<ValidationCase> cases, const EfficiencyFit& fit) {
  for (ValidationCase& c : cases) {
    c.node_type.compute_efficiency = fit.compute_efficiency;
    c.node_type.memory_efficiency = fit.memory_efficiency;
  }
  return cases;
}

}  // namespace fasop
