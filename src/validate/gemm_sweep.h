#pragma once
// validate, GEMM by GEMM: a GPU data file's GEMM model (gemm_peak_share, gemm_half_dim,
// gemm_unaligned_share) against a GEMM sweep measured by `fasop-cpp profile gemm` (kind:
// gemm_times), and the fit of that model to a sweep that scripts/fit-gpu-data.sh reports.
#include <map>
#include <string>
#include <vector>

#include "profiler/gemm_fit.h"
#include "specs/gpu_spec.h"

namespace fasop {

/// One GPU's measured GEMM times per dtype, as `profile gemm` writes them.
struct GemmSweep {
  std::string file;
  std::string gpu;  ///< the shipped GPU data (configs/gpus) it was measured on
  std::map<std::string, std::vector<GemmPoint>> points;  ///< dtype -> points in the file's order
};

/// True for a YAML text whose `kind` is gemm_times.
bool is_gemm_sweep(const std::string& yaml_text);
/// Parses a sweep; a problem throws SpecError naming `source` and the field.
GemmSweep parse_gemm_sweep(const std::string& yaml_text, const std::string& source);

/// How a GPU's GEMM model predicts a sweep's points of one dtype; the launch-bound points
/// (gemm_fit.h) are left out.
struct GemmSweepResult {
  std::string file, gpu, dtype;
  int points = 0, launch_bound = 0;
  double median_abs_error_pct = 0;
  double worst_error_pct = 0;  ///< signed: (predicted - measured) / measured x 100
  std::string worst_shape;     ///< m x n x k
};

/// Each dtype of the sweep that `gpu` has efficiencies for, predicted by its GEMM model.
std::vector<GemmSweepResult> predict_gemm_sweep(const GemmSweep& sweep, const GpuSpec& gpu);

/// The text `validate` prints for the sweeps: a line per sweep and dtype.
std::string gemm_sweep_text(const std::vector<GemmSweepResult>& results);

/// scripts/fit-gpu-data.sh's report of the GEMM model of `precision` fitted to the points of the
/// `fitted` sweeps together against `gpu`'s peak, with its errors on each of them and on the
/// `held_out` sweeps: the header and parameter lines in the form scripts/sync-gpu-data.py reads,
/// then the errors.
std::string gemm_fit_report(const std::vector<GemmSweep>& fitted, const std::vector<GemmSweep>& held_out,
                            const GpuSpec& gpu, const std::string& precision);

}  // namespace fasop
