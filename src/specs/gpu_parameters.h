#pragma once
// A GPU's data by parameter name ("gemm_peak_share", "bf16.attention_peak_share",
// "network.bus_share", "dispatch_s.eager"): what fits move (validate --fit, calibrate
// --from-run) and what a cluster file's node type may set itself (field gpu_data).
#include <string>
#include <vector>

#include "specs/gpu_spec.h"

namespace fasop {

/// One parameter of a GPU's data the fit may move, with its bounds.
struct FitParameter {
  std::string name;  ///< e.g. gemm_peak_share, attention_peak_share, dispatch_s.eager, nvlink.bus_share
  double low = 0, high = 1;
};

/// The parameters fits know, with their physical bounds.
std::vector<FitParameter> fit_parameters();
/// The parameter called `name`; throws SpecError naming --fit-params otherwise.
FitParameter fit_parameter(const std::string& name);

/// True when `name` (with or without a precision prefix) is one of fit_parameters().
bool is_gpu_parameter(const std::string& name);
/// fit_parameters()' names, comma-separated, for messages.
std::string gpu_parameter_names();

/// True for a parameter each precision has its own of (gemm_peak_share, memory_share, ...),
/// false for the GPU's (collectives, launches, overlap); `name` may carry a precision prefix.
bool is_per_precision_parameter(const std::string& name);

/// Reads or writes parameter `name` of `gpu`'s data for `precision` (per-precision
/// parameters) or the GPU as a whole (collectives, launches, overlap).
double get_parameter(const GpuSpec& gpu, const std::string& precision, const std::string& name);
void set_parameter(GpuSpec& gpu, const std::string& precision, const std::string& name, double value);

}  // namespace fasop
