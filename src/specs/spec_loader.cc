#include "specs/spec_loader.h"

#include <yaml-cpp/yaml.h>

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

/// The node type's GPU data: the shipped data of its GPU, with the file's own fields over it.
/// Field gpu_data: GPU-data parameters by name set over the GPU's shipped data, as
/// `calibrate --from-run` writes them, e.g. {bf16.gemm_peak_share: 0.61, network.bus_share: 0.8}.
void apply_gpu_data_overrides(const Field& data, GpuSpec& gpu) {
  if (!data.node.IsMap()) data.fail("expected a mapping of GPU-data parameters to values, e.g. {bf16.gemm_peak_share: 0.6}");
  for (const auto& item : data.node) {
    const std::string name = item.first.as<std::string>();
    Field value = data.child(name);
    if (!is_gpu_parameter(name)) value.fail("not a GPU-data parameter; use " + gpu_parameter_names());
    if (is_per_precision_parameter(name) && name.find('.') == std::string::npos)
      value.fail("name the precision it is for, e.g. bf16." + name);
    if (gpu.peak_tflops.empty()) value.fail("GPU '" + gpu.name + "' has no data to override; give peak_tflops");
    const double v = value.non_negative_double();
    if (name.find("share") != std::string::npos && v > 1) value.fail("a share of a peak is at most 1");
    set_parameter(gpu, "", name, v);
  }
}

