#pragma once
// Helpers shared by the tests: specs from the presets compiled into the binary (no disk).
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "costmodel/fasop_policy.h"
#include "costmodel/make_context.h"
#include "search/search.h"
#include "specs/spec_error.h"
#include "specs/spec_loader.h"
#include "specs/spec_store.h"

namespace fasop::testing {

/// Catch2 2.x has no SKIP: a test that lacks its data prints this marker and returns, and CTest
/// reports it skipped (tests/CMakeLists.txt sets SKIP_REGULAR_EXPRESSION to the marker).
inline void report_skipped(const std::string& why) { std::cout << "FASOP_TEST_SKIPPED: " << why << "\n"; }

/// The bytes a dense (or, with `experts`, a routed expert's) parameter holds on stage `stage`
/// for the whole step: its forward moment's weights, gradients, master copy and moments.
inline double held_bytes_per_param(const MemoryModel& memory, int stage, bool experts = false) {
  const MomentRates& forward = memory.stage_moments(stage).front();
  const MemoryTerms& t = experts ? forward.per_expert_param : forward.per_param;
  return t.weights_bytes + t.gradients_bytes + t.master_weights_bytes + t.optimizer_states_bytes;
}

/// The message of the SpecError `act` throws, or "no error" where it throws none.
inline std::string spec_error(const std::function<void()>& act) {
  try {
    act();
  } catch (const SpecError& e) {
    return e.what();
  }
  return "no error";
}

/// Calls visit(p) for every composition p of n units into k non-empty stages (brute force).
inline void compositions(int n, int k, std::vector<int>& prefix,
                         const std::function<void(const std::vector<int>&)>& visit) {
  if (k == 1) {
    prefix.push_back(n);
    visit(prefix);
    prefix.pop_back();
    return;
  }
  for (int first = 1; first <= n - k + 1; ++first) {
    prefix.push_back(first);
    compositions(n - first, k - 1, prefix, visit);
    prefix.pop_back();
  }
}

/// A TextSource over an in-memory map, so tests need no files.
class MapSource : public TextSource {
 public:
  std::map<std::string, std::string> files;
  std::optional<std::string> read(const std::string& path) const override {
    auto it = files.find(path);
    if (it == files.end()) return std::nullopt;
    return it->second;
  }
};

/// A context with hand-set unit costs: `types` node types, every stage's type given.
struct SyntheticPipeline {
  SyntheticPipeline(const SyntheticPipeline&) = delete;  // ctx points into model
  ModelSpec model;
  PlanContext ctx;
  SyntheticPipeline(const std::vector<std::vector<double>>& unit_costs, std::vector<int> stage_types,
                    std::vector<std::string> segments = {}) {
    for (size_t u = 0; u < unit_costs[0].size(); ++u)
      model.units.push_back({"layer", LayerRole::kTransformer, segments.empty() ? "" : segments[u]});
    ctx.model = &model;
    ctx.key.pp = static_cast<int>(stage_types.size());
    ctx.unit_compute_s = unit_costs;
    ctx.stage_node_type = stage_types;
  }
};

/// A made-up GPU on a made-up node: 100 TFLOP/s fp16 at half of it for GEMMs, 1e12 B/s memory at
/// half of it, attention at 40% (forward) and 25% (backward) of the peak, 1 us between kernels
/// and 2 us to launch one; 8 GPUs on a 1e12 bit/s link with 1 us latency, 8e11 bit/s and 10 us
/// between nodes; collectives at the whole bandwidth; overlapping costs the GEMMs 10%.
inline NodeType made_up_node() {
  NodeType node;
  node.name = "x";
  node.gpu = "X";
  node.gpus_per_node = 8;
  node.gpu_memory_gib = 80;
  node.intra_node_bandwidth_bits_per_s = 1e12;
  node.intra_node_latency_s = 1e-6;
  node.inter_node_bandwidth_bits_per_s = 8e11;
  node.inter_node_latency_s = 1e-5;
  node.price_usd_per_hour = 10;
  GpuSpec& g = node.gpu_data;
  g.name = "X";
  g.memory_gib = 80;
  g.peak_tflops = {{"fp16", 100}};
  g.memory_bandwidth_bytes_per_s = 1e12;
  PrecisionEfficiency e;
  e.gemm_peak_share = 0.5;
  e.gemm_half_dim = 0;
  e.attention_peak_share = 0.4;
  e.attention_backward_peak_share = 0.25;
  e.memory_share = 0.5;
  g.precisions = {{"fp16", e}};
  g.nvlink = {1.0, 0};
  g.network = {1.0, 0};
  g.launch.kernel_gap_s = 1e-6;
  g.launch.dispatch_s = {{"megatron", 2e-6}};
  g.overlap_slowdown = 0.1;
  return node;
}

/// A cluster of `nodes` nodes of type `node`.
inline ClusterSpec made_up_cluster(const NodeType& node, int nodes) {
  ClusterSpec c;
  c.name = "made-up";
  c.source = "test";
  c.node_types = {node};
  c.nodes.assign(nodes, 0);
  return c;
}

/// A made-up model: 4 transformer layers of hidden h = 1000 (ffn 4h, layernorm), bf16, a
/// sequence of 500 tokens, 8 sequences a step. A layer holds 12 h^2 + 4 h = 12,004,000
/// parameters (attention 4 h^2, MLP 8 h^2, two layernorms of 2 h); the four 48,016,000.
/// One sample's activations at a stage boundary: 500 x 1000 x 2 bytes = 1e6 bytes.
inline ModelSpec tiny_model() {
  return parse_model("name: tiny\nhidden: 1000\nheads: 10\nsequence: 500\nvocab: 1000\ndtype: bf16\nglobal_batch: 8\n"
                     "layers:\n  - {type: transformer, role: transformer, repeat: 4}\n",
                     "tiny.yaml");
}

/// A model preset, loaded as the planner loads it.
inline ModelSpec preset_model(const std::string& name) {
  MapSource none;
  SpecStore store(none, embedded_presets());
  return store.load_model(name);
}

/// A model and a cluster loaded from the shipped presets (no profiles: those of clusters whose
/// GPUs nobody measured are made analytically).
struct PresetSpecs {
  ModelSpec model;
  ClusterSpec cluster;

  PresetSpecs(const std::string& model_name, const std::string& cluster_name) {
    MapSource none;
    SpecStore store(none, embedded_presets());
    model = store.load_model(model_name);
    cluster = store.load_cluster(cluster_name);
  }
};

/// A model, a cluster and their measured profiles loaded from the shipped presets.
struct Presets : PresetSpecs {
  std::vector<ProfileSpec> profiles;
  FasopPolicy policy;
  SearchInput input;

  Presets(const std::string& model_name, const std::string& cluster_name) : PresetSpecs(model_name, cluster_name) {
    MapSource none;
    SpecStore store(none, embedded_presets());
    profiles.reserve(cluster.node_types.size());
    for (const NodeType& type : cluster.node_types) {
      profiles.push_back(store.load_profile(model, type.gpu, ""));
      input.profiles.push_back(&profiles.back());
    }
    input.model = &model;
    input.cluster = &cluster;
    input.policy = &policy;
  }

  /// The context of a layout; `nodes` defaults to the cluster's own node order.
  PlanContext context(int mbs, int tp, int dp, int pp, std::vector<int> nodes = {}) const {
    PlanKey key{mbs, tp, dp, pp, nodes.empty() ? cluster.nodes : nodes};
    return make_plan_context(model, cluster, input.profiles, policy, key);
  }
};

}  // namespace fasop::testing
