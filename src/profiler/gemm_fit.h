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

/// GEMMs shorter than this x the host's launch time (a few microseconds a GEMM on LibTorch) are
/// bound by the launch, not by the GPU: a GEMM model's fit leaves them out.
constexpr double kLaunchBoundFactor = 3;

/// The time under which a sweep's GEMMs are launch-bound: kLaunchBoundFactor x its shortest
/// GEMM where that one ran at under a tenth of the best rate measured (so was itself bound by
/// its launch); 0 where the sweep has no such GEMM (all its shapes are large).
double launch_bound_s(const std::vector<GemmPoint>& points);

/// The points a fit of the GEMM model takes: those that outlast their launch (launch_bound_s),
/// or all of them where no aligned one (of `element_bytes` elements) does, as in a sweep of small
/// shapes only. In the points' order.
std::vector<GemmPoint> outlasting_launch(const std::vector<GemmPoint>& points, double element_bytes);

/// A sweep's GEMM model: gemm_peak_share and gemm_half_dim fitted to its aligned shapes that are
/// not launch-bound, and gemm_unaligned_share to the rest that are not (the geometric mean of
/// the aligned model's time over the measured one, at most 1; 1 when there are none).
struct GemmSweepFit {
  GemmFit fit;
  double gemm_unaligned_share = 1;
  int launch_bound = 0;  ///< points left out as launch-bound
  int aligned = 0;       ///< points the share and half-dimension are fitted to
  int unaligned = 0;     ///< points the unaligned share is fitted to
};

/// True when a GEMM's n and k are whole multiples of 16 bytes of `element_bytes` elements.
bool gemm_aligned(const GemmPoint& point, double element_bytes);

/// The fit of one dtype's points (of `element_bytes` elements) at a dense peak of `peak_flops`,
/// on outlasting_launch's points. Needs one or more aligned points.
GemmSweepFit fit_gemm_sweep(const std::vector<GemmPoint>& points, double peak_flops, double element_bytes);

}  // namespace fasop
