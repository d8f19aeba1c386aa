#include "costmodel/fasop_policy.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "costmodel/rank_layout.h"

namespace fasop {
namespace {

/// The nodes FASOP assigns to stage `stage` (device_placement.get_gpu_for_stage).
std::vector<int> fasop_stage_nodes(int stage, int pp, int num_nodes) {
  if (pp == 1) {
    std::vector<int> all(num_nodes);
    for (int n = 0; n < num_nodes; ++n) all[n] = n;
    return all;
  }
  if (pp < num_nodes) {
    double nodes_per_stage = double(num_nodes) / pp;
    std::vector<int> nodes;
    for (int n = int(nodes_per_stage * stage); n < int(nodes_per_stage * (stage + 1)); ++n)
      nodes.push_back(n);
    return nodes;
  }
  if (pp > num_nodes) return {int(std::floor(stage / (double(pp) / num_nodes)))};
  return {stage};
}

/// The node whose GPU memory limits stage `stage` in FASOP's OOM check (EstimatePeakMemory).
/// With fewer stages than nodes FASOP scans nodes [s, e-1) of the stage and keeps the last;
/// an empty scan keeps the previous stage's node.
int fasop_memory_node(int stage, int pp, int num_nodes, int previous) {
  if (pp > num_nodes) return stage / (pp / num_nodes);
  if (pp == num_nodes) return stage;
  int width = num_nodes / pp;
  int first = stage * width, end = (stage + 1) * width - 1;
  return end - 1 >= first ? end - 1 : (previous >= 0 ? previous : first);
}

double total_compute(const std::vector<double>& units) {
  double sum = 0;
  for (double u : units) sum += u;
  return sum;
}

// FASOP keeps bandwidths, sends and all-reduces in float32 tensors: these helpers compute in
// float to give its figures to the last bit.
float inter_node_bits_per_s(const PlanContext& ctx, int node_a, int node_b) {
  const auto& types = ctx.cluster->node_types;
  return std::min(float(types[ctx.key.node_order[node_a]].inter_node_bandwidth_bits_per_s),
                  float(types[ctx.key.node_order[node_b]].inter_node_bandwidth_bits_per_s));
}

float intra_node_bits_per_s(const PlanContext& ctx, int node) {
  return float(ctx.cluster->node_types[ctx.key.node_order[node]].intra_node_bandwidth_bits_per_s);
}

/// Bandwidth between two ranks without FASOP's divisors: intra-node if they share a node.
float link_bits_per_s(const PlanContext& ctx, int rank_a, int rank_b) {
  int node_a = ctx.node_of(rank_a), node_b = ctx.node_of(rank_b);
  return node_a == node_b ? intra_node_bits_per_s(ctx, node_a)
                          : inter_node_bits_per_s(ctx, node_a, node_b);
}

}  // namespace

double stage_compute_s(const std::vector<double>& unit_compute_s, int first, int count) {
  double sum = 0;
  for (int u = first; u < first + count; ++u) sum += unit_compute_s[u];
  return sum;
}

std::vector<int> FasopPolicy::stage_node_types(const PlanContext& ctx) const {
  // FASOP: a stage touching any A10 node runs at A10 speed. In general: the slowest node type
  // (largest whole-model compute time) among the stage's nodes.
  std::vector<int> types;
  for (int s = 0; s < ctx.pp(); ++s) {
    int slowest = -1;
    for (int node : fasop_stage_nodes(s, ctx.pp(), ctx.cluster->num_nodes())) {
      int type = ctx.key.node_order[node];
      if (slowest < 0 || total_compute(ctx.unit_compute_s[type]) >
                             total_compute(ctx.unit_compute_s[slowest]))
        slowest = type;
    }
    types.push_back(slowest);
  }
  return types;
}

std::vector<double> FasopPolicy::boundary_send_s(const PlanContext& ctx) const {
  const PlanKey& k = ctx.key;
  const float bits = float(float(float(k.mbs) * float(ctx.model->sequence)) * float(ctx.model->hidden)) *
                     float(ctx.model->precision_bits);
  std::vector<double> sends;
  for (int b = 0; b + 1 < k.pp; ++b) {
    float worst_s = 0;
    for (int d = 0; d < k.dp; ++d) {
      float slowest = std::numeric_limits<float>::infinity();
      for (int t = 0; t < k.tp; ++t) {
        int from = ctx.node_of(rank_of(b, d, t, k.tp, k.dp));
        int to = ctx.node_of(rank_of(b + 1, d, t, k.tp, k.dp));
        float bw = from != to ? inter_node_bits_per_s(ctx, from, to) / float(k.dp) / float(k.tp) / 1.05f
                              : intra_node_bits_per_s(ctx, from) / 3.5f;
        slowest = std::min(slowest, bw);
      }
      worst_s = std::max(worst_s, bits / slowest);
    }
    sends.push_back(worst_s);
  }
  return sends;
}

std::vector<StageTiming> FasopPolicy::stage_timings(const PlanContext& ctx,
                                                    const std::vector<int>& partition) const {
  const int pp = ctx.pp();
  std::vector<StageTiming> stages(pp);
  int first = 0;
  for (int s = 0; s < pp; ++s) {
    double compute = stage_compute_s(ctx.unit_compute_s[ctx.stage_node_type[s]], first, partition[s]);
    first += partition[s];
    stages[s].forward_s = compute / 3;
    stages[s].backward_s = 2.0 * compute / 3;
  }
  if (pp > 1) {
    stages.front().forward_send_s = ctx.boundary_send_s.front();
    stages.back().backward_send_s = ctx.boundary_send_s.back();
  }
  return stages;
}

std::vector<double> FasopPolicy::dp_allreduce_s(const PlanContext& ctx, const std::vector<int>& partition,
                                                const std::vector<StageTiming>*) const {
  const PlanKey& k = ctx.key;
  const ModelSpec& model = *ctx.model;
  const int gpus_per_node = ctx.gpus_per_node;
  const float h = float(model.hidden);
  // Parameters of stage 0, as FASOP counts them for every stage.
  float params = 0;
  bool embedding_counted = false;
  for (int u = 0; u < partition[0]; ++u) {
    if (model.units[u].role == LayerRole::kTransformer) {
      params += (12.0f * (h * h) + 20800.0f) / float(k.tp);
    } else if (!embedding_counted) {
      embedding_counted = true;
      params += h * float(model.vocab);
    }
  }
  // Slowest link of the data-parallel ring of stage 0, tensor-parallel lane tp-1.
  float ring = std::numeric_limits<float>::infinity();
  for (int d = 0; d < k.dp; ++d)
    ring = std::min(ring, link_bits_per_s(ctx, rank_of(0, d, k.tp - 1, k.tp, k.dp),
                                          rank_of(0, (d + 1) % k.dp, k.tp - 1, k.tp, k.dp)));
  const float bits = params * float(model.precision_bits);
  std::vector<double> costs;
  for (int s = 0; s < k.pp; ++s) {
    float bw = ring;
    if (k.tp * k.dp >= gpus_per_node && k.dp > 1) {
      bw /= float(k.tp);  // the tp lanes share the node's network link
    } else if (k.tp * k.dp < gpus_per_node && k.dp > 1 && k.tp > 1 &&
               ctx.cluster->node_types[ctx.stage_node_type[s]].gpu == "A10") {
      bw /= float(double(gpus_per_node) / k.dp);  // FASOP shares PCIe only on A10 nodes
    }
    costs.push_back(float(2 * (k.dp - 1)) * bits / (float(k.dp) * bw));
  }
  return costs;
}

double FasopPolicy::embedding_allreduce_s(const PlanContext& ctx) const {
  const PlanKey& k = ctx.key;
  const ModelSpec& model = *ctx.model;
  // Only a model whose output head shares the input embedding's weights (one with a
  // post-process unit; FASOP's T5 has none) synchronises them.
  bool has_head = std::any_of(model.units.begin(), model.units.end(), [](const LayerUnit& u) {
    return u.role == LayerRole::kPostProcess;
  });
  if (k.pp == 1 || !has_head) return 0;
  float slowest = std::numeric_limits<float>::infinity();
  const int d = k.dp - 1;  // FASOP keeps the last replica's figure
  for (int t = 0; t < k.tp; ++t)
    slowest = std::min(slowest, link_bits_per_s(ctx, rank_of(0, d, t, k.tp, k.dp),
                                                rank_of(k.pp - 1, d, t, k.tp, k.dp)));
  float bw = slowest / float(std::min(k.dp, ctx.gpus_per_node));
  // 2 (n-1) / n x the embedding's bits over the bandwidth, n = 2 (first and last stage).
  double bits = 2.0 * (2 - 1) * (double(model.hidden) * model.vocab * model.precision_bits);
  return float(float(bits) / (2.0f * bw)) / float(k.tp);
}

std::vector<StageMemory> FasopPolicy::stage_memory(const PlanContext& ctx,
                                                   const std::vector<int>& partition) const {
  const PlanKey& k = ctx.key;
  const ModelSpec& m = *ctx.model;
  const double h = m.hidden, v = m.vocab, s = m.sequence, a = m.heads, b = k.mbs, tp = k.tp;
  // Micro-batches whose activations stage 0 holds at once under 1F1B.
  const double in_flight = ctx.num_microbatches > k.pp ? k.pp : ctx.num_microbatches;
  const double gib = 1024.0 * 1024.0 * 1024.0;
  std::vector<StageMemory> stages;
  int unit = 0, memory_node = -1;
  for (int stage = 0; stage < k.pp; ++stage) {
    double params = 0, activation_bytes = 0;
    for (int end = unit + partition[stage]; unit < end; ++unit) {
      switch (m.units[unit].role) {
        case LayerRole::kEmbedding:
          params += h * v / tp;
          activation_bytes += s * b * h * k.pp * in_flight / tp;
          break;
        case LayerRole::kTransformer:
          params += 12 * h * h / tp;
          activation_bytes += s * b * in_flight * h * (10 + 24 / tp + 5 * (a * s) / (h * tp));
          break;
        case LayerRole::kPostProcess:
          params += h * v / tp;
          activation_bytes += 4 * s * b * h / tp + 4 * s * b * v / tp;
          break;
      }
    }
    StageMemory mem;
    mem.gib = (params * 18 + activation_bytes) / gib;
    mem.zero_gib = (params * (6 + 12 / k.dp) + activation_bytes) / gib;
    memory_node = fasop_memory_node(stage, k.pp, ctx.cluster->num_nodes(), memory_node);
    mem.limit_gib = ctx.cluster->node_types[k.node_order[memory_node]].gpu_memory_gib;
    stages.push_back(mem);
  }
  return stages;
}

MemoryVerdict FasopPolicy::memory_verdict(const std::vector<StageMemory>& stages) const {
  MemoryVerdict verdict;
  for (const StageMemory& mem : stages) {
    verdict.oom_gpumem_gib = std::max(verdict.oom_gpumem_gib, mem.gib);
    verdict.zero_oom_gpumem_gib = std::max(verdict.zero_oom_gpumem_gib, mem.zero_gib);
  }
  // FASOP reports the peak, or the margined figure of the last stage that does not fit.
  for (const StageMemory& mem : stages) {
    if (mem.gib * kMemoryMargin > mem.limit_gib) {
      verdict.is_oom = true;
      verdict.oom_gpumem_gib = mem.gib * kMemoryMargin;
    }
    if (mem.zero_gib > mem.limit_gib) {
      verdict.is_zero_oom = true;
      verdict.zero_oom_gpumem_gib = mem.zero_gib * kMemoryMargin;
    }
  }
  return verdict;
}

PipelineResult FasopPolicy::pipeline(const PlanContext& ctx, const std::vector<StageTiming>& stages) const {
  if (stages.size() > 1) return simulate_1f1b(stages, ctx.num_microbatches);
  // Without a pipeline FASOP multiplies in float32: m x (forward + backward).
  float seconds = float(ctx.num_microbatches) * float(stages[0].forward_s + stages[0].backward_s);
  return {seconds, {seconds}};
}

double FasopPolicy::step_time_s(const PipelineResult& pipeline, const std::vector<double>& dp_allreduce_s,
                                double embedding_allreduce_s, int* bottleneck) const {
  return latest_end_plus_sync<float>(pipeline, dp_allreduce_s, embedding_allreduce_s, bottleneck);
}

}  // namespace fasop
