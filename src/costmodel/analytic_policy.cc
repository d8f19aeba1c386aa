#include "costmodel/analytic_policy.h"

#include <algorithm>
#include <limits>

#include "costmodel/fasop_policy.h"
#include "costmodel/pipeline_1f1b.h"

namespace fasop {
namespace {

constexpr double kGib = 1024.0 * 1024.0 * 1024.0;
// An estimate: the CUDA context, NCCL buffers and allocator slack each GPU loses.
constexpr double kReservedBytes = 1.0 * kGib;

/// One link between two ranks: its latency and bandwidth as one rank sees it.
struct Link {
  double latency_s;
  double bits_per_s;
  double collective_efficiency;  ///< share of the bandwidth a collective reaches on it
  double seconds(double bytes) const { return latency_s + 8 * bytes / bits_per_s; }
};

int first_rank(const PlanContext& ctx, int stage) { return ctx.stage_first_rank(stage); }
int last_rank(const PlanContext& ctx, int stage) {
  return ctx.stage_first_rank(stage) + ctx.key.tp * ctx.stage_dp(stage) - 1;
}

const NodeType& type_of_node(const PlanContext& ctx, int node) {
  return ctx.cluster->node_types[ctx.key.node_order[node]];
}

/// The link between two ranks of stage `stage` (or of it and a neighbour): inside a node, or
/// the network, whose bandwidth the node's GPUs of the stage (up to a node's worth) share as
/// they send at once.
Link link_between(const PlanContext& ctx, int stage, int rank_a, int rank_b) {
  int a = ctx.node_of(rank_a), b = ctx.node_of(rank_b);
  const NodeType &ta = type_of_node(ctx, a), &tb = type_of_node(ctx, b);
  if (a == b) return {ta.intra_node_latency_s, ta.intra_node_bandwidth_bits_per_s, ta.intra_node_collective_efficiency};
  double sharing = std::min(ta.gpus_per_node, ctx.key.tp * ctx.stage_dp(stage));
  return {std::max(ta.inter_node_latency_s, tb.inter_node_latency_s),
          std::min(ta.inter_node_bandwidth_bits_per_s, tb.inter_node_bandwidth_bits_per_s) / sharing,
          std::min(ta.inter_node_collective_efficiency, tb.inter_node_collective_efficiency)};
}

double element_bytes(const ModelSpec& model) { return model.dtype == "fp32" ? 4 : 2; }

double total(const std::vector<double>& values) {
  double sum = 0;
  for (double v : values) sum += v;
  return sum;
}

/// Parameters of stage `stage` of `partition` on one GPU: the memory model's prefix sums.
double stage_params(const PlanContext& ctx, const std::vector<int>& partition, int stage) {
  int first = 0;
  for (int s = 0; s < stage; ++s) first += partition[s];
  const std::vector<double>& prefix = ctx.partition_memory->params_prefix;
  return prefix[first + partition[stage]] - prefix[first];
}

}  // namespace

double unit_params(const ModelSpec& m, const LayerUnit& unit, int tp) {
  const double h = m.hidden, f = m.ffn_hidden, v = m.vocab, kv_share = double(m.kv_heads) / m.heads;
  const double norm = m.norm == Norm::kLayerNorm ? 2 * h : h;  // replicated on every tp rank
  switch (unit.role) {
    case LayerRole::kEmbedding:
      return h * v / tp;
    case LayerRole::kPostProcess:
      return h * v / tp + norm;  // the head (a copy of the embedding when tied) and final norm
    case LayerRole::kTransformer: {
      double attention = h * (h + 2 * h * kv_share) + h * h;
      if (unit.cross_attention) attention *= 2;
      double mlp = (m.activation == Activation::kSwiglu ? 3 : 2) * h * f;
      return (attention + mlp) / tp + 2 * norm;
    }
  }
  return 0;
}

ActivationMode activation_mode(const PlanKey& key) {
  return {key.recompute, key.selective_recompute && !key.recompute, key.sequence_parallel && key.tp > 1};
}

double unit_activation_bytes(const ModelSpec& m, const LayerUnit& unit, int tp, int mbs, const ActivationMode& mode) {
  const double s = m.sequence, b = mbs, h = m.hidden, a = m.heads, f = m.ffn_hidden, v = m.vocab, t = tp;
  // Sequence parallelism splits the sequence of what tensor parallelism replicates.
  const double sp = mode.sequence_parallel ? t : 1;
  switch (unit.role) {
    case LayerRole::kEmbedding:
      return 2 * s * b * h / sp;
    case LayerRole::kPostProcess:
      return 2 * s * b * h / sp + 4 * s * b * v / t;  // norm input and fp32 logits for the loss
    case LayerRole::kTransformer: {
      if (mode.full_recompute) return 2 * s * b * h / sp;  // the layer's input; the rest is recomputed
      // Korthikanti et al. 2022, per layer: sbh(10 + 24/t) + 5as^2b/t bytes with tp, the 10
      // (norm inputs, dropout masks and outputs) divided by t too with sequence parallelism,
      // the 5as^2b/t (softmax output, dropout mask and output) dropped by selective
      // recomputation, and never stored by fused attention. Of the 24/t, the MLP's 16sbh/t
      // generalises to 4sbf/t (GELU) or 6sbf/t (SwiGLU's gate, up and product).
      const double replicated = 10 * s * b * h / sp;
      const double attention = 8 * s * b * h / t;
      const double scores = m.flash_attention || mode.selective ? 0 : 5 * a * s * s * b / t;
      const double mlp = (m.activation == Activation::kSwiglu ? 6 : 4) * s * b * f / t;
      const double bytes = replicated + attention + scores + mlp;
      return unit.cross_attention ? bytes + replicated + attention + scores : bytes;
    }
  }
  return 0;
}

double AnalyticPolicy::bytes_per_param(int zero_stage, int dp, const std::string& dtype) {
  // Megatron-LM's table (docs/source/api-guide/distrib_optimizer.md), mixed-precision Adam:
  // bf16 (and fp32-gradient) training keeps 2 (bf16 weights) + 4 (fp32 gradients) + 12 (fp32
  // master weights and moments) = 18; fp16 training 2 (weights) + 2 (fp16 gradients) + 16
  // (fp32 master weights and gradients, moments) = 20. ZeRO-1 (the distributed optimizer)
  // shards the optimizer's part over dp, ZeRO-2 the gradients too, ZeRO-3 everything.
  const bool fp16 = dtype == "fp16";
  const double weights = 2, gradients = fp16 ? 2 : 4, optimizer = fp16 ? 16 : 12;
  switch (zero_stage) {
    case 0: return weights + gradients + optimizer;
    case 1: return weights + gradients + optimizer / dp;
    case 2: return weights + (gradients + optimizer) / dp;
    default: return (weights + gradients + optimizer) / dp;
  }
}

double AnalyticPolicy::gradient_bytes(const std::string& dtype) {
  // Megatron-LM reduces gradients in the training precision for fp16 (its grad buffer is
  // params_dtype unless --accumulate-allreduce-grads-in-fp32) and in fp32 for bf16 (forced).
  return dtype == "fp16" ? 2 : 4;
}

std::vector<int> AnalyticPolicy::stage_node_types(const PlanContext& ctx) const {
  std::vector<int> types;
  for (int s = 0; s < ctx.pp(); ++s) {
    int slowest = -1;
    for (int node = ctx.node_of(first_rank(ctx, s)); node <= ctx.node_of(last_rank(ctx, s)); ++node) {
      int type = ctx.key.node_order[node];
      if (slowest < 0 || total(ctx.unit_compute_s[type]) > total(ctx.unit_compute_s[slowest])) slowest = type;
    }
    types.push_back(slowest);
  }
  return types;
}

std::vector<double> AnalyticPolicy::boundary_send_s(const PlanContext& ctx) const {
  const PlanKey& k = ctx.key;
  std::vector<double> sends;
  for (int b = 0; b + 1 < k.pp; ++b) {
    // A pipeline micro-batch crosses the boundary; the side with fewer replicas moves the
    // larger share per rank.
    int replicas = std::min(ctx.stage_dp(b), ctx.stage_dp(b + 1));
    double bytes = double(k.mbs) * k.dp / replicas * ctx.model->sequence * ctx.model->hidden *
                   element_bytes(*ctx.model) / k.tp;
    double slowest = 0;
    // The corner ranks of the stages meet every kind of link their ranks use.
    for (int d : {0, replicas - 1})
      for (int t : {0, k.tp - 1})
        slowest = std::max(slowest, link_between(ctx, b, ctx.stage_rank(b, d, t), ctx.stage_rank(b + 1, d, t)).seconds(bytes));
    sends.push_back(slowest);
  }
  return sends;
}

double AnalyticPolicy::ring_allreduce_s(const PlanContext& ctx, int stage, double bytes) const {
  const int dp = ctx.stage_dp(stage);
  if (dp == 1) return 0;
  Link link = link_between(ctx, stage, ctx.stage_rank(stage, 0, 0), ctx.stage_rank(stage, dp - 1, ctx.key.tp - 1));
  return 2.0 * (dp - 1) / dp * 8 * bytes / (link.bits_per_s * link.collective_efficiency) +
         2.0 * (dp - 1) * link.latency_s;
}

std::vector<StageTiming> AnalyticPolicy::stage_timings(const PlanContext& ctx, const std::vector<int>& partition) const {
  const PlanKey& k = ctx.key;
  std::vector<StageTiming> stages(k.pp);
  int first = 0;
  for (int s = 0; s < k.pp; ++s) {
    double compute = stage_compute_s(ctx.unit_compute_s[ctx.stage_node_type[s]], first, partition[s]);
    first += partition[s];
    stages[s].forward_s = compute / 3;
    stages[s].backward_s = 2 * compute / 3 + (k.recompute ? compute / 3 : 0);
    // Selective recomputation repeats attention's core (QK^T, softmax, x V) in the backward
    // pass: its share of the layer's FLOPs, s / (6h + s).
    if (activation_mode(k).selective) {
      const double s_len = ctx.model->sequence, h = ctx.model->hidden;
      stages[s].backward_s += compute / 3 * s_len / (6 * h + s_len);
    }
    if (k.zero_stage == 3 && ctx.stage_dp(s) > 1) {
      // Each pass first gathers the stage's bf16 parameters: half a ring all-reduce.
      double gather = ring_allreduce_s(ctx, s, 2 * stage_params(ctx, partition, s)) / 2;
      stages[s].forward_s += gather;
      stages[s].backward_s += gather;
    }
    if (s + 1 < k.pp) stages[s].forward_send_s = ctx.boundary_send_s[s];
    if (s > 0) stages[s].backward_send_s = ctx.boundary_send_s[s - 1];
  }
  return stages;
}

PipelineResult AnalyticPolicy::pipeline(const PlanContext& ctx, const std::vector<StageTiming>& stages) const {
  const int v = ctx.key.virtual_stages, pp = static_cast<int>(stages.size());
  if (v <= 1 || pp == 1) return simulate_1f1b(stages, ctx.num_microbatches);
  // Interleaved 1F1B (Narayanan et al. 2021, section 2.2.2): each rank runs v chunks of its
  // share, so the fill and drain take (pp - 1) / v of a micro-batch's time on a rank, and each
  // micro-batch crosses v boundaries a rank instead of one. Every rank ends together.
  double slowest = 0;
  for (const StageTiming& t : stages)
    slowest = std::max(slowest, t.forward_s + t.backward_s + v * (t.forward_send_s + t.backward_send_s));
  const double total = (ctx.num_microbatches + double(pp - 1) / v) * slowest;
  return {total, std::vector<double>(pp, total)};
}

std::vector<double> AnalyticPolicy::dp_allreduce_s(const PlanContext& ctx, const std::vector<int>& partition,
                                                   const std::vector<StageTiming>* given) const {
  const PlanKey& k = ctx.key;
  std::vector<StageTiming> computed;
  if (options_.overlap_dp_allreduce && !given) computed = stage_timings(ctx, partition);
  const std::vector<StageTiming>& timings = given ? *given : computed;
  std::vector<double> costs;
  for (int s = 0; s < k.pp; ++s) {
    double params = stage_params(ctx, partition, s);
    // ZeRO 0: all-reduce of the gradients (gradient_bytes). ZeRO 1-2: reduce-scatter of them and
    // all-gather of the updated 16-bit weights; ZeRO 3: the reduce-scatter only (weights
    // gathered per pass).
    double ring = ring_allreduce_s(ctx, s, gradient_bytes(ctx.model->dtype) * params);
    if (k.zero_stage == 1 || k.zero_stage == 2) ring = ring / 2 + ring_allreduce_s(ctx, s, 2 * params) / 2;
    if (k.zero_stage == 3) ring /= 2;
    if (options_.overlap_dp_allreduce) ring = std::max(0.0, ring - timings[s].backward_s);
    costs.push_back(ring);
  }
  return costs;
}

double AnalyticPolicy::embedding_allreduce_s(const PlanContext& ctx) const {
  const ModelSpec& m = *ctx.model;
  const PlanKey& k = ctx.key;
  if (!m.tied_embeddings || k.pp == 1) return 0;
  bool has_head = std::any_of(m.units.begin(), m.units.end(), [](const LayerUnit& u) { return u.role == LayerRole::kPostProcess; });
  if (!has_head) return 0;
  // Two ranks (first and last stage) all-reduce the fp32 embedding gradient: one exchange.
  return link_between(ctx, 0, ctx.stage_rank(0, 0, 0), ctx.stage_rank(k.pp - 1, 0, 0)).seconds(4.0 * m.hidden * m.vocab / k.tp);
}

std::optional<MemoryModel> AnalyticPolicy::memory_model(const PlanContext& ctx) const {
  const ModelSpec& m = *ctx.model;
  const PlanKey& k = ctx.key;
  MemoryModel model;
  model.params_prefix.assign(m.units.size() + 1, 0);
  model.activation_prefix.assign(m.units.size() + 1, 0);
  // Activations grow in proportion to the micro-batch: the prefix holds one sample's, and each
  // stage scales them by the samples it runs (stages may differ with per-stage dp).
  double working_layer = 0;  // with recomputation, one layer's full activations at a time
  for (size_t u = 0; u < m.units.size(); ++u) {
    model.params_prefix[u + 1] = model.params_prefix[u] + unit_params(m, m.units[u], k.tp);
    model.activation_prefix[u + 1] =
        model.activation_prefix[u] + unit_activation_bytes(m, m.units[u], k.tp, 1, activation_mode(k));
    if (k.recompute) {
      ActivationMode recomputing = activation_mode(k);
      recomputing.full_recompute = false;
      working_layer = std::max(working_layer, unit_activation_bytes(m, m.units[u], k.tp, 1, recomputing));
    }
  }
  for (int s = 0; s < k.pp; ++s) {
    const double samples = ctx.stage_mbs(s);
    model.bytes_per_param.push_back(bytes_per_param(k.zero_stage, ctx.stage_dp(s), m.dtype));
    model.in_flight.push_back(std::min(k.pp - s, ctx.num_microbatches) * samples);
    model.fixed_bytes.push_back(kReservedBytes + working_layer * samples);
    double memory_gib = std::numeric_limits<double>::infinity();
    for (int node = ctx.node_of(first_rank(ctx, s)); node <= ctx.node_of(last_rank(ctx, s)); ++node)
      memory_gib = std::min(memory_gib, type_of_node(ctx, node).gpu_memory_gib);
    model.limit_bytes.push_back(memory_gib * kGib);
  }
  return model;
}

std::vector<StageMemory> AnalyticPolicy::stage_memory(const PlanContext& ctx, const std::vector<int>& partition) const {
  const MemoryModel& model = *ctx.partition_memory;
  std::vector<StageMemory> stages;
  for (int s = 0, first = 0; s < ctx.pp(); first += partition[s], ++s) {
    const double zero3_per_param = bytes_per_param(3, ctx.stage_dp(s), ctx.model->dtype);
    StageMemory mem;
    int end = first + partition[s];
    mem.gib = model.stage_bytes(s, first, end) / kGib;
    mem.zero_gib = mem.gib - (model.params_prefix[end] - model.params_prefix[first]) *
                                 (model.bytes_per_param[s] - zero3_per_param) / kGib;
    mem.limit_gib = model.limit_bytes[s] / kGib;
    stages.push_back(mem);
  }
  return stages;
}

MemoryVerdict AnalyticPolicy::memory_verdict(const std::vector<StageMemory>& stages) const {
  MemoryVerdict verdict;
  for (const StageMemory& mem : stages) {
    verdict.oom_gpumem_gib = std::max(verdict.oom_gpumem_gib, mem.gib);
    verdict.zero_oom_gpumem_gib = std::max(verdict.zero_oom_gpumem_gib, mem.zero_gib);
    verdict.is_oom = verdict.is_oom || mem.gib > mem.limit_gib;
    verdict.is_zero_oom = verdict.is_zero_oom || mem.zero_gib > mem.limit_gib;
  }
  return verdict;
}

}  // namespace fasop
