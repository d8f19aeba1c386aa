#include "validate/efficiency_fit.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <utility>

#include "specs/precision.h"
#include "specs/spec_error.h"
#include "validate/layer_validation.h"
#include "validate/validate.h"

namespace fasop {

double minimize_by_coordinates(const std::function<double(const std::vector<double>&)>& objective,
                               const std::vector<FitParameter>& parameters, std::vector<double>& values) {
  double error = objective(values);
  const double ratio = (std::sqrt(5.0) - 1) / 2;
  for (int sweep = 0; sweep < 4; ++sweep) {
    const double before = error;
    for (size_t i = 0; i < parameters.size(); ++i) {
      std::vector<double> trial = values;
      auto at = [&](double value) {
        trial[i] = value;
        return objective(trial);
      };
      double lo = parameters[i].low, hi = parameters[i].high;
      double a = hi - ratio * (hi - lo), b = lo + ratio * (hi - lo), fa = at(a), fb = at(b);
      for (int step = 0; step < 24; ++step) {
        if (fa < fb) {
          hi = b, b = a, fb = fa, a = hi - ratio * (hi - lo), fa = at(a);
        } else {
          lo = a, a = b, fa = fb, b = lo + ratio * (hi - lo), fb = at(b);
        }
      }
      const double best = fa < fb ? a : b, best_error = std::min(fa, fb);
      if (best_error < error) {
        values[i] = best;
        error = best_error;
      }
    }
    if (error > before - 1e-6) break;
  }
  return error;
}

GpuFit fit_gpu_data(const std::vector<ValidationCase>& all_cases, const std::vector<LayerTimeCase>& all_layer_cases,
                    const std::string& gpu, const std::string& precision, const std::vector<FitParameter>& parameters) {
  std::vector<ValidationCase> cases;
  std::vector<LayerTimeCase> layer_cases;
  for (const ValidationCase& c : all_cases)
    if (c.node_type.gpu_data.name == gpu) cases.push_back(c);
  for (const LayerTimeCase& c : all_layer_cases)
    if (c.node_type.gpu_data.name == gpu) layer_cases.push_back(c);
  if (cases.empty() && layer_cases.empty()) throw SpecError("--fit: no case of the fit runs on GPU '" + gpu + "'");
  GpuFit fit{gpu, precision, {}, 0};
  const GpuSpec& start = !cases.empty() ? cases[0].node_type.gpu_data : layer_cases[0].node_type.gpu_data;
  for (const FitParameter& p : parameters) fit.values.emplace_back(p.name, get_parameter(start, precision, p.name));

  auto objective = [&](const GpuFit& trial) {
    double error = 0;
    if (!cases.empty()) {
      double sum = 0;
      for (const ValidationCase& c : with_fit(cases, trial)) sum += std::fabs(predict_case(c).error_pct);
      error += sum / cases.size();
    }
    if (!layer_cases.empty()) {
      std::vector<LayerPointResult> points;
      for (const LayerTimeCase& c : with_fit(layer_cases, trial)) {
        std::vector<LayerPointResult> more = predict_layer_case(c);
        points.insert(points.end(), more.begin(), more.end());
      }
      for (const LayerSummary& s : summarize_layers(points)) error += s.median_abs_error_pct;
    }
    return error;
  };
  std::vector<double> values;
  for (const auto& [name, value] : fit.values) values.push_back(value);
  fit.error = minimize_by_coordinates(
      [&](const std::vector<double>& trial_values) {
        GpuFit trial = fit;
        for (size_t i = 0; i < trial_values.size(); ++i) trial.values[i].second = trial_values[i];
        return objective(trial);
      },
      parameters, values);
  for (size_t i = 0; i < values.size(); ++i) fit.values[i].second = values[i];
  return fit;
}

}  // namespace fasop
