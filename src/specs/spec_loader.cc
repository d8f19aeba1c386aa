#include "specs/spec_loader.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "specs/gpu_parameters.h"
#include "specs/precision.h"
#include "specs/spec_error.h"
#include "specs/yaml_field.h"

namespace fasop {
namespace {

LayerRole parse_role(const Field& field) {
  std::string role = field.text();
  if (role == "embedding") return LayerRole::kEmbedding;
  if (role == "transformer") return LayerRole::kTransformer;
  if (role == "post_process") return LayerRole::kPostProcess;
  field.fail("unknown role '" + role + "'; use embedding, transformer or post_process");
}


/// A share (0, 1] from an optional field, or none.
std::optional<double> optional_share(const Field& field) {
  if (!field.present()) return std::nullopt;
  double value = field.positive_double();
  if (value > 1) field.fail("is a share: at most 1");
  return value;
}

/// Field gpu_data: GPU-data parameters by name set over the GPU's shipped data, as
/// `calibrate --from-run` writes them, e.g. {bf16.gemm_peak_share: 0.61, network.bus_share: 0.8,
/// memory_runtime: {megatron: {workspace_gib: 0.2, reserve_share: 0.1}}}.
void apply_gpu_data_overrides(const Field& data, GpuSpec& gpu) {
  for (const std::string& name : data.keys("a mapping of GPU-data parameters to values, e.g. {bf16.gemm_peak_share: 0.6}")) {
    Field value = data.child(name);
    if (name == "memory_runtime") {
      parse_memory_runtime(value, gpu);  // field gpu_data.memory_runtime: over the GPU's own
      continue;
    }
    if (!is_gpu_parameter(name)) value.fail("not a GPU-data parameter; use memory_runtime or " + gpu_parameter_names());
    if (is_per_precision_parameter(name) && name.find('.') == std::string::npos)
      value.fail("name the precision it is for, e.g. bf16." + name);
    if (gpu.peak_tflops.empty()) value.fail("GPU '" + gpu.name + "' has no data to override; give peak_tflops");
    const double v = value.non_negative_double();
    if (name.find("share") != std::string::npos && v > 1) value.fail("a share of a peak is at most 1");
    set_parameter(gpu, "", name, v);
  }
}

/// The node type's GPU data: the shipped data of its GPU, with the file's own fields over it.
void resolve_gpu_data(const Field& entry, NodeType& type) {
  if (const GpuSpec* shipped = shipped_gpu_spec(type.gpu)) {
    type.gpu_data = *shipped;
  } else {
    type.gpu_data.name = type.gpu;
    type.gpu_data_assumed = !type.peak_tflops.empty() && !entry.child("compute_efficiency").present() &&
                            !entry.child("gpu_data").present();
  }
  GpuSpec& gpu = type.gpu_data;
  for (const auto& [precision, tflops] : type.peak_tflops) gpu.peak_tflops[precision] = tflops;
  if (type.memory_bandwidth_bytes_per_s > 0) gpu.memory_bandwidth_bytes_per_s = type.memory_bandwidth_bytes_per_s;
  // An unknown GPU with peaks of its own gets the default efficiencies for each precision.
  for (const auto& [precision, tflops] : gpu.peak_tflops)
    if (gpu.precisions.empty()) gpu.precisions[precision] = PrecisionEfficiency{};
  auto each_precision = [&](auto set) {
    for (auto& [name, efficiency] : gpu.precisions) set(efficiency);
  };
  if (auto v = optional_share(entry.child("compute_efficiency"))) each_precision([&](PrecisionEfficiency& e) { e.gemm_peak_share = *v; });
  if (auto v = optional_share(entry.child("memory_efficiency"))) each_precision([&](PrecisionEfficiency& e) { e.memory_share = *v; });
  if (entry.child("gemm_half_dim").present()) {
    double half = entry.child("gemm_half_dim").non_negative_double();
    each_precision([&](PrecisionEfficiency& e) { e.gemm_half_dim = half; });
  }
  if (entry.child("gemm_half_flops").present())
    entry.child("gemm_half_flops").fail("is gone: GEMM efficiency now follows the GEMM's shape; give gemm_half_dim "
                                        "(each dimension d costs d / (d + gemm_half_dim)) or leave it to the GPU's data");
  if (auto v = optional_share(entry.child("intra_node_collective_efficiency"))) gpu.nvlink.bus_share = *v;
  if (auto v = optional_share(entry.child("inter_node_collective_efficiency"))) gpu.network.bus_share = *v;
  if (Field data = entry.child("gpu_data"); data.present()) apply_gpu_data_overrides(data, gpu);
}

}  // namespace

const std::vector<std::string>& model_dim_fields() {
  static const std::vector<std::string> fields = {"hidden", "heads", "sequence", "vocab", "precision_bits", "dtype",
                                                  "ffn_hidden", "kv_heads", "activation", "norm", "tied_embeddings",
                                                  "attention", "family", "causal", "head_dim", "moe", "mla",
                                                  "mtp_layers", "sliding_window", "hidden_dropout",
                                                  "attention_dropout", "qk_layernorm", "rotary_base"};
  return fields;
}

void parse_model_dims(const Field& root, ModelSpec& model) {
  // Bounds far past any model trained, so that products of them (4 x hidden, sequence x batch
  // x hidden) stay within their types.
  model.hidden = root.child("hidden").positive_int(kMaxHidden);
  model.heads = root.child("heads").positive_int(kMaxHidden);
  model.sequence = root.child("sequence").positive_int(kMaxSequence);
  model.vocab = root.child("vocab").positive_int(kMaxVocab);
  if (root.child("precision_bits").present())
    model.precision_bits = root.child("precision_bits").positive_int(64);
  if (model.hidden % model.heads != 0)
    root.child("heads").fail("must divide hidden (" + std::to_string(model.hidden) + ")");
  model.dtype = model.precision_bits == 32 ? "fp32" : "fp16";
  if (root.child("dtype").present()) {
    model.dtype = root.child("dtype").text();
    if (!known_precision(model.dtype))
      root.child("dtype").fail("unknown precision '" + model.dtype + "'; use " + known_precisions_text());
  }
  model.ffn_hidden = root.child("ffn_hidden").present() ? root.child("ffn_hidden").positive_int(4 * kMaxHidden) : 4 * model.hidden;
  model.kv_heads = root.child("kv_heads").present() ? root.child("kv_heads").positive_int(kMaxHidden) : model.heads;
  if (model.heads % model.kv_heads != 0)
    root.child("kv_heads").fail("must divide heads (" + std::to_string(model.heads) +
                                "): grouped-query attention shares each key/value head among heads / kv_heads heads");
  if (root.child("activation").present()) {
    std::string activation = root.child("activation").text();
    if (activation == "gelu") model.activation = Activation::kGelu;
    else if (activation == "swiglu") model.activation = Activation::kSwiglu;
    else if (activation == "squared_relu") model.activation = Activation::kSquaredRelu;
    else if (activation == "quick_geglu") model.activation = Activation::kQuickGeglu;
    else root.child("activation").fail("unknown activation '" + activation + "'; use gelu, swiglu, squared_relu or quick_geglu");
  }
  if (root.child("norm").present()) {
    std::string norm = root.child("norm").text();
    if (norm == "layernorm") model.norm = Norm::kLayerNorm;
    else if (norm == "rmsnorm") model.norm = Norm::kRmsNorm;
    else root.child("norm").fail("unknown norm '" + norm + "'; use layernorm or rmsnorm");
  }
  if (root.child("tied_embeddings").present()) model.tied_embeddings = root.child("tied_embeddings").as<bool>("true or false");
  if (root.child("attention").present()) {
    std::string attention = root.child("attention").text();
    if (attention != "flash" && attention != "unfused")
      root.child("attention").fail("unknown attention '" + attention + "'; use flash or unfused");
    model.flash_attention = attention == "flash";
  }
  if (root.child("family").present()) {
    std::string family = root.child("family").text();
    if (family == "gpt2") model.family = ModelFamily::kGpt2;
    else if (family == "bert") model.family = ModelFamily::kBert;
    else if (family == "t5") model.family = ModelFamily::kT5;
    else if (family == "llama") model.family = ModelFamily::kLlama;
    else root.child("family").fail("unknown family '" + family + "'; use gpt2, bert, t5 or llama");
  }
  model.causal = model.family != ModelFamily::kBert;
  if (root.child("causal").present()) model.causal = root.child("causal").as<bool>("true or false");
  if (root.child("qk_layernorm").present()) model.qk_layernorm = root.child("qk_layernorm").as<bool>("true or false");
  const double family_dropout = model.family == ModelFamily::kLlama ? 0 : 0.1;
  for (auto [name, value] : {std::pair{"hidden_dropout", &model.hidden_dropout}, {"attention_dropout", &model.attention_dropout}}) {
    *value = family_dropout;
    if (Field field = root.child(name); field.present()) {
      *value = field.non_negative_double();
      if (*value >= 1) field.fail("must be a probability below 1, got " + field.text());
    }
  }
  if (Field base = root.child("rotary_base"); base.present()) {
    model.rotary_base = base.positive_int(1000000000);
    if (!model.rotary_positions())
      base.fail("goes with rotary positions (family: llama); remove it or set the family");
  }
  if (root.child("head_dim").present()) model.head_dim = root.child("head_dim").positive_int(kMaxHidden);
  if (Field moe = root.child("moe"); moe.present()) model.moe = parse_moe(moe);
  if (root.child("mtp_layers").present()) model.mtp_layers = root.child("mtp_layers").positive_int(kMaxMtpLayers);
  if (Field window = root.child("sliding_window"); window.present()) {
    window.keys("a mapping {tokens, full_every?}");
    window.only_keys({"tokens", "full_every"});
    model.sliding_window.tokens = window.child("tokens").positive_int(kMaxSequence);
    if (window.child("full_every").present())
      model.sliding_window.full_every = window.child("full_every").non_negative_int(kMaxUnits);
    if (!model.causal)
      window.fail("needs causal attention (each query sees the tokens before it); remove it or set causal: true");
  }
  if (Field mla = root.child("mla"); mla.present()) {
    model.mla = parse_mla(mla);
    // MLA's heads are widths of their own, each with its own key and value.
    if (root.child("head_dim").present())
      root.child("head_dim").fail("goes with multi-head or grouped-query attention; an 'mla' block gives the heads' "
                                  "widths (qk_head_dim, qk_rope_head_dim, v_head_dim): remove head_dim");
    if (model.kv_heads != model.heads)
      root.child("kv_heads").fail("must equal heads (" + std::to_string(model.heads) +
                                  ") with an 'mla' block: latent attention gives every head its own key and value");
  }
}

MlaSpec parse_mla(const Field& field) {
  field.keys("a mapping {q_lora_rank, kv_lora_rank, qk_head_dim, qk_rope_head_dim, v_head_dim}");
  field.only_keys({"q_lora_rank", "kv_lora_rank", "qk_head_dim", "qk_rope_head_dim", "v_head_dim"});
  MlaSpec mla;
  mla.q_lora_rank = field.child("q_lora_rank").positive_int(kMaxHidden);
  mla.kv_lora_rank = field.child("kv_lora_rank").positive_int(kMaxHidden);
  mla.qk_head_dim = field.child("qk_head_dim").positive_int(kMaxHidden);
  mla.qk_rope_head_dim = field.child("qk_rope_head_dim").positive_int(kMaxHidden);
  mla.v_head_dim = field.child("v_head_dim").positive_int(kMaxHidden);
  return mla;
}

/// Group-limited routing, checked as Megatron-Core's router computes it: groups of equal size,
/// top_k split evenly over the chosen groups.
void parse_router_groups(const Field& field, MoeSpec& moe) {
  const Field groups = field.child("router_groups"), topk = field.child("router_group_topk");
  if (groups.present() != topk.present())
    (groups.present() ? topk : groups).fail("missing; group-limited routing takes router_groups and router_group_topk together");
  if (!groups.present()) return;
  moe.router_groups = groups.positive_int(moe.experts);
  moe.router_group_topk = topk.positive_int(moe.router_groups);
  if (moe.experts % moe.router_groups != 0)
    groups.fail("does not divide the " + std::to_string(moe.experts) + " experts; give a divisor of them");
  if (moe.top_k % moe.router_group_topk != 0)
    topk.fail("does not divide top_k " + std::to_string(moe.top_k) + "; each chosen group takes top_k / router_group_topk experts");
}

MoeSpec parse_moe(const Field& field) {
  field.keys("a mapping {experts, top_k, expert_ffn_hidden, shared_expert_ffn_hidden?, dense_layers?, token_drop?, "
             "force_balance?, expert_bias?, activation_clamp?, router_groups?, router_group_topk?}");
  field.only_keys({"experts", "top_k", "expert_ffn_hidden", "shared_expert_ffn_hidden", "dense_layers", "token_drop",
                   "force_balance", "expert_bias", "activation_clamp", "router_groups", "router_group_topk"});
  MoeSpec moe;
  moe.experts = field.child("experts").positive_int(kMaxExperts);
  moe.top_k = field.child("top_k").positive_int(kMaxExperts);
  if (moe.top_k > moe.experts)
    field.child("top_k").fail("is more than the " + std::to_string(moe.experts) + " experts; a token goes to at most all of them");
  moe.expert_ffn_hidden = field.child("expert_ffn_hidden").positive_int(4 * kMaxHidden);
  if (field.child("shared_expert_ffn_hidden").present())
    moe.shared_expert_ffn_hidden = field.child("shared_expert_ffn_hidden").non_negative_int(4 * kMaxHidden);
  if (field.child("dense_layers").present()) moe.dense_layers = field.child("dense_layers").non_negative_int(kMaxUnits);
  if (field.child("token_drop").present()) moe.token_drop = field.child("token_drop").as<bool>("true or false");
  if (field.child("force_balance").present()) moe.force_balance = field.child("force_balance").as<bool>("true or false");
  if (field.child("expert_bias").present()) moe.expert_bias = field.child("expert_bias").as<bool>("true or false");
  if (field.child("activation_clamp").present()) moe.activation_clamp = field.child("activation_clamp").positive_double();
  parse_router_groups(field, moe);
  return moe;
}

void check_moe_units(const Field& layers, const ModelSpec& model) {
  int dense = 0, moe = 0;
  for (const LayerUnit& unit : model.units) {
    if (unit.role != LayerRole::kTransformer) continue;
    (unit.moe ? moe : dense) += 1;
  }
  if (moe > 0 && !model.moe.enabled())
    layers.fail("has units with moe: true but the model has no 'moe' block; add moe: {experts, top_k, expert_ffn_hidden}");
  if (model.moe.enabled() && moe == 0)
    layers.fail("has no unit with moe: true but the model has a 'moe' block; mark its MoE layers moe: true");
  if (model.moe.enabled() && dense != model.moe.dense_layers)
    layers.fail("has " + std::to_string(dense) + " dense transformer layers but moe.dense_layers is " +
                std::to_string(model.moe.dense_layers) + "; make them agree");
}

ModelSpec parse_model(const std::string& yaml_text, const std::string& source) {
  Field root = load_root(yaml_text, source);
  ModelSpec model;
  model.source = source;
  std::vector<std::string> fields = model_dim_fields();
  fields.insert(fields.end(), {"name", "report_name", "aliases", "global_batch", "train_steps", "train_tokens", "layers", "default_clusters",
                                "stacks"});
  root.only_keys(fields);
  model.name = root.child("name").text();
  model.report_name =
      root.child("report_name").present() ? root.child("report_name").text() : model.name;
  if (Field aliases = root.child("aliases"); aliases.present())
    for (const Field& alias : aliases.items("a list of names")) model.aliases.push_back(alias.text());
  parse_model_dims(root, model);
  model.global_batch = root.child("global_batch").positive_int(kMaxGlobalBatch);
  if (root.child("train_steps").present()) model.train_steps = root.child("train_steps").positive_double();
  if (root.child("train_tokens").present()) {
    if (root.child("train_steps").present())
      root.child("train_tokens").fail("give the run's length once: train_tokens or train_steps");
    model.train_tokens = root.child("train_tokens").positive_double();
  }

  Field layers = root.child("layers");
  for (const Field& entry : layers.items("list of {type, role, repeat}", true)) {
    entry.only_keys({"type", "role", "repeat", "segment", "cross_attention", "moe"});
    LayerUnit unit;
    unit.type = entry.child("type").text();
    unit.role = parse_role(entry.child("role"));
    if (entry.child("segment").present()) unit.segment = entry.child("segment").text();
    if (entry.child("cross_attention").present())
      unit.cross_attention = entry.child("cross_attention").as<bool>("true or false");
    if (entry.child("moe").present()) unit.moe = entry.child("moe").as<bool>("true or false");
    if (unit.moe && unit.role != LayerRole::kTransformer)
      entry.child("moe").fail("only a transformer unit has an MLP to make a mixture of experts");
    int repeat = entry.child("repeat").present() ? entry.child("repeat").positive_int(kMaxUnits) : 1;
    if (model.units.size() + repeat > static_cast<size_t>(kMaxUnits))
      entry.child("repeat").fail("the model would have more than " + std::to_string(kMaxUnits) + " pipeline units");
    model.units.insert(model.units.end(), repeat, unit);
  }
  if (model.num_transformer_layers() == 0)
    layers.fail("has no unit with role transformer; add at least one");
  check_moe_units(layers, model);
  const bool decoder_only =
      model.family != ModelFamily::kT5 &&
      std::all_of(model.units.begin(), model.units.end(), [](const LayerUnit& u) { return u.segment.empty(); });
  if (model.sliding_window.enabled() && !decoder_only)
    root.child("sliding_window").fail("needs a decoder-only model (Megatron-LM windows its decoder's self-attention); "
                                      "remove it");
  apply_sliding_window(model);
  if (model.mtp_layers > 0 && (model.units.back().role != LayerRole::kPostProcess || !decoder_only))
    root.child("mtp_layers").fail("needs a decoder-only model whose last unit is its post_process (the output head and "
                                  "loss), which multi-token prediction shares; remove mtp_layers");
  if (model.mla.enabled())
    for (const LayerUnit& unit : model.units)
      if (unit.cross_attention)
        layers.fail("has a cross-attention unit ('" + unit.type + "') but the model's 'mla' block prices self-attention "
                    "only; drop one of them");

  if (Field stacks = root.child("stacks"); stacks.present()) {
    stacks.keys("a mapping {torchtitan: module:function, megatron_bridge: recipe stem}");
    stacks.only_keys({"torchtitan", "megatron_bridge", "megatron_bridge_transformer"});
    if (Field torchtitan = stacks.child("torchtitan"); torchtitan.present()) {
      model.torchtitan_config = torchtitan.text();
      const size_t colon = model.torchtitan_config.find(':');
      if (colon == std::string::npos || colon == 0 || colon + 1 == model.torchtitan_config.size())
        torchtitan.fail("must be module:function, e.g. torchtitan.models.llama3.config_registry:llama3_8b");
    }
    if (Field bridge = stacks.child("megatron_bridge"); bridge.present()) model.megatron_bridge_recipe = bridge.text();
    if (Field nested = stacks.child("megatron_bridge_transformer"); nested.present()) {
      model.megatron_bridge_transformer = nested.text();
      if (model.megatron_bridge_transformer != "model" && model.megatron_bridge_transformer != "model.transformer")
        nested.fail("must be model (a GPTModelProvider recipe) or model.transformer (a BridgeGPTModelConfig recipe)");
    }
  }

  Field clusters = root.child("default_clusters");
  if (clusters.present()) {
    clusters.keys("a mapping {homogeneous, heterogeneous, pareto} -> cluster");
    clusters.only_keys({"homogeneous", "heterogeneous", "pareto"});
    for (const char* kind : {"homogeneous", "heterogeneous", "pareto"})
      if (clusters.child(kind).present()) model.default_clusters[kind] = clusters.child(kind).text();
  }
  return model;
}

NodeType parse_node_type(const Field& entry) {
  entry.only_keys({"name", "gpu", "gpus_per_node", "gpu_memory_gib", "intra_node_bandwidth_bits_per_s",
                   "inter_node_bandwidth_bits_per_s", "price_usd_per_hour", "peak_tflops",
                   "memory_bandwidth_bytes_per_s", "compute_efficiency", "memory_efficiency", "gemm_half_dim",
                   "gemm_half_flops", "intra_node_collective_efficiency", "inter_node_collective_efficiency",
                   "gpu_data", "intra_node_latency_s", "inter_node_latency_s", "nvlink_domain_nodes", "slurm", "env",
                   "zone"});
  NodeType type;
  type.name = entry.child("name").text();
  type.gpu = entry.child("gpu").text();
  type.gpus_per_node = entry.child("gpus_per_node").positive_int(kMaxGpusPerNode);
  type.gpu_memory_gib = entry.child("gpu_memory_gib").positive_double();
  type.intra_node_bandwidth_bits_per_s =
      entry.child("intra_node_bandwidth_bits_per_s").positive_double();
  type.inter_node_bandwidth_bits_per_s =
      entry.child("inter_node_bandwidth_bits_per_s").positive_double();
  type.price_usd_per_hour = entry.child("price_usd_per_hour").non_negative_double();
  Field peak = entry.child("peak_tflops");
  if (peak.present()) {
    for (const std::string& precision : peak.keys("a map: precision -> dense TFLOP/s", true))
      type.peak_tflops[precision] = peak.child(precision).positive_double();
    entry.child("memory_bandwidth_bytes_per_s").require();
  }
  if (entry.child("memory_bandwidth_bytes_per_s").present())
    type.memory_bandwidth_bytes_per_s = entry.child("memory_bandwidth_bytes_per_s").positive_double();
  resolve_gpu_data(entry, type);
  if (entry.child("intra_node_latency_s").present())
    type.intra_node_latency_s = entry.child("intra_node_latency_s").non_negative_double();
  if (entry.child("inter_node_latency_s").present())
    type.inter_node_latency_s = entry.child("inter_node_latency_s").non_negative_double();
  if (entry.child("nvlink_domain_nodes").present())
    type.nvlink_domain_nodes = entry.child("nvlink_domain_nodes").positive_int(kMaxGpusPerNode);
  if (Field slurm = entry.child("slurm"); slurm.present()) {
    slurm.keys("{partition: NAME, gres: gpu:8, constraint: ..., account: ...}");
    slurm.only_keys({"partition", "gres", "constraint", "account"});
    type.slurm.partition = slurm.child("partition").text();
    if (slurm.child("gres").present()) type.slurm.gres = slurm.child("gres").text();
    if (slurm.child("constraint").present()) type.slurm.constraint = slurm.child("constraint").text();
    if (slurm.child("account").present()) type.slurm.account = slurm.child("account").text();
  }
  if (Field env = entry.child("env"); env.present()) type.env = environment_variables(env);
  if (Field zone = entry.child("zone"); zone.present()) type.zone = zone.text();
  return type;
}

namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "'" : ", '") + name + "'";
  return text;
}

