#pragma once
// The projections of multi-head latent attention on one GPU (Megatron-Core's MLASelfAttention
// with Transformer Engine's layers, as Megatron-Bridge's DeepSeek-V3 and Kimi K2 recipes run
// it): the replicated down-projections, the latents' norms, the tensor-parallel up-projections
// and output projection, the rotary embedding that assembles the queries, keys and values.
// The attention itself (scores and values) is layer_work's, at the widths of specs/mla_spec.h.
#include <vector>

#include "profiles/analytic_profile.h"
#include "specs/model_spec.h"

namespace fasop {

/// One GPU's share of an MLA layer's attention projections, forward.
struct MlaWork {
  std::vector<Gemm> gemms;
  double weights_per_gpu = 0;   ///< parameters its GEMMs read (down-projections whole, the rest 1/tp)
  double elements = 0;          ///< element-wise traffic beyond a dense layer's, in activation elements
  double fp8_cast_elements = 0; ///< fp8 training: the attention GEMMs' inputs cast, in activation elements
  int kernels = 0;              ///< kernels beyond a dense layer's
  double kv_bytes_per_token = 0;  ///< the keys and values of one token on one GPU (ring attention's chunk)
};

/// The forward work of `m`'s MLA projections for `tokens` tokens of one tensor-parallel group of
/// `tp` GPUs (with options.sequence_parallel each runs the down-projections on its 1/tp of them).
MlaWork mla_attention_work(const ModelSpec& m, double tokens, int tp, const LayerOptions& options);

}  // namespace fasop
