#pragma once
// The fit behind `fasop-cpp profile gemm`: measured GEMM times against the planner's GEMM model
// (profiles/analytic_profile.h, gemm_efficiency), giving the gemm_peak_share and gemm_half_dim
// of a GPU data file (configs/gpus/*.yaml). Plain C++: no LibTorch.
#include <vector>

namespace fasop {

/// One measured GEMM: (m x k) x (k x n) took `seconds`.
struct GemmPoint {
  double m = 0, n = 0, k = 0;
  double seconds = 0;
  double flops() const { return 2 * m * n * k; }
};

/// The model's two parameters fitted to points, and how far it lands from them.
struct GemmFit {
  double gemm_peak_share = 1;  ///< in (0, 1]
  double gemm_half_dim = 0;    ///< >= 0
  double median_error = 0;     ///< median of |predicted - measured| / measured over the points
  double worst_error = 0;      ///< the largest of them
  /// Seconds the model gives a GEMM at `peak_flops` (FLOP/s): 2 m n k / (peak x share(m, n, k)).
  double predict_s(double m, double n, double k, double peak_flops) const;
};

/// Least squares of log seconds over gemm_peak_share in (0, 1] and gemm_half_dim >= 0, for a
/// device whose dense peak is `peak_flops`: for each half-dimension the best share is closed
/// form (the mean log share, capped at 1), and the half-dimension is found by a log-spaced grid
/// search refined by golden section. Needs one or more points with positive times.
GemmFit fit_gemm(const std::vector<GemmPoint>& points, double peak_flops);

}  // namespace fasop