/// Field `zones`: the inter-zone link and its per-pair overrides, whose zones must be ones that
/// `zone_names` (the node types' zones) holds. Required where the node types name two zones.
ZoneSpec parse_zones(const Field& zones, const std::vector<std::string>& zone_names) {
  ZoneSpec spec;
  if (!zones.present()) {
    if (zone_names.size() > 1)
      zones.fail("missing; the node types name " + std::to_string(zone_names.size()) + " zones (" + joined(zone_names) +
                 "): give zones: {inter_zone_bandwidth_bits_per_s, inter_zone_latency_s, egress_usd_per_gb}");
    return spec;
  }
  zones.keys("a mapping {inter_zone_bandwidth_bits_per_s, inter_zone_latency_s, egress_usd_per_gb, pairs}");
  zones.only_keys({"inter_zone_bandwidth_bits_per_s", "inter_zone_latency_s", "egress_usd_per_gb", "pairs"});
  spec.given = true;
  spec.inter_zone.bandwidth_bits_per_s = zones.child("inter_zone_bandwidth_bits_per_s").positive_double();
  spec.inter_zone.latency_s = zones.child("inter_zone_latency_s").positive_double();
  spec.inter_zone.egress_usd_per_gb = zones.child("egress_usd_per_gb").non_negative_double();
  Field pairs = zones.child("pairs");
  if (!pairs.present()) return spec;
  for (const Field& entry : pairs.items("a list of {zones: [A, B], bandwidth_bits_per_s, latency_s, egress_usd_per_gb}")) {
    entry.keys("a mapping {zones: [A, B], bandwidth_bits_per_s, latency_s, egress_usd_per_gb}");
    entry.only_keys({"zones", "bandwidth_bits_per_s", "latency_s", "egress_usd_per_gb"});
    Field names = entry.child("zones");
    std::vector<Field> ends = names.items("a list of two zone names, e.g. [us-central1-a, us-west1-b]");
    if (ends.size() != 2) names.fail("expected two zone names, got " + std::to_string(ends.size()));
    ZonePair pair;
    pair.zone_a = ends[0].text();
    pair.zone_b = ends[1].text();
    for (const Field& end : ends) {
      const std::string name = end.text();
      if (std::find(zone_names.begin(), zone_names.end(), name) != zone_names.end()) continue;
      const std::string guess = closest_name(name, zone_names);
      end.fail("unknown zone '" + name + "'" + (guess.empty() ? "" : "; did you mean '" + guess + "'?") +
               " (the node types name " + joined(zone_names) + ")");
    }
    if (pair.zone_a == pair.zone_b) names.fail("names zone '" + pair.zone_a + "' twice; a pair joins two different zones");
    if (spec.find_pair(pair.zone_a, pair.zone_b))
      names.fail("the pair '" + pair.zone_a + "', '" + pair.zone_b + "' is given twice; keep one");
    // What a pair does not give is the inter-zone link's.
    pair.link = spec.inter_zone;
    if (Field f = entry.child("bandwidth_bits_per_s"); f.present()) pair.link.bandwidth_bits_per_s = f.positive_double();
    if (Field f = entry.child("latency_s"); f.present()) pair.link.latency_s = f.positive_double();
    if (Field f = entry.child("egress_usd_per_gb"); f.present()) pair.link.egress_usd_per_gb = f.non_negative_double();
    spec.pairs.push_back(pair);
  }
  return spec;
}

}  // namespace

