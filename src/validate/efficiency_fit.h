#pragma once
// A GPU's data (configs/gpus/) fitted to some validation cases, so that the others measure the
// fitted model on runs it has not seen (`validate --fit`).
#include <functional>
#include <string>
#include <vector>

#include "specs/gpu_parameters.h"
#include "specs/validation_case.h"

namespace fasop {

/// Minimises `objective` over `values` (one per parameter, within its bounds, in and out):
/// coordinate descent, each parameter by 24 steps of golden-section search, until a sweep
/// improves by less than 1e-6 (at most 4 sweeps); a parameter moves only where it improves.
/// Returns the objective at `values`. Deterministic.
double minimize_by_coordinates(const std::function<double(const std::vector<double>&)>& objective,
                               const std::vector<FitParameter>& parameters, std::vector<double>& values);

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
