#pragma once
// Multi-head latent attention (MLA; DeepSeek-V2/V3, Kimi K2): what a model's MLA block holds,
// and the closed forms of its parameters and GEMM FLOPs that the cost model and the tests share.

namespace fasop {

/// Multi-head latent attention as Megatron-Core's MLASelfAttention builds it (DeepSeek-V3's
/// q_lora_rank 1536, kv_lora_rank 512, qk_head_dim 128, qk_rope_head_dim 64, v_head_dim 128):
///   queries: a down-projection hidden x q_lora_rank, an RMSNorm over the latent, an
///     up-projection q_lora_rank x heads x (qk_head_dim + qk_rope_head_dim);
///   keys and values: a down-projection hidden x (kv_lora_rank + qk_rope_head_dim) whose last
///     qk_rope_head_dim columns are one rotary key shared by every head, an RMSNorm over the
///     kv_lora_rank latent, an up-projection kv_lora_rank x heads x (qk_head_dim + v_head_dim);
///   attention with query/key width qk_head_dim + qk_rope_head_dim and value width v_head_dim;
///   the output projection heads x v_head_dim x hidden.
/// Tensor parallelism (Megatron-Core's gpt_layer_specs: the down-projections are TELinear in
/// 'duplicated' mode, the up-projections column-parallel, the output row-parallel) splits the
/// up-projections and the output over tp by heads and replicates the down-projections and the
/// latents' norms on every rank; with sequence parallelism each rank runs the down-projections
/// on its 1/tp of the tokens. kv_lora_rank == 0: not an MLA model.
struct MlaSpec {
  int q_lora_rank = 0;       ///< the queries' latent width
  int kv_lora_rank = 0;      ///< the keys' and values' latent width
  int qk_head_dim = 0;       ///< a head's query/key width without rotary positions
  int qk_rope_head_dim = 0;  ///< a head's rotary query/key width (the key's part shared by all heads)
  int v_head_dim = 0;        ///< a head's value width

  bool enabled() const { return kv_lora_rank > 0; }
  /// A head's query (and key) width in the attention: qk_head_dim + qk_rope_head_dim.
  double q_head_dim() const { return double(qk_head_dim) + qk_rope_head_dim; }
  /// Output columns of the key/value down-projection: the latent and the shared rotary key.
  double kv_down_width() const { return double(kv_lora_rank) + qk_rope_head_dim; }
};

/// Parameters of the matrices tensor parallelism splits over tp (by heads), whole model:
/// the query and key/value up-projections and the output projection.
inline double mla_split_params(const MlaSpec& mla, double hidden, double heads) {
  return mla.q_lora_rank * heads * mla.q_head_dim() +
         mla.kv_lora_rank * heads * (double(mla.qk_head_dim) + mla.v_head_dim) + heads * mla.v_head_dim * hidden;
}

/// Parameters of the down-projections, which every tp rank holds whole.
inline double mla_down_params(const MlaSpec& mla, double hidden) {
  return hidden * mla.q_lora_rank + hidden * mla.kv_down_width();
}

/// Parameters of the latents' norms (q_lora_rank and kv_lora_rank wide; `norm_per_width`: 1 for
/// RMSNorm's scale, 2 for LayerNorm's scale and bias), replicated on every tp rank.
inline double mla_norm_params(const MlaSpec& mla, double norm_per_width) {
  return norm_per_width * (double(mla.q_lora_rank) + mla.kv_lora_rank);
}

/// An MLA layer's attention parameters on one of tp GPUs: its 1/tp of the split matrices, the
/// down-projections and the latents' norms whole (the layer's input norm not included).
inline double mla_attention_params(const MlaSpec& mla, double hidden, double heads, int tp, double norm_per_width) {
  return mla_split_params(mla, hidden, heads) / tp + mla_down_params(mla, hidden) + mla_norm_params(mla, norm_per_width);
}

/// Forward GEMM FLOPs of the attention's projections per token of a tensor-parallel group of
/// tp GPUs, on one of them: the split matrices' 1/tp, and the down-projections whole without
/// sequence parallelism (every rank projects every token) or 1/tp with it (each its own tokens).
/// The attention's scores and values (flash attention) are apart.
inline double mla_projection_flops_per_token(const MlaSpec& mla, double hidden, double heads, int tp,
                                             bool sequence_parallel) {
  return 2 * mla_split_params(mla, hidden, heads) / tp + 2 * mla_down_params(mla, hidden) / (sequence_parallel ? tp : 1);
}

}  // namespace fasop
