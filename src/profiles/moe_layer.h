#pragma once
// The work of a mixture-of-experts MLP on one GPU (Megatron-Core's MoELayer with the all-to-all
// token dispatcher and grouped GEMMs): the router, the experts' GEMMs at the tokens they really
// receive, the shared expert, the token permutations and the all-to-alls.
#include <vector>

#include "profiles/analytic_profile.h"
#include "specs/model_spec.h"

namespace fasop {

/// Forward launches of a MoE MLP beside its experts' GEMMs: the router's GEMM, its softmax and
/// top-k, the auxiliary loss's bookkeeping, the count of tokens per expert and its gather over
/// the ep GPUs, the permutation and its inverse, the sort of the received chunks by expert and
/// back, the activation with the routing weights, the all-to-alls' buffers.
constexpr int kMoeFixedKernels = 16;
/// Of them, those after the dropless dispatcher's wait for the split sizes: the all-to-alls'
/// buffers, the sort of the received chunks and back, the activation, the inverse permutation
/// and its scatter of the weighted outputs.
constexpr int kMoeKernelsAfterWait = 7;
/// Each local expert's launches per pass: its up (and gate) and its down projection's GEMMs;
/// fp8 doubles them with the casts of each expert's input slice.
constexpr int kMoeKernelsPerExpert = 2;
/// Forward ops the host dispatches that launch no kernel: the split sizes' copies to the host
/// and the wait for them (the dropless dispatcher needs them before its all-to-all, so the
/// host cannot run ahead of the layer), the tensor views and the split lists.
constexpr int kMoeHostOnlyOps = 12;
/// Of them, those after the wait (all but the copies and the wait).
constexpr int kMoeHostOnlyOpsAfterWait = 10;
/// Per local expert: the two GroupedLinears' views of its slices of the input and output.
constexpr int kMoeHostOpsPerExpert = 2;

/// One GPU's share of a MoE layer's MLP, forward.
struct MoeWork {
  std::vector<Gemm> gemms;
  double weights_per_gpu = 0;  ///< parameters its GEMMs read (router, local experts, shared expert shard)
  double elements = 0;         ///< element-wise traffic, in activation elements
  int kernels = 0;             ///< kernels launched, the experts' GEMMs one each
  int host_ops = 0;            ///< ops the host dispatches (kernels and the host's own bookkeeping)
  int tp_regions = 0;          ///< tensor-parallel gathers and scatters (the shared expert's)
  int dispatches = 0;          ///< token dispatches over the ep GPUs (dispatch, combine)
  double token_bytes = 0;      ///< one copy of the GPU's tokens entering the layer (moe_dispatch.h: copies)
  double etp_collective_bytes = 0;  ///< expert tensor parallelism's gather and scatter, as one all-reduce
  /// Dropless routing: of the above, what follows the host's wait for the split sizes.
  HostWaitTail after_host_wait;
};

/// The experts' activation, forward, on the busiest GPU: what moe_mlp_work counts for it and
/// what recomputing moe_act repeats (recomputed_elementwise.h).
struct ExpertActivationWork {
  double elements = 0;  ///< traffic, in activation elements
  int kernels = 0;
  int host_ops = 0;     ///< kernels and the host's own views
};

/// Of `m`'s experts at `expert_tokens` rows of `expert_width`: the fused activation with the
/// routing weights (reads the input, writes the output; SwiGLU's gate and product half again)
/// and, with moe.activation_clamp, the clamp of its input's halves before it.
ExpertActivationWork expert_activation_work(const ModelSpec& m, double expert_tokens, double expert_width);

/// The forward work of `m`'s MoE MLP for `tokens` tokens of one tensor-parallel group of `tp`
/// GPUs, with options.ep and options.etp.
MoeWork moe_mlp_work(const ModelSpec& m, double tokens, int tp, const LayerOptions& options);

}  // namespace fasop
