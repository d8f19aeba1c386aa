#pragma once
// Megatron-Core's selective recomputation modules (--recompute-granularity selective
// --recompute-modules ...): which parts of a transformer layer drop their activations after
// the forward pass and redo it in the backward pass. The cost model prices their memory and
// time; the Megatron emitter writes them.
#include <optional>
#include <string>
#include <vector>

namespace fasop {

struct ModelSpec;
struct Field;

/// One module Megatron-Core's TransformerConfig.recompute_modules names (a bit of a set).
enum RecomputeModule : unsigned {
  kRecomputeCoreAttn = 1u << 0,       ///< attention's core: scores, softmax, x V (Korthikanti's selective)
  kRecomputeMoeAct = 1u << 1,         ///< the experts' activation function; its output is dropped
  kRecomputeLayernorm = 1u << 2,      ///< input_layernorm and pre_mlp_layernorm; their outputs are dropped
  kRecomputeMlaUpProj = 1u << 3,      ///< MLA's up-projections and rotary embedding; queries, keys, values dropped
  kRecomputeMlp = 1u << 4,            ///< a dense layer's MLP, checkpointed whole
  kRecomputeMoe = 1u << 5,            ///< a MoE layer's MoE block (router, dispatch, experts), checkpointed whole
  kRecomputeSharedExperts = 1u << 6,  ///< a MoE layer's shared expert, checkpointed whole
};

/// A set of RecomputeModule bits. Megatron-Core's default, core attention alone.
using RecomputeModules = unsigned;
inline constexpr RecomputeModules kDefaultRecomputeModules = kRecomputeCoreAttn;

/// The modules of a set by Megatron-Core's names, in its order (core_attn, moe_act, layernorm,
/// mla_up_proj, mlp, moe, shared_experts).
std::vector<std::string> recompute_module_names(RecomputeModules modules);
/// Those names joined by `separator`, e.g. "mla_up_proj,moe_act".
std::string recompute_modules_text(RecomputeModules modules, const std::string& separator = ",");
/// The set of some names; nullopt (and the first unknown name in `unknown`) if one is not a module.
std::optional<RecomputeModules> recompute_modules_named(const std::vector<std::string>& names, std::string* unknown);
/// The names Megatron-Core accepts that fasop-cpp prices, for error messages.
const char* recompute_module_choices();

/// The modules a YAML list names (plan files, validation cases: recompute_modules:
/// [mla_up_proj, moe_act]); fails naming the field on an unknown name or an empty list, and
/// where the plan's recomputation is not `selective` (the modules name what it recomputes).
RecomputeModules recompute_modules_field(const Field& field, bool selective);

/// Why `modules` cannot be recomputed as given in `model`, "" if they can: Megatron-Core refuses
/// mla_up_proj without multi-latent attention; moe_act, moe and shared_experts recompute nothing
/// in a model without experts (shared_experts: without a shared expert), and mlp nothing in a
/// model whose every layer is MoE. An empty set recomputes nothing.
std::string recompute_modules_fault(const ModelSpec& model, RecomputeModules modules);

}  // namespace fasop