ClusterSpec parse_cluster(const std::string& yaml_text, const std::string& source) {
  Field root = load_root(yaml_text, source);
  ClusterSpec cluster;
  cluster.source = source;
  root.only_keys({"name", "node_types", "nodes", "zones"});
  cluster.name = root.child("name").present() ? root.child("name").text() : source;

  for (const Field& entry : root.child("node_types").items("list of node types", true)) {
    NodeType type = parse_node_type(entry);
    if (cluster.find_node_type(type.name) >= 0)
      entry.child("name").fail("node type '" + type.name + "' is defined twice");
    cluster.node_types.push_back(type);
  }

  Field nodes = root.child("nodes");
  for (const Field& entry : nodes.items("a list of {type, count}")) {
    entry.only_keys({"type", "count"});
    std::string name = entry.child("type").text();
    int type = cluster.find_node_type(name);
    if (type < 0)
      entry.child("type").fail("unknown node type '" + name + "'; define it under node_types");
    const long long count = entry.child("count").as<long long>("a whole number");
    if (count < 0) entry.child("count").fail("must be zero or positive");
    if (static_cast<long long>(cluster.nodes.size()) + count > kMaxNodes)
      entry.child("count").fail("the cluster would have more than " + std::to_string(kMaxNodes) + " nodes");
    cluster.nodes.insert(cluster.nodes.end(), count, type);
  }
  if (cluster.nodes.empty()) nodes.fail("the cluster has no nodes; give at least one a count");
  cluster.zones = parse_zones(root.child("zones"), cluster.zone_names());
  return cluster;
}

