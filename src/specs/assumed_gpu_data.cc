#include "specs/assumed_gpu_data.h"

#include <cstdio>

#include "specs/gpu_spec.h"

namespace fasop {
namespace {

/// The shipped GPUs' names, "A10, A100-40GB, ...".
std::string shipped_gpu_names() {
  std::string names;
  for (const GpuSpec& gpu : shipped_gpu_specs()) names += (names.empty() ? "" : ", ") + gpu.name;
  return names;
}

/// The defaults that stand in, as the report states them.
std::string default_shares_text() {
  const PrecisionEfficiency shares;
  char text[160];
  std::snprintf(text, sizeof text, "GEMMs at %.2f of peak, attention %.2f forward and %.2f backward, memory-bound "
                "kernels at %.2f of bandwidth", shares.gemm_peak_share, shares.attention_peak_share,
                shares.attention_backward_peak_share, shares.memory_share);
  return text;
}

}  // namespace

std::string assumed_gpu_data_fault(const ClusterSpec& cluster, const std::string& flag) {
  for (size_t i = 0; i < cluster.node_types.size(); ++i) {
    const NodeType& type = cluster.node_types[i];
    if (!type.gpu_data_assumed) continue;
    return cluster.source + ": field 'node_types[" + std::to_string(i) + "].gpu': GPU '" + type.gpu +
           "' has no shipped data (" + shipped_gpu_names() + "), so its kernels' shares of peak would be guessed; "
           "give them (compute_efficiency and memory_efficiency, or gpu_data: {bf16.gemm_peak_share: ...}), "
           "name a shipped GPU, or pass " + flag + " to plan with the defaults";
  }
  return "";
}

std::string assumed_gpu_data_lines(const ClusterSpec& cluster) {
  std::string lines;
  for (const NodeType& type : cluster.node_types)
    if (type.gpu_data_assumed)
      lines += "assumed: GPU '" + type.gpu + "' (node type " + type.name + ") has no data: " + default_shares_text() +
               " (--assume-defaults)\n";
  return lines;
}

}  // namespace fasop