void resolve_gpu_data(const Field& entry, NodeType& type) {
  if (const GpuSpec* shipped = shipped_gpu_spec(type.gpu)) type.gpu_data = *shipped;
  else type.gpu_data.name = type.gpu;
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

void parse_model_dims(const Field& root, ModelSpec& model) {
  model.hidden = root.child("hidden").positive_int();
  model.heads = root.child("heads").positive_int();
  model.sequence = root.child("sequence").positive_int();
  model.vocab = root.child("vocab").positive_int();
  if (root.child("precision_bits").present())
    model.precision_bits = root.child("precision_bits").positive_int();
  if (model.hidden % model.heads != 0)
    root.child("heads").fail("must divide hidden (" + std::to_string(model.hidden) + ")");
  model.dtype = model.precision_bits == 32 ? "fp32" : "fp16";
  if (root.child("dtype").present()) {
    model.dtype = root.child("dtype").text();
    if (!known_precision(model.dtype))
      root.child("dtype").fail("unknown precision '" + model.dtype + "'; use " + known_precisions_text());
  }
  model.ffn_hidden = root.child("ffn_hidden").present() ? root.child("ffn_hidden").positive_int() : 4 * model.hidden;
  model.kv_heads = root.child("kv_heads").present() ? root.child("kv_heads").positive_int() : model.heads;
  if (model.heads % model.kv_heads != 0)
    root.child("kv_heads").fail("must divide heads (" + std::to_string(model.heads) +
                                "): grouped-query attention shares each key/value head among heads / kv_heads heads");
  if (root.child("activation").present()) {
    std::string activation = root.child("activation").text();
    if (activation == "gelu") model.activation = Activation::kGelu;
    else if (activation == "swiglu") model.activation = Activation::kSwiglu;
    else if (activation == "squared_relu") model.activation = Activation::kSquaredRelu;
    else root.child("activation").fail("unknown activation '" + activation + "'; use gelu, swiglu or squared_relu");
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
}

ModelSpec parse_model(const std::string& yaml_text, const std::string& source) {
  Field root = load_root(yaml_text, source);
  ModelSpec model;
  model.source = source;
  model.name = root.child("name").text();
  model.report_name =
      root.child("report_name").present() ? root.child("report_name").text() : model.name;
  Field aliases = root.child("aliases");
  if (aliases.present()) {
    if (!aliases.node.IsSequence()) aliases.fail("expected a list of names");
    for (size_t i = 0; i < aliases.node.size(); ++i) model.aliases.push_back(aliases.item(i).text());
  }
  parse_model_dims(root, model);
  model.global_batch = root.child("global_batch").positive_int();
  if (root.child("train_steps").present()) model.train_steps = root.child("train_steps").positive_double();

  Field layers = root.child("layers");
  if (!layers.node.IsSequence() || layers.node.size() == 0)
    layers.fail("expected a non-empty list of {type, role, repeat}");
  for (size_t i = 0; i < layers.node.size(); ++i) {
    Field entry = layers.item(i);
    LayerUnit unit;
    unit.type = entry.child("type").text();
    unit.role = parse_role(entry.child("role"));
    if (entry.child("segment").present()) unit.segment = entry.child("segment").text();
    if (entry.child("cross_attention").present())
      unit.cross_attention = entry.child("cross_attention").as<bool>("true or false");
    int repeat = entry.child("repeat").present() ? entry.child("repeat").positive_int() : 1;
    for (int r = 0; r < repeat; ++r) model.units.push_back(unit);
  }
  if (model.num_transformer_layers() == 0)
    layers.fail("has no unit with role transformer; add at least one");

  Field clusters = root.child("default_clusters");
  if (clusters.present()) {
    for (const char* kind : {"homogeneous", "heterogeneous", "pareto"})
      if (clusters.child(kind).present()) model.default_clusters[kind] = clusters.child(kind).text();
  }
  return model;
}

NodeType parse_node_type(const Field& entry) {
  NodeType type;
  type.name = entry.child("name").text();
  type.gpu = entry.child("gpu").text();
  type.gpus_per_node = entry.child("gpus_per_node").positive_int();
  type.gpu_memory_gib = entry.child("gpu_memory_gib").positive_double();
  type.intra_node_bandwidth_bits_per_s =
      entry.child("intra_node_bandwidth_bits_per_s").positive_double();
  type.inter_node_bandwidth_bits_per_s =
      entry.child("inter_node_bandwidth_bits_per_s").positive_double();
  type.price_usd_per_hour = entry.child("price_usd_per_hour").non_negative_double();
  Field peak = entry.child("peak_tflops");
  if (peak.present()) {
    if (!peak.node.IsMap() || peak.node.size() == 0) peak.fail("expected a map: precision -> dense TFLOP/s");
    for (const auto& item : peak.node) {
      std::string precision = item.first.as<std::string>();
      type.peak_tflops[precision] = Field{entry.source, item.second, peak.path + "." + precision}.positive_double();
    }
    entry.child("memory_bandwidth_bytes_per_s").require();
  }
  if (entry.child("memory_bandwidth_bytes_per_s").present())
    type.memory_bandwidth_bytes_per_s = entry.child("memory_bandwidth_bytes_per_s").positive_double();
  resolve_gpu_data(entry, type);
  if (entry.child("intra_node_latency_s").present())
    type.intra_node_latency_s = entry.child("intra_node_latency_s").non_negative_double();
  if (entry.child("inter_node_latency_s").present())
    type.inter_node_latency_s = entry.child("inter_node_latency_s").non_negative_double();
  if (Field slurm = entry.child("slurm"); slurm.present()) {
    if (!slurm.node.IsMap()) slurm.fail("expected {partition: NAME, gres: gpu:8, constraint: ..., account: ...}");
    type.slurm.partition = slurm.child("partition").text();
    if (slurm.child("gres").present()) type.slurm.gres = slurm.child("gres").text();
    if (slurm.child("constraint").present()) type.slurm.constraint = slurm.child("constraint").text();
    if (slurm.child("account").present()) type.slurm.account = slurm.child("account").text();
  }
  if (Field env = entry.child("env"); env.present()) type.env = environment_variables(env);
  return type;
}

ClusterSpec parse_cluster(const std::string& yaml_text, const std::string& source) {
  Field root = load_root(yaml_text, source);
  ClusterSpec cluster;
  cluster.source = source;
  cluster.name = root.child("name").present() ? root.child("name").text() : source;

  Field types = root.child("node_types");
  if (!types.node.IsSequence() || types.node.size() == 0) types.fail("expected a non-empty list");
  for (size_t i = 0; i < types.node.size(); ++i) {
    Field entry = types.item(i);
    NodeType type = parse_node_type(entry);
    if (cluster.find_node_type(type.name) >= 0)
      entry.child("name").fail("node type '" + type.name + "' is defined twice");
    cluster.node_types.push_back(type);
  }

  Field nodes = root.child("nodes");
  if (!nodes.node.IsSequence()) nodes.fail("expected a list of {type, count}");
  for (size_t i = 0; i < nodes.node.size(); ++i) {
    Field entry = nodes.item(i);
    std::string name = entry.child("type").text();
    int type = cluster.find_node_type(name);
    if (type < 0)
      entry.child("type").fail("unknown node type '" + name + "'; define it under node_types");
    int count = entry.child("count").as<int>("a whole number");
    if (count < 0) entry.child("count").fail("must be zero or positive");
    for (int n = 0; n < count; ++n) cluster.nodes.push_back(type);
  }
  if (cluster.nodes.empty()) nodes.fail("the cluster has no nodes; give at least one a count");
  return cluster;
}

namespace {

/// A map layer type -> tp -> micro-batch -> seconds (forward_s, or backward_s).
void parse_layer_times(const Field& layers, const std::string& source,
                       std::map<std::string, std::map<int, std::map<int, double>>>& out, bool required) {
  if (!layers.node.IsMap()) {
    if (required || layers.present()) layers.fail("expected a map: layer type -> tp -> micro-batch -> seconds");
    return;
  }
  for (const auto& layer : layers.node) {
    std::string type = layer.first.as<std::string>();
    Field per_tp{source, layer.second, layers.path + "." + type};
    if (!per_tp.node.IsMap()) per_tp.fail("expected a map: tp degree -> micro-batch -> seconds");
    for (const auto& tp_entry : per_tp.node) {
      Field tp_key{source, tp_entry.first, per_tp.path};
      int tp = tp_key.positive_int();
      Field points{source, tp_entry.second, per_tp.path + "." + std::to_string(tp)};
      if (!points.node.IsMap() || points.node.size() == 0)
        points.fail("expected a map: micro-batch size -> seconds");
      for (const auto& point : points.node) {
        int mbs = Field{source, point.first, points.path}.positive_int();
        Field seconds{source, point.second, points.path + "." + std::to_string(mbs)};
        out[type][tp][mbs] = seconds.positive_double();
      }
    }
  }
}

}  // namespace

ProfileSpec parse_profile(const std::string& yaml_text, const std::string& source) {
  Field root = load_root(yaml_text, source);
  ProfileSpec profile;
  profile.source = source;
  profile.model = root.child("model").text();
  profile.gpu = root.child("gpu").text();
  parse_layer_times(root.child("forward_s"), source, profile.forward_s, true);
  if (root.child("backward_s").present()) parse_layer_times(root.child("backward_s"), source, profile.backward_s, false);
  return profile;
}

}  // namespace fasop
