#include "profiles/moe_layer.h"

#include "specs/precision.h"

namespace fasop {
namespace {

/// The down projection's bias as Megatron-Core adds it (TEGroupedMLP._apply_bias): per local
/// expert, bias x its tokens' fp32 routing weights (writes 4 bytes an element) plus the output
/// (reads 2 + 4, writes 4), the experts' slices concatenated (reads and writes 4) and cast back
/// to 16 bits (reads 4, writes 2): 28 bytes for each of the expert_tokens x hidden outputs.
/// Launches: two a local expert, the concatenation and the cast; the host also splits the
/// output and the weights by expert.
void add_expert_output_bias(MoeWork& w, double expert_tokens, double hidden, int local_experts, double bytes) {
  constexpr double kBiasBytesPerOutput = 28;
  w.elements += kBiasBytesPerOutput / bytes * expert_tokens * hidden;
  const int kernels = 2 * local_experts + 2;
  w.kernels += kernels;
  w.host_ops += kernels + 2;
}

/// Dropless routing: all of `w` but the router and the first permutation, which the host
/// issues before it waits for the split sizes (HostWaitTail).
HostWaitTail after_host_wait(const MoeWork& w, double router_elements, double bytes) {
  HostWaitTail tail;
  tail.gemms.assign(w.gemms.begin() + 1, w.gemms.end());  // the router's GEMM comes first
  tail.memory_bytes = (w.elements - router_elements) * bytes;
  tail.kernels = w.kernels - (kMoeFixedKernels - kMoeKernelsAfterWait);
  tail.host_ops = w.host_ops - (kMoeFixedKernels - kMoeKernelsAfterWait) - (kMoeHostOnlyOps - kMoeHostOnlyOpsAfterWait);
  tail.waits = 1;
  return tail;
}

}  // namespace

ExpertActivationWork expert_activation_work(const ModelSpec& m, double expert_tokens, double expert_width) {
  const bool gated = is_gated(m.activation);
  ExpertActivationWork w;
  w.elements = (gated ? 3 : 2) * expert_tokens * expert_width;
  w.kernels = w.host_ops = 1;
  if (m.moe.activation_clamp > 0) {
    // The GLU's clamp before Megatron-Core's fused activation (weighted_bias_quick_geglu_impl):
    // the input's two halves clamped apart (each reads and writes expert_tokens x width) and
    // concatenated again (reads and writes both): 8 elements of traffic an activation output.
    w.elements += 8 * expert_tokens * expert_width;
    w.kernels += 3;
    w.host_ops += 4;  // and the chunk into halves
  }
  return w;
}

MoeWork moe_mlp_work(const ModelSpec& m, double tokens, int tp, const LayerOptions& options) {
  const MoeSpec& moe = m.moe;
  const bool gated = is_gated(m.activation);
  const double h = m.hidden, t = tp, bytes = activation_bytes(m.dtype);
  const double local_tokens = tokens / t;  // sequence-parallel share entering the layer
  const double routed = local_tokens * moe.top_k;
  const double local_experts = double(moe.experts) / options.ep;
  const double expert_width = double(moe.expert_ffn_hidden) / options.etp;
  const double expert_tokens = busiest_expert_tokens(moe, tokens, tp, options.etp);
  const double rows = expert_tokens / local_experts;  // each local expert's GEMM rows
  MoeWork w;
  // The router scores every local token against every expert (a GEMM of experts columns).
  w.gemms.push_back({local_tokens, double(moe.experts), h});
  // Grouped GEMMs: one up (and gate) and one down projection per local expert.
  w.gemms.push_back({rows, (gated ? 2 : 1) * expert_width, h, local_experts});
  w.gemms.push_back({rows, h, expert_width, local_experts});
  w.weights_per_gpu = moe.experts * h + local_experts * mlp_matrices(gated) * h * expert_width;
  // Element-wise: the router's softmax and top-k over the scores (fp32, counted as 2 elements
  // each way), the permutation that groups tokens by expert and its inverse (each reads and
  // writes the local and routed tokens), the experts' activation.
  const ExpertActivationWork activation = expert_activation_work(m, expert_tokens, expert_width);
  const double router_elements = 4 * local_tokens * moe.experts + (local_tokens + routed) * h;
  w.elements = router_elements + (local_tokens + routed) * h + activation.elements;
  // The experts' inputs cast (fp8, nvfp4).
  if (is_quantized(m.dtype)) w.elements += 1.5 * expert_tokens * (h + expert_width);
  // Launches, counted roughly (by reading, not tracing) from Megatron-Core's MoE layer
  // (TopKRouter, MoEAlltoAllTokenDispatcher, TEGroupedMLP over Transformer Engine's
  // GroupedLinear). Transformer Engine runs a grouped GEMM as one cuBLAS GEMM per local expert
  // (and, in fp8, casts each expert's slice of the input on its own), so the host's work grows
  // with the local experts while each GEMM shrinks.
  w.kernels = kMoeFixedKernels + int(local_experts) * kMoeKernelsPerExpert * (is_quantized(m.dtype) ? 2 : 1);
  w.host_ops = w.kernels + kMoeHostOnlyOps + int(local_experts) * kMoeHostOpsPerExpert;
  // The activation's own launch is among kMoeFixedKernels; a clamp adds its own.
  w.kernels += activation.kernels - 1;
  w.host_ops += activation.host_ops - 1;
  if (moe.expert_bias) add_expert_output_bias(w, expert_tokens, h, int(local_experts), bytes);
  if (moe.shared_expert_ffn_hidden > 0) {
    // The shared expert is a dense MLP over every token, split over tp as Megatron-LM's MLP.
    const double fs = moe.shared_expert_ffn_hidden;
    w.gemms.push_back({tokens, (gated ? 2 : 1) * fs / t, h});
    w.gemms.push_back({tokens, h, fs / t});
    w.weights_per_gpu += mlp_matrices(gated) * h * fs / t;
    w.elements += (gated ? 3 : 2) * tokens * fs / t;
    w.kernels += 3;
    w.host_ops += 3;
    w.tp_regions = 1;
  }
  if (options.ep > 1) {
    // Dispatch and combine: each moves copies of a GPU's tokens to their experts' GPUs and back,
    // as many as the dispatcher sends (ep_comm_s).
    w.dispatches = 2;
    w.token_bytes = local_tokens * h * bytes;
  }
  if (options.etp > 1) w.etp_collective_bytes = expert_tokens * h * bytes;
  if (!moe.token_drop) w.after_host_wait = after_host_wait(w, router_elements, bytes);
  return w;
}

}  // namespace fasop
