#pragma once
// What fasop-cpp's own LibTorch profiler (src/profiler/layer_profiler.cc) runs in a transformer
// layer and its small units, op by op: eager ATen kernels, each launched from the host, none
// fused. Counted from that code and checked against its kernels on an H100
// (validation/kernels/h100-layer-kernels.txt, by scripts/measure-layer-kernels.py). The analytic
// model's libtorch stack takes these counts in place of a fused stack's.
#include "specs/model_spec.h"

namespace fasop {

/// Kernels, host-side ops and element-wise traffic of one pass.
struct EagerCount {
  int kernels = 0;        ///< kernels launched: GEMMs included, attention's own left to the analytic model
  int host_ops = 0;       ///< ATen calls the host dispatches (views included: they record autograd nodes)
  double elements = 0;    ///< activation-width elements moved by the element-wise kernels
};

/// Both passes of one unit.
struct EagerLayerCount {
  EagerCount forward, backward;
};

/// A transformer layer as the profiler builds it, on one GPU's tp shard at micro-batch `mbs`:
/// norms as written (LayerNorm one kernel; RMSNorm pow, mean, add, rsqrt and two broadcast
/// multiplies), one QKV GEMM narrowed into heads, grouped key/value heads repeated, fused
/// attention, residual adds, GeLU or SwiGLU; no rotary embedding, no dropout. Backward adds what
/// autograd runs: narrow's zero-filled gradients, the sums of a tensor's gradients where it is
/// used twice, and each weight's gradient accumulated into the one the earlier rounds left.
EagerLayerCount libtorch_transformer_count(const ModelSpec& model, const LayerUnit& unit, int tp, int mbs);

/// Host-side ops of the profiler's embedding (a lookup) or head (norm, GEMM, a view, the fp32
/// cast, random labels, cross entropy), forward; backward dispatches twice as many.
int libtorch_small_unit_host_ops(const ModelSpec& model, LayerRole role);

}  // namespace fasop
