#pragma once
// Layer times without measurements: a roofline of each layer's FLOPs and bytes against a GPU's
// peak, scaled by the GPU's compute efficiency, which a measured profile calibrates.
#include <vector>

#include "specs/cluster_spec.h"
#include "specs/model_spec.h"
#include "specs/profile_spec.h"

namespace fasop {

/// The work of one forward pass of one pipeline unit on one GPU (its 1/tp share).
struct LayerWork {
  double gemm_flops = 0;        ///< matrix multiplications: run at the GPU's peak x efficiency
  int gemm_calls = 0;           ///< how many GEMMs they are (each pays the node's gemm_half_flops)
  double weight_bytes = 0;      ///< the GEMMs' weights, read while they compute (the slower of the two counts)
  double memory_bytes = 0;      ///< element-wise traffic (norms, activations, dropouts, unfused scores)
  double kernel_overhead_s = 0; ///< launches and small kernels, independent of size
  int tp = 1;                   ///< the tensor-parallel group the all-reduces span
  int allreduces = 0;           ///< tensor-parallel all-reduces of the activations (Megatron: 2 a layer)
  double allreduce_bytes = 0;   ///< the bytes each of them reduces
};

/// FLOPs and bytes of one forward pass of unit `unit` of `model` at micro-batch `mbs` and
/// tensor-parallel degree `tp` (Megatron-style sharding: attention heads and MLP columns split).
LayerWork forward_work(const ModelSpec& model, const LayerUnit& unit, int tp, int mbs);

/// How the analytic profile runs the layers.
struct RooflineOptions {
  /// Tensor-parallel communication overlapped with the GEMMs (Megatron-LM's --tp-comm-overlap):
  /// only what the GEMMs cannot hide is exposed.
  bool overlap_tp_comm = false;
};

/// Seconds of `work` on a GPU of `node` at `efficiency` (share of dense peak for large GEMMs,
/// less for small ones by the node's gemm_half_flops): the GEMMs at the slower of compute and
/// weight reads, element-wise traffic at memory bandwidth x memory efficiency, launches, and
/// the all-reduces as rings (alpha-beta: 2(t-1) latencies, 2(t-1)/t x bytes at the link's
/// bandwidth x collective efficiency) on the link tp crosses: inside the node while tp fits in
/// it, else the network.
double roofline_time_s(const LayerWork& work, const NodeType& node, const std::string& dtype, double efficiency,
                       const RooflineOptions& options = {});

/// A profile of `model` on `node`'s GPU from forward_work and roofline_time_s: forward seconds
/// per layer type, for every tp in `tps` and micro-batch in `micro_batches` (backward is taken
/// as twice the forward, as for measured profiles). Needs node.has_gpu_spec().
ProfileSpec analytic_profile(const ModelSpec& model, const NodeType& node, const std::vector<int>& tps,
                             const std::vector<int>& micro_batches, const RooflineOptions& options = {});

/// The compute efficiency at which analytic times best match a measured profile of the same
/// model and GPU (least squared log error over every measured point).
double calibrated_efficiency(const ModelSpec& model, const NodeType& node, const ProfileSpec& measured);

}  // namespace fasop
