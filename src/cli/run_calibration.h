#pragma once
// Node types' GPU data fitted to measured runs (`calibrate --from-run`): each run's plan is
// estimated again as the parameters move, until the predictions meet the measured step times;
// and the GPUs' memory runtime constants fitted to the ranks' logged peak memory.
#include <string>
#include <vector>

#include "cli/saved_plan.h"
#include "launch/iteration_log.h"
#include "launch/run_report.h"
#include "specs/runtime_memory.h"

namespace fasop {

/// One run to fit: the plan it ran and the step time its logs measured.
struct CalibrationRun {
  std::string job;
  LoadedPlan plan;
  double measured_step_s = 0;
  std::vector<MemoryRecord> memory;  ///< the logs' memory reports (empty: none logged)
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

/// One logged rank's memory, measured and predicted (its stage's) before and after the fit.
struct CalibratedRankMemory {
  std::string job, gpu;  ///< gpu: the GPU whose constants its stage's prediction takes
  int rank = 0, stage = 0;
  double max_allocated_gib = 0, max_reserved_gib = 0;
  double allocated_before_gib = 0, allocated_after_gib = 0, reserved_before_gib = 0, reserved_after_gib = 0;
};

/// One GPU's runtime constants for one training stack, fitted to its ranks' memory.
struct CalibratedRuntime {
  std::string gpu;
  std::string stack;  ///< the runs' plans' (megatron unless a plan names another)
  std::vector<std::string> node_types;  ///< the node types with this GPU, whose files take the new values
  RuntimeMemory before, after;
  int ranks = 0;  ///< logged ranks fitted
};

struct RunCalibration {
  std::vector<CalibratedParameter> parameters;
  std::vector<CalibratedRun> runs;
  std::vector<CalibratedRuntime> memory;     ///< empty where no run's logs give max allocated
  std::vector<CalibratedRankMemory> ranks;   ///< the ranks memory was fitted to
};

/// Fits `parameter_names` (fit_parameters' names; a per-precision one is the runs' model
/// precision's) of every GPU the runs' plans use, minimising the squared log ratio of predicted
/// to measured step times (minimize_by_coordinates). The runs' plans keep the fitted data.
/// Throws SpecError when a run's plan does not time its layers from GPU data (the fasop
/// policy's measured profiles), naming the run and the fix.
RunCalibration calibrate_from_runs(std::vector<CalibrationRun>& runs, const std::vector<std::string>& parameter_names);

/// Fits the runtime constants (fit_runtime_memory) of each GPU and training stack to the runs'
/// logged ranks with max allocated and max reserved (Megatron-LM's memory line), each rank against
/// its pipeline stage's prediction and grouped by the plan's stack and the GPU whose constants that
/// prediction takes (the stage's smallest-memory node type's). The runs' plans keep the fitted
/// constants. Adds nothing where no rank of a plan's logs them.
void calibrate_memory_from_runs(std::vector<CalibrationRun>& runs, RunCalibration& calibration);

/// The YAML text of cluster file `cluster_text` (from `source`) with the fitted parameters set as
/// `gpu_data:` on the node types the calibration moved (runtime constants as
/// `memory_runtime: {STACK: {workspace_gib, reserve_share}}`); `comment` (lines) heads it.
std::string calibrated_cluster_yaml(const std::string& cluster_text, const std::string& source,
                                    const RunCalibration& calibration, const std::string& comment);

}  // namespace fasop
