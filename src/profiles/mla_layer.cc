#include "profiles/mla_layer.h"

#include "specs/precision.h"

namespace fasop {

MlaWork mla_attention_work(const ModelSpec& m, double tokens, int tp, const LayerOptions& options) {
  const MlaSpec& mla = m.mla;
  const double h = m.hidden, t = tp, local_heads = double(m.heads) / t;
  const double q_lora = mla.q_lora_rank, kv_lora = mla.kv_lora_rank, rope = mla.qk_rope_head_dim;
  const double qk = mla.qk_head_dim, v = mla.v_head_dim, q_head = mla.q_head_dim();
  // The down-projections (TELinear, 'duplicated'): every rank holds them whole and, with
  // sequence parallelism, projects its own 1/tp of the tokens (without it, all of them).
  const double down_tokens = options.sequence_parallel ? tokens / t : tokens;
  MlaWork w;
  w.gemms.push_back({down_tokens, q_lora, h});                  // queries' down-projection
  w.gemms.push_back({down_tokens, mla.kv_down_width(), h});     // keys' and values' down-projection, rotary key
  w.gemms.push_back({tokens, local_heads * q_head, q_lora});    // queries' up-projection (column-parallel)
  w.gemms.push_back({tokens, local_heads * (qk + v), kv_lora}); // keys' and values' up-projection
  w.gemms.push_back({tokens, h, local_heads * v});              // output projection (row-parallel)
  w.weights_per_gpu = mla_down_params(mla, h) + mla_split_params(mla, h, m.heads) / t;
  // Element-wise, beyond a dense layer's norms and residuals: the latents' RMSNorms (fused into
  // the up-projections' TELayerNormColumnParallelLinear; read and write, on the rank's own
  // tokens with sequence parallelism), and the rotary embedding of Megatron-Bridge's perf
  // recipes (apply_rope_fusion: fused_apply_mla_rope_for_q reads and writes the queries;
  // fused_apply_mla_rope_for_kv reads the up-projection's keys and values and the shared
  // rotary key, and writes the keys, the rotary part copied to every head, and the values).
  w.elements = 2 * down_tokens * (q_lora + kv_lora) +
               tokens * (local_heads * (2 * q_head + (qk + v) + (q_head + v)) + rope);
  // fp8: each GEMM's input is cast (read 2 bytes, write 1: 1.5 elements): the layer's input
  // for each down-projection, the two latents, the attention's output.
  w.fp8_cast_elements = 1.5 * (2 * down_tokens * h + tokens * (q_lora + kv_lora + local_heads * v));
  // Three GEMMs more than a fused QKV and output projection, and the latents' two norms; the
  // two fused rotary kernels stand in for a dense layer's rotary kernels.
  w.kernels = 5;
  // The keys (q_head wide per head: the rotary key expanded over the heads) and values a
  // GPU's heads hold per token, in the activations' precision.
  w.kv_bytes_per_token = local_heads * (q_head + v) * activation_bytes(m.dtype);
  return w;
}

}  // namespace fasop