namespace {

/// A key that must be a whole number in [1, kMaxGpusPerNode x 1024] (a tp degree or a micro-batch).
int whole_key(const Field& field, const std::string& key) {
  try {
    size_t used = 0;
    const long long value = std::stoll(key, &used);
    if (used == key.size() && value > 0 && value <= 1 << 22) return static_cast<int>(value);
  } catch (const std::exception&) {
  }
  field.fail("the key '" + key + "' must be a whole number from 1 to " + std::to_string(1 << 22));
}

/// A map layer type -> tp -> micro-batch -> seconds (forward_s, or backward_s).
void parse_layer_times(const Field& layers,
                       std::map<std::string, std::map<int, std::map<int, double>>>& out, bool required) {
  if (!required && !layers.present()) return;
  for (const std::string& type : layers.keys("a map: layer type -> tp -> micro-batch -> seconds")) {
    Field per_tp = layers.child(type);
    for (const std::string& tp_key : per_tp.keys("a map: tp degree -> micro-batch -> seconds")) {
      Field points = per_tp.child(tp_key);
      const int tp = whole_key(points, tp_key);
      for (const std::string& mbs_key : points.keys("a map: micro-batch size -> seconds", true)) {
        Field seconds = points.child(mbs_key);
        out[type][tp][whole_key(seconds, mbs_key)] = seconds.positive_double();
      }
    }
  }
}

}  // namespace

ProfileSpec parse_profile(const std::string& yaml_text, const std::string& source) {
  Field root = load_root(yaml_text, source);
  ProfileSpec profile;
  profile.source = source;
  // matmul_flops and activation_bytes: what `profile layers` measured besides the times.
  root.only_keys({"model", "gpu", "forward_s", "backward_s", "matmul_flops", "activation_bytes"});
  profile.model = root.child("model").text();
  profile.gpu = root.child("gpu").text();
  parse_layer_times(root.child("forward_s"), profile.forward_s, true);
  if (root.child("backward_s").present()) parse_layer_times(root.child("backward_s"), profile.backward_s, false);
  return profile;
}

}  // namespace fasop
