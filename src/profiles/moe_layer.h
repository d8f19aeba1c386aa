#pragma once
// The work of a mixture-of-experts MLP on one GPU (Megatron-Core's MoELayer with the all-to-all
// token dispatcher and grouped GEMMs): the router, the experts' GEMMs at the tokens they really
// receive, the shared expert, the token permutations and the all-to-alls.
#include <vector>

#include "profiles/analytic_profile.h"
#include "specs/model_spec.h"

namespace fasop {

/// One GPU's share of a MoE layer's MLP, forward.
struct MoeWork {
  std::vector<Gemm> gemms;
  double weights_per_gpu = 0;  ///< parameters its GEMMs read (router, local experts, shared expert shard)
  double elements = 0;         ///< element-wise traffic, in activation elements
  int kernels = 0;             ///< kernels beyond the GEMMs
  int tp_regions = 0;          ///< tensor-parallel gathers and scatters (the shared expert's)
  int alltoalls = 0;           ///< token all-to-alls over the ep GPUs (dispatch, combine)
  double alltoall_bytes = 0;   ///< bytes one GPU sends into each (to itself included)
  double etp_collective_bytes = 0;  ///< expert tensor parallelism's gather and scatter, as one all-reduce
};

/// The forward work of `m`'s MoE MLP for `tokens` tokens of one tensor-parallel group of `tp`
/// GPUs, with options.ep and options.etp.
MoeWork moe_mlp_work(const ModelSpec& m, double tokens, int tp, const LayerOptions& options);

}  // namespace fasop
