#include "specs/spec_loader.h"

#include <yaml-cpp/yaml.h>

#include <cmath>

#include "specs/spec_error.h"

namespace fasop {
namespace {

/// A YAML node with the path that leads to it, so errors can name the field.
struct Field {
  const std::string& source;
  YAML::Node node;
  std::string path;

  Field child(const std::string& key) const {
    return {source, node[key], path.empty() ? key : path + "." + key};
  }
  Field item(size_t i) const { return {source, node[i], path + "[" + std::to_string(i) + "]"}; }
  [[noreturn]] void fail(const std::string& problem) const {
    throw SpecError(source + ": field '" + path + "': " + problem);
  }
  bool present() const { return node.IsDefined() && !node.IsNull(); }
  void require() const {
    if (!present()) fail("missing; add it");
  }
  template <typename T>
  T as(const char* what) const {
    require();
    try {
      return node.as<T>();
    } catch (const YAML::Exception&) {
      fail(std::string("expected ") + what);
    }
  }
  std::string text() const { return as<std::string>("a string"); }
  int positive_int() const {
    int value = as<int>("a whole number");
    if (value <= 0) fail("must be positive, got " + std::to_string(value));
    return value;
  }
  double positive_double() const {
    double value = as<double>("a number");
    if (!(value > 0) || !std::isfinite(value)) fail("must be a positive number");
    return value;
  }
  double non_negative_double() const {
    double value = as<double>("a number");
    if (!(value >= 0) || !std::isfinite(value)) fail("must be zero or positive");
    return value;
  }
};

Field load_root(const std::string& yaml_text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw SpecError(source + ": malformed YAML at line " + std::to_string(e.mark.line + 1) + ": " +
                    e.msg);
  }
  if (!root.IsMap()) throw SpecError(source + ": expected a YAML mapping at the top level");
  return {source, root, ""};
}

LayerRole parse_role(const Field& field) {
  std::string role = field.text();
  if (role == "embedding") return LayerRole::kEmbedding;
  if (role == "transformer") return LayerRole::kTransformer;
  if (role == "post_process") return LayerRole::kPostProcess;
  field.fail("unknown role '" + role + "'; use embedding, transformer or post_process");
}

}  // namespace

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
  model.hidden = root.child("hidden").positive_int();
  model.heads = root.child("heads").positive_int();
  model.sequence = root.child("sequence").positive_int();
  model.vocab = root.child("vocab").positive_int();
  model.global_batch = root.child("global_batch").positive_int();
  if (root.child("precision_bits").present())
    model.precision_bits = root.child("precision_bits").positive_int();
  if (model.hidden % model.heads != 0)
    root.child("heads").fail("must divide hidden (" + std::to_string(model.hidden) + ")");

  Field layers = root.child("layers");
  if (!layers.node.IsSequence() || layers.node.size() == 0)
    layers.fail("expected a non-empty list of {type, role, repeat}");
  for (size_t i = 0; i < layers.node.size(); ++i) {
    Field entry = layers.item(i);
    LayerUnit unit;
    unit.type = entry.child("type").text();
    unit.role = parse_role(entry.child("role"));
    if (entry.child("segment").present()) unit.segment = entry.child("segment").text();
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

ClusterSpec parse_cluster(const std::string& yaml_text, const std::string& source) {
  Field root = load_root(yaml_text, source);
  ClusterSpec cluster;
  cluster.source = source;
  cluster.name = root.child("name").present() ? root.child("name").text() : source;

  Field types = root.child("node_types");
  if (!types.node.IsSequence() || types.node.size() == 0) types.fail("expected a non-empty list");
  for (size_t i = 0; i < types.node.size(); ++i) {
    Field entry = types.item(i);
    NodeType type;
    type.name = entry.child("name").text();
    if (cluster.find_node_type(type.name) >= 0)
      entry.child("name").fail("node type '" + type.name + "' is defined twice");
    type.gpu = entry.child("gpu").text();
    type.gpus_per_node = entry.child("gpus_per_node").positive_int();
    type.gpu_memory_gib = entry.child("gpu_memory_gib").positive_double();
    type.intra_node_bandwidth_bits_per_s =
        entry.child("intra_node_bandwidth_bits_per_s").positive_double();
    type.inter_node_bandwidth_bits_per_s =
        entry.child("inter_node_bandwidth_bits_per_s").positive_double();
    type.price_usd_per_hour = entry.child("price_usd_per_hour").non_negative_double();
    if (!cluster.node_types.empty() && type.gpus_per_node != cluster.gpus_per_node())
      entry.child("gpus_per_node")
          .fail("all node types must have the same GPUs per node for now (" +
                std::to_string(cluster.gpus_per_node()) + ")");
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

ProfileSpec parse_profile(const std::string& yaml_text, const std::string& source) {
  Field root = load_root(yaml_text, source);
  ProfileSpec profile;
  profile.source = source;
  profile.model = root.child("model").text();
  profile.gpu = root.child("gpu").text();
  Field layers = root.child("forward_s");
  if (!layers.node.IsMap()) layers.fail("expected a map: layer type -> tp -> micro-batch -> seconds");
  for (const auto& layer : layers.node) {
    std::string type = layer.first.as<std::string>();
    Field per_tp{source, layer.second, layers.path + "." + type};
    if (!per_tp.node.IsMap()) per_tp.fail("expected a map: tp degree -> micro-batch -> seconds");
    for (const auto& tp_entry : per_tp.node) {
      Field tp_key{source, tp_entry.first, per_tp.path};
      int tp = tp_key.positive_int();
      Field points{source, tp_entry.second, per_tp.path + "." + std::to_string(tp)};
      if (!points.node.IsMap() || points.node.size() == 0)
        points.fail("expected a map: micro-batch size -> forward seconds");
      for (const auto& point : points.node) {
        int mbs = Field{source, point.first, points.path}.positive_int();
        Field seconds{source, point.second, points.path + "." + std::to_string(mbs)};
        profile.forward_s[type][tp][mbs] = seconds.positive_double();
      }
    }
  }
  return profile;
}

}  // namespace fasop
