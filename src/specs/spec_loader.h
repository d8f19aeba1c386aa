#pragma once
#include <string>

#include "specs/cluster_spec.h"
#include "specs/model_spec.h"
#include "specs/profile_spec.h"
#include "specs/yaml_field.h"

namespace fasop {

// Bounds on what spec files may give: far past any model trained or cluster built, so that
// arithmetic on them cannot overflow and no file makes the planner allocate without end.
constexpr int kMaxHidden = 1 << 20;        ///< hidden, heads; ffn_hidden up to 4 x this
constexpr int kMaxSequence = 1 << 24;      ///< tokens a sequence
constexpr int kMaxVocab = 1 << 24;
constexpr int kMaxGlobalBatch = 1 << 24;   ///< sequences a step
constexpr int kMaxUnits = 100'000;         ///< pipeline units of a model (its layers, repeated)
constexpr int kMaxGpusPerNode = 4096;
constexpr int kMaxNodes = 100'000;         ///< nodes of a cluster
constexpr int kMaxExperts = 1 << 16;       ///< routed experts of a MoE layer
constexpr int kMaxMtpLayers = 16;          ///< multi-token-prediction modules (DeepSeek-V3 trains 1)

// Parse and validate spec YAML text. `source` names the file in error messages.
// Every problem throws SpecError naming the source, the field and the fix.
ModelSpec parse_model(const std::string& yaml_text, const std::string& source);
ClusterSpec parse_cluster(const std::string& yaml_text, const std::string& source);
ProfileSpec parse_profile(const std::string& yaml_text, const std::string& source);

// The pieces other loaders share (validation cases: an inline model or node type).
/// One node type, as a cluster file's `node_types` entry gives it (name, gpu, gpus_per_node,
/// memory, links, price, the GPU's specs, slurm).
NodeType parse_node_type(const Field& entry);
/// A model's dimensions and precision (hidden, heads, sequence, vocab, precision_bits, dtype,
/// ffn_hidden, kv_heads, activation, norm, tied_embeddings, family, head_dim, moe, mla):
/// everything but its name, units, batch and clusters.
void parse_model_dims(const Field& root, ModelSpec& model);
/// The fields parse_model_dims reads, for a loader's list of known fields.
const std::vector<std::string>& model_dim_fields();
/// A model's `moe` block: {experts, top_k, expert_ffn_hidden, shared_expert_ffn_hidden?,
/// dense_layers?, token_drop?, force_balance?, expert_bias?, activation_clamp?}.
MoeSpec parse_moe(const Field& field);
/// A model's `mla` block (multi-head latent attention): {q_lora_rank, kv_lora_rank, qk_head_dim,
/// qk_rope_head_dim, v_head_dim}, each a positive width.
MlaSpec parse_mla(const Field& field);
/// Refuses `model`'s units (from `layers`) where they disagree with its moe block: MoE units
/// without one, a block without MoE units, dense layers other than moe.dense_layers.
void check_moe_units(const Field& layers, const ModelSpec& model);

}  // namespace fasop
