#pragma once
// A GPU's data (configs/gpus/) fitted to some validation cases, so that the others measure the
// fitted model on runs it has not seen (`validate --fit`).
#include <string>
#include <vector>

#include "specs/validation_case.h"

namespace fasop {

/// One parameter of a GPU's data the fit may move, with its bounds.
struct FitParameter {
  std::string name;  ///< e.g. gemm_peak_share, attention_peak_share, dispatch_s.eager, nvlink.bus_share
  double low = 0, high = 1;
};

/// The parameters `fit_gpu_data` knows, with their physical bounds.
std::vector<FitParameter> fit_parameters();
/// The parameter called `name`; throws SpecError naming --fit-params otherwise.
FitParameter fit_parameter(const std::string& name);

/// Reads or writes parameter `name` of `gpu`'s data for `precision` (per-precision
/// parameters) or the GPU as a whole (collectives, launches, overlap).
double get_parameter(const GpuSpec& gpu, const std::string& precision, const std::string& name);
void set_parameter(GpuSpec& gpu, const std::string& precision, const std::string& name, double value);

/// What the fit found.
struct GpuFit {
  std::string gpu, precision;
  std::vector<std::pair<std::string, double>> values;  ///< parameter -> fitted value
  double error = 0;  ///< the objective on the fitted cases
};

/// Fits `parameters` of GPU `gpu`'s data (precision `precision`) to the step cases and the
/// layer-time cases given (those of other GPUs are ignored): coordinate descent, each
/// parameter by golden-section search within its bounds, until no sweep improves. The
/// objective: mean absolute error of the step cases plus the median absolute error of the
/// layer points. Deterministic.
GpuFit fit_gpu_data(const std::vector<ValidationCase>& cases, const std::vector<LayerTimeCase>& layer_cases,
                    const std::string& gpu, const std::string& precision, const std::vector<FitParameter>& parameters);

/// `cases` with GPU `fit.gpu`'s data set to the fit's values.
template <typename Case>
std::vector<Case> with_fit(std::vector<Case> cases, const GpuFit& fit) {
  for (Case& c : cases)
    if (c.node_type.gpu_data.name == fit.gpu)
      for (const auto& [name, value] : fit.values) set_parameter(c.node_type.gpu_data, fit.precision, name, value);
  return cases;
}

}  // namespace fasop
