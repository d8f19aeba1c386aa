#include "validate/efficiency_fit.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "specs/precision.h"
#include "specs/spec_error.h"
#include "validate/layer_validation.h"
#include "validate/validate.h"

namespace fasop {
namespace {

/// A parameter's precision and name: "bf16.attention_peak_share" is bf16's, whatever the fitted
/// precision (fp8 training runs attention and element-wise kernels in bf16); a name without a
/// precision's prefix is `default_precision`'s. fp4 counts as a prefix: GPU data may list it.
std::pair<std::string, std::string> split_precision(const std::string& full_name, const std::string& default_precision) {
  if (size_t dot = full_name.find('.'); dot != std::string::npos) {
    const std::string prefix = full_name.substr(0, dot);
    if (known_precision(prefix) || prefix == "fp4") return {prefix, full_name.substr(dot + 1)};
  }
  return {default_precision, full_name};
}

double* parameter_slot(GpuSpec& gpu, const std::string& default_precision, const std::string& full_name) {
  const auto [precision, name] = split_precision(full_name, default_precision);
  if (name.rfind("dispatch_s.", 0) == 0) return &gpu.launch.dispatch_s[name.substr(11)];
  if (name == "kernel_gap_s") return &gpu.launch.kernel_gap_s;
  if (name == "nvlink.bus_share") return &gpu.nvlink.bus_share;
  if (name == "nvlink.half_bytes") return &gpu.nvlink.half_bytes;
  if (name == "network.bus_share") return &gpu.network.bus_share;
  if (name == "network.half_bytes") return &gpu.network.half_bytes;
  if (name == "overlap_slowdown") return &gpu.overlap_slowdown;
  if (!gpu.precisions.count(precision)) gpu.precisions[precision] = gpu.efficiency(precision);
  PrecisionEfficiency& e = gpu.precisions[precision];
  if (name == "gemm_peak_share") return &e.gemm_peak_share;
  if (name == "gemm_half_dim") return &e.gemm_half_dim;
  if (name == "gemm_unaligned_share") return &e.gemm_unaligned_share;
  if (name == "attention_peak_share") return &e.attention_peak_share;
  if (name == "attention_backward_peak_share") return &e.attention_backward_peak_share;
  if (name == "memory_share") return &e.memory_share;
  return nullptr;
}

}  // namespace

std::vector<FitParameter> fit_parameters() {
  // Bounds are physical: shares of a datasheet peak stay below it (element-wise kernels reach
  // about 90% of memory bandwidth at best), launch costs stay within what hosts show.
  return {{"gemm_peak_share", 0.2, 0.95},       {"gemm_half_dim", 0, 512},
          {"gemm_unaligned_share", 0.05, 1},
          {"attention_peak_share", 0.1, 0.9},   {"attention_backward_peak_share", 0.1, 0.9},
          {"memory_share", 0.3, 0.9},           {"kernel_gap_s", 0, 2e-5},
          {"dispatch_s.megatron", 0, 6e-5},     {"dispatch_s.eager", 0, 6e-5},
          {"dispatch_s.libtorch", 0, 6e-5},     {"nvlink.bus_share", 0.3, 1},
          {"network.bus_share", 0.3, 1},        {"overlap_slowdown", 0, 0.5}};
}

FitParameter fit_parameter(const std::string& full_name) {
  const std::string name = split_precision(full_name, "").second;
  for (FitParameter p : fit_parameters())
    if (p.name == name) {
      p.name = full_name;
      return p;
    }
  std::string known;
  for (const FitParameter& p : fit_parameters()) known += (known.empty() ? "" : ", ") + p.name;
  throw SpecError("--fit-params: unknown parameter '" + name + "'; use " + known);
}

double get_parameter(const GpuSpec& gpu, const std::string& precision, const std::string& name) {
  GpuSpec copy = gpu;
  double* slot = parameter_slot(copy, precision, name);
  if (!slot) fit_parameter(name);  // throws, naming the known ones
  return *slot;
}

void set_parameter(GpuSpec& gpu, const std::string& precision, const std::string& name, double value) {
  double* slot = parameter_slot(gpu, precision, name);
  if (!slot) fit_parameter(name);
  *slot = value;
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
  fit.error = objective(fit);
  const double ratio = (std::sqrt(5.0) - 1) / 2;
  for (int sweep = 0; sweep < 4; ++sweep) {
    const double before = fit.error;
    for (size_t i = 0; i < parameters.size(); ++i) {
      GpuFit trial = fit;
      auto at = [&](double value) {
        trial.values[i].second = value;
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
      if (best_error < fit.error) {
        fit.values[i].second = best;
        fit.error = best_error;
      }
    }
    if (fit.error > before - 1e-6) break;
  }
  return fit;
}

}  // namespace fasop
