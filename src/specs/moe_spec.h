#pragma once
// Mixture-of-experts MLPs: what a model's MoE layers hold, and the closed forms of their
// parameters and FLOPs that the cost model and the tests share.

namespace fasop {

/// A model's mixture-of-experts MLP (Shazeer et al. 2017; Megatron-Core's MoELayer): each MoE
/// layer's router sends every token to top_k of `experts` MLPs of width expert_ffn_hidden, beside
/// an optional shared expert that sees every token. experts == 0: a dense model.
struct MoeSpec {
  int experts = 0;                   ///< routed experts per MoE layer
  int top_k = 0;                     ///< experts each token goes to
  int expert_ffn_hidden = 0;         ///< one expert's MLP width
  int shared_expert_ffn_hidden = 0;  ///< the shared expert's MLP width (0: none)
  int dense_layers = 0;              ///< the first layers keep a dense MLP of ffn_hidden (DeepSeek-V3: 3)
  /// Token dropping at capacity factor 1: no expert takes more than its even share of the
  /// tokens. Dropless routing (false) lets the busiest expert take more (moe_load_imbalance).
  bool token_drop = false;
  /// The router's scores replaced by random ones (Megatron-Core's moe_router_force_load_balancing,
  /// "only for benchmark"), so each token's top_k experts are drawn at random and every expert
  /// rank receives its share: how NVIDIA's published MoE throughputs were measured.
  bool force_balance = false;
  /// Group-limited routing (DeepSeek-V3's node-limited routing; Megatron's --moe-router-num-groups
  /// and --moe-router-group-topk): the experts split into router_groups contiguous groups, each
  /// token routed within the router_group_topk groups of its best scores, top_k / group_topk
  /// experts in each. 0: no groups.
  int router_groups = 0;
  int router_group_topk = 0;
  /// The experts' linear layers carry biases (GPT-OSS; Megatron's add_bias_linear): Megatron-Core
  /// adds the down projection's bias per expert, weighted by the routing probability, after its
  /// grouped GEMM (TEGroupedMLP._apply_bias). Their parameters (experts x (2 x width + hidden))
  /// are left out of the counts below: under 0.1% of the experts'.
  bool expert_bias = false;
  /// The experts' GLU clamps its gate at +limit and its linear half at +-limit before the
  /// activation (GPT-OSS: 7.0; Megatron's activation_func_clamp_value); 0: no clamp.
  double activation_clamp = 0;

  bool enabled() const { return experts > 0; }
  bool group_limited() const { return router_groups > 1 && router_group_topk > 0; }
};

/// The load-balance assumption of dropless routing: the rank whose experts receive the most
/// tokens receives this times the mean. Auxiliary load-balancing losses keep routing near even
/// once training settles (Megatron-Core's aux-loss and DeepSeek-V3's bias balancing); 1.1 is a
/// stated assumption, not a fit. Token dropping at capacity factor 1 caps every expert at 1, and
/// forced balancing's random routing gives each rank its share (the spread of a rank's count
/// of random choices is under 1% at a micro-batch's tens of thousands of routed tokens).
constexpr double kDroplessLoadImbalance = 1.1;

/// The busiest expert rank's tokens over the mean under `moe`'s routing.
inline double moe_load_imbalance(const MoeSpec& moe) {
  return moe.token_drop || moe.force_balance ? 1.0 : kDroplessLoadImbalance;
}

/// Weight matrices of an MLP of `gated` kind (SwiGLU: gate, up, down) or not (up, down).
inline int mlp_matrices(bool gated) { return gated ? 3 : 2; }

/// Parameters of one MoE layer's MLP part in the whole model: the router (experts x hidden),
/// every routed expert and the shared expert.
inline double moe_mlp_params(const MoeSpec& moe, double hidden, bool gated) {
  const double per_width = mlp_matrices(gated) * hidden;
  return moe.experts * hidden + moe.experts * per_width * moe.expert_ffn_hidden +
         per_width * moe.shared_expert_ffn_hidden;
}

/// Of them, the parameters one token's forward pass uses: the router, top_k routed experts and
/// the shared expert (the "active" parameters of DeepSeek-V3's 37B of 671B).
inline double moe_active_mlp_params(const MoeSpec& moe, double hidden, bool gated) {
  const double per_width = mlp_matrices(gated) * hidden;
  return moe.experts * hidden + moe.top_k * per_width * moe.expert_ffn_hidden +
         per_width * moe.shared_expert_ffn_hidden;
}

/// Parameters of a MoE layer's routed experts on one GPU: experts / ep of them, each 1/etp.
inline double local_expert_params(const MoeSpec& moe, double hidden, bool gated, int ep, int etp) {
  return double(moe.experts) / ep * mlp_matrices(gated) * hidden * moe.expert_ffn_hidden / etp;
}

/// Tokens the busiest GPU's experts process per forward pass of a MoE layer whose tensor-parallel
/// group holds `tokens` tokens: its 1/tp share (sequence parallelism splits them, as
/// Megatron-LM requires with MoE and tp) routed to top_k experts, gathered over etp, times the
/// load imbalance.
inline double busiest_expert_tokens(const MoeSpec& moe, double tokens, int tp, int etp) {
  return tokens / tp * moe.top_k * etp * moe_load_imbalance(moe);
}

/// Forward FLOPs of one MoE layer's MLP part per token: 2 x its active parameters' GEMMs.
inline double moe_mlp_forward_flops_per_token(const MoeSpec& moe, double hidden, bool gated) {
  return 2 * moe_active_mlp_params(moe, hidden, gated);
}

}  // namespace fasop
