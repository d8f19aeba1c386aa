#include "specs/gpu_parameters.h"

#include <utility>

#include "specs/precision.h"
#include "specs/spec_error.h"

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
  if (name == "sdpa_attention_peak_share") return &e.sdpa_attention_peak_share;
  if (name == "sdpa_attention_backward_peak_share") return &e.sdpa_attention_backward_peak_share;
  // A kernel's two shares at once (set_parameter keeps their ratio): read as the forward's.
  if (name == "attention_shares") return &e.attention_peak_share;
  if (name == "sdpa_attention_shares") return &e.sdpa_attention_peak_share;
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
          {"attention_shares", 0.1, 0.9},
          {"sdpa_attention_peak_share", 0.1, 0.9}, {"sdpa_attention_backward_peak_share", 0.1, 0.9},
          {"sdpa_attention_shares", 0.1, 0.9},
          {"memory_share", 0.3, 0.9},           {"kernel_gap_s", 0, 2e-5},
          {"dispatch_s.megatron", 0, 6e-5},     {"dispatch_s.eager", 0, 6e-5},
          {"dispatch_s.libtorch", 0, 6e-5},     {"nvlink.bus_share", 0.3, 1},
          {"network.bus_share", 0.3, 1},        {"overlap_slowdown", 0, 0.5}};
}

bool is_gpu_parameter(const std::string& full_name) {
  const std::string name = split_precision(full_name, "").second;
  for (const FitParameter& p : fit_parameters())
    if (p.name == name) return true;
  return false;
}

std::string gpu_parameter_names() {
  std::string known;
  for (const FitParameter& p : fit_parameters()) known += (known.empty() ? "" : ", ") + p.name;
  return known;
}

FitParameter fit_parameter(const std::string& full_name) {
  const std::string name = split_precision(full_name, "").second;
  for (FitParameter p : fit_parameters())
    if (p.name == name) {
      p.name = full_name;
      return p;
    }
  throw SpecError("--fit-params: unknown parameter '" + name + "'; use " + gpu_parameter_names());
}

bool is_per_precision_parameter(const std::string& full_name) {
  const std::string name = split_precision(full_name, "").second;
  for (const char* p : {"gemm_peak_share", "gemm_half_dim", "gemm_unaligned_share", "attention_peak_share",
                        "attention_backward_peak_share", "attention_shares", "sdpa_attention_peak_share",
                        "sdpa_attention_backward_peak_share", "sdpa_attention_shares", "memory_share"})
    if (name == p) return true;
  return false;
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
  const std::string bare = split_precision(name, precision).second;
  if ((bare == "attention_shares" || bare == "sdpa_attention_shares") && *slot > 0) {
    // The backward's share moves with the forward's: one kernel's speed, its two passes' ratio kept.
    PrecisionEfficiency& e = gpu.precisions[split_precision(name, precision).first];
    (bare == "attention_shares" ? e.attention_backward_peak_share : e.sdpa_attention_backward_peak_share) *= value / *slot;
  }
  *slot = value;
}

}  // namespace fasop
