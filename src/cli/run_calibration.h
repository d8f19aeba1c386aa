#pragma once
// Node types' GPU data fitted to measured runs (`calibrate --from-run`): each run's plan is
// estimated again as the parameters move, until the predictions meet the measured step times.
#include <string>
#include <vector>

#include "cli/saved_plan.h"

namespace fasop {

/// One run to fit: the plan it ran and the step time its logs measured.
struct CalibrationRun {
  std::string job;
  LoadedPlan plan;
  double measured_step_s = 0;
};

/// A parameter of one GPU's data the calibration moved.
struct CalibratedParameter {
  std::string gpu;        ///< the GPU's name (its data is shared by every node type with it)
  std::string parameter;  ///< with its precision where it has one, e.g. bf16.gemm_peak_share
  std::vector<std::string> node_types;  ///< the node types with this GPU, whose files take the new value
  double low = 0, high = 0;  ///< its bounds
  double before = 0, after = 0;
  bool at_bound() const;  ///< the fit stopped at a bound: the error left is not this parameter's
};

/// A run's prediction before and after.
struct CalibratedRun {
  std::string job;
  double measured_s = 0, before_s = 0, after_s = 0;
};

struct RunCalibration {
  std::vector<CalibratedParameter> parameters;
  std::vector<CalibratedRun> runs;
};

/// Fits `parameter_names` (fit_parameters' names; a per-precision one is the runs' model
/// precision's) of every GPU the runs' plans use, minimising the squared log ratio of predicted
/// to measured step times (minimize_by_coordinates). The runs' plans keep the fitted data.
/// Throws SpecError when a run's plan does not time its layers from GPU data (the fasop
/// policy's measured profiles), naming the run and the fix.
RunCalibration calibrate_from_runs(std::vector<CalibrationRun>& runs, const std::vector<std::string>& parameter_names);

/// The YAML text of cluster file `cluster_text` (from `source`) with the fitted parameters set as
/// `gpu_data:` on the node types the calibration moved; `comment` (lines) heads it.
std::string calibrated_cluster_yaml(const std::string& cluster_text, const std::string& source,
                                    const RunCalibration& calibration, const std::string& comment);

}  // namespace fasop
