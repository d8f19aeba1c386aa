#include "costmodel/analytic_policy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "costmodel/fasop_policy.h"
#include "costmodel/fsdp_gathers.h"
#include "costmodel/pipeline_1f1b.h"
#include "costmodel/speed_split_stage.h"
#include "costmodel/zone_egress.h"
#include "profiles/op_selective_recompute.h"
#include "profiles/recomputed_flops.h"
#include "specs/link.h"
#include "specs/precision.h"

namespace fasop {
namespace {

int first_rank(const PlanContext& ctx, int stage) { return ctx.stage_first_rank(stage); }
int last_rank(const PlanContext& ctx, int stage) { return ctx.stage_first_rank(stage) + ctx.stage_gpus(stage) - 1; }

const NodeType& type_of_node(const PlanContext& ctx, int node) {
  return ctx.cluster->node_types[ctx.key.node_order[node]];
}

/// How many of a node's GPUs (of type `ta`) share its network as stage `stage` sends (see
/// link_between): those of the stage on the node, or for a ring its tp rings.
double network_sharing(const PlanContext& ctx, int stage, const NodeType& ta, bool ring) {
  const int tp = ctx.stage_tp(stage);
  const double on_node = std::min(ta.gpus_per_node, ctx.stage_gpus(stage));
  return ring ? std::min<double>(tp, on_node) : on_node;
}

/// Bounds `link`, a network link between nodes of types `ta` and `tb` that `sharing` GPUs of a
/// node share, by the link between their zones where they differ: the zones' bandwidth (per
/// node, shared alike) where it is lower, and the larger latency.
[[gnu::noinline]] void limit_by_zones(const PlanContext& ctx, const NodeType& ta, const NodeType& tb, double sharing,
                                      Link& link) {
  if (&ta == &tb || ta.zone == tb.zone) return;
  const ZoneLink& zone = ctx.cluster->zones.link(ta.zone, tb.zone);
  link.bits_per_s = std::min(link.bits_per_s, zone.bandwidth_bits_per_s / sharing);
  link.latency_s = std::max(link.latency_s, zone.latency_s);
}

/// The link between two ranks of stage `stage` (or of it and a neighbour): inside a node, or
/// the network, whose bandwidth the node's GPUs of the stage (up to a node's worth) share as
/// they send at once. A data-parallel ring (`ring`) is shared only by the stage's other rings
/// on the node (one per tp rank): NCCL runs a ring's channels over all of the node's NICs, so
/// a ring with k GPUs on each node crosses between nodes at k GPUs' worth of network (its bus
/// bandwidth across DGX nodes is the node's, as nccl-tests show).
/// Nodes of one NVLink domain (specs/nvlink_domain.h) talk over NVLink as a node's GPUs do.
/// Between zones, limit_by_zones bounds it.
Link link_between(const PlanContext& ctx, int stage, int rank_a, int rank_b, bool ring = false) {
  int a = ctx.node_of(rank_a), b = ctx.node_of(rank_b);
  const NodeType &ta = type_of_node(ctx, a), &tb = type_of_node(ctx, b);
  // Inside an NVLink domain every GPU has its own NVLink ports to the others, as on one node.
  if (a == b || ctx.same_nvlink_domain(a, b)) return nvlink_of(ta);
  const double sharing = network_sharing(ctx, stage, ta, ring);
  Link link = network_between(ta, tb, sharing);
  if (ctx.multi_zone) limit_by_zones(ctx, ta, tb, sharing, link);
  return link;
}

double element_bytes(const ModelSpec& model) { return activation_bytes(model.dtype); }

/// Bounds `link`, of stage `stage`'s data-parallel rings, by the slowest of their edges between
/// two zones (zone_egress.h). Out of line: the inner loops that time rings in one zone skip it.
[[gnu::noinline]] void limit_ring_by_zones(const PlanContext& ctx, int stage, Link& link) {
  const double sharing = network_sharing(ctx, stage, type_of_node(ctx, ctx.node_of(ctx.stage_first_rank(stage))), true);
  // Each pair of node types bounds it once.
  std::vector<std::pair<int, int>> limited;
  for_each_cross_zone_ring_edge(ctx, stage, [&](int rank_a, int rank_b) {
    const std::pair<int, int> types{ctx.key.node_order[ctx.node_of(rank_a)], ctx.key.node_order[ctx.node_of(rank_b)]};
    if (std::find(limited.begin(), limited.end(), types) != limited.end()) return;
    limited.push_back(types);
    limit_by_zones(ctx, ctx.cluster->node_types[types.first], ctx.cluster->node_types[types.second], sharing, link);
  });
}

/// A ring over nodes of two NVLink domains or more (specs/nvlink_domain.h), given its network
/// link from `node`: inside a domain its edges are NVLink, and NCCL spreads its channels'
/// crossings between domains over all the NICs of the domain, as it spreads a DGX node's over
/// the node's NICs. So it runs at the slower of a GPU's NVLink and the domain's network (the
/// link's share of one node's NICs, times the domain's nodes).
Link across_domains(const PlanContext& ctx, int node, Link link) {
  link.bits_per_s *= ctx.domain_nodes[ctx.node_domain[node]];
  const Link nvlink = nvlink_of(type_of_node(ctx, node));
  if (nvlink.bits_per_s * nvlink.collective.bus_share < link.bits_per_s * link.collective.bus_share) {
    link.bits_per_s = nvlink.bits_per_s;
    link.collective = nvlink.collective;
  }
  return link;
}

/// The slowest link of a data-parallel ring of stage `stage`: its first and last rank meet every
/// kind of link its ranks use (across zones, limit_ring_by_zones finds the slowest edge). A
/// network link's bandwidth is scaled by `network_scale` (expert rings share it otherwise).
Link ring_link(const PlanContext& ctx, int stage, double network_scale) {
  const int first = ctx.stage_rank(stage, 0, 0), last = last_rank(ctx, stage);
  const int first_node = ctx.node_of(first), last_node = ctx.node_of(last);
  Link link = link_between(ctx, stage, first, last, true);
  // A stage's ranks sit on consecutive nodes; each of its rings visits every one of them.
  link.ring_nodes = last_node - first_node + 1;
  link.intra_node_latency_s = type_of_node(ctx, first_node).intra_node_latency_s;
  if (ctx.multi_zone && link.ring_nodes > 1) limit_ring_by_zones(ctx, stage, link);
  if (link.ring_nodes > 1 && !ctx.same_nvlink_domain(first_node, last_node)) {
    link.bits_per_s *= network_scale;
    if (!ctx.node_domain.empty() && ctx.domain_nodes[ctx.node_domain[first_node]] > 1)
      link = across_domains(ctx, first_node, link);
  }
  return link;
}

/// The link of stage `stage`'s dense data-parallel rings.
Link dp_link(const PlanContext& ctx, int stage) { return ring_link(ctx, stage, 1); }

/// The link of stage `stage`'s expert-data-parallel rings: they run one per GPU of an expert
/// group on each node, so they share its network min(GPUs a node, ep x etp) ways where the
/// dense rings share it tp ways (inside an NVLink domain each GPU sends on its own ports).
Link expert_dp_link(const PlanContext& ctx, int stage) {
  const double gpn = type_of_node(ctx, ctx.node_of(first_rank(ctx, stage))).gpus_per_node;
  const double dense_sharing = std::min<double>(ctx.stage_tp(stage), gpn);
  return ring_link(ctx, stage, dense_sharing / std::min<double>(gpn, ctx.key.ep * ctx.key.etp));
}

/// A ring all-reduce of `bytes` over `dp` ranks on `link`; a reduce-scatter or all-gather is
/// half of it.
double ring_s(const Link& link, int dp, double bytes) {
  return link.collective.ring_allreduce_s(bytes, dp, link.ring_step_latency_s(dp), link.bits_per_s);
}

const GpuSpec& stage_gpu(const PlanContext& ctx, int stage) {
  return ctx.cluster->node_types[ctx.stage_node_type[stage]].gpu_data;
}

double total(const std::vector<double>& values) {
  double sum = 0;
  for (double v : values) sum += v;
  return sum;
}

/// Stage `stage`'s span of a per-unit prefix sum (`prefix[u]`: units [0, u)) under `partition`.
double stage_span(const std::vector<double>& prefix, const std::vector<int>& partition, int stage) {
  int first = 0;
  for (int s = 0; s < stage; ++s) first += partition[s];
  return prefix[first + partition[stage]] - prefix[first];
}

}  // namespace

double stage_expert_params(const PlanContext& ctx, const std::vector<int>& partition, int stage) {
  const std::vector<double>& prefix = ctx.partition_memory->expert_params_prefix;
  return prefix.empty() ? 0 : stage_span(prefix, partition, stage);
}

double stage_params(const PlanContext& ctx, const std::vector<int>& partition, int stage) {
  return stage_span(ctx.partition_memory->stage_params_prefix(stage), partition, stage);
}

double boundary_send_bytes(const PlanContext& ctx, int from, int to) {
  // A pipeline micro-batch crosses the boundary; the side with fewer replicas moves the
  // larger share per rank.
  const PlanKey& key = ctx.key;
  const int replicas = std::min(ctx.stage_dp(from), ctx.stage_dp(to));
  // Megatron's scatter/gather of p2p tensors: each of tp lanes sends 1/tp of the activation and
  // the receiving group all-gathers it on its node. Where the two stages' tp differ, every rank
  // of the receiving stage needs the whole activation: lanes t < min(tp) pair up, each carries
  // 1/min(tp) of it, and the side with more ranks scatters or gathers the rest on its node
  // (not priced, as the gather of equal tp is not). Equal tp gives Megatron's 1/tp.
  const int lanes = std::min(ctx.stage_tp(from), ctx.stage_tp(to));
  // Context parallelism: each of a replica's cp GPUs sends its 1/cp of the sequence.
  return activation_message_bytes(*ctx.model, double(key.mbs) * key.dp / replicas, lanes) / key.cp;
}

double activation_message_bytes(const ModelSpec& model, double samples, int lanes) {
  return samples * model.sequence * model.hidden * element_bytes(model) / lanes;
}

bool syncs_tied_embedding(const ModelSpec& model, int pp) {
  return model.tied_embeddings && pp > 1 &&
         std::any_of(model.units.begin(), model.units.end(), [](const LayerUnit& u) { return u.role == LayerRole::kPostProcess; });
}

double shared_head_params(const ModelSpec& model, int pp, int tp) {
  if (!model.tied_embeddings || pp != 1) return 0;
  return double(padded_vocab_shard(model.vocab, tp, kMegatronVocabMultiple)) * model.hidden;
}

double one_stage_params(const ModelSpec& model, int tp) {
  double params = -shared_head_params(model, 1, tp);
  for (const LayerUnit& unit : model.units) params += unit_params(model, unit, tp);
  return params;
}

double unit_params(const ModelSpec& model, const LayerUnit& unit, int tp) {
  // The vocabulary as Megatron pads it (a multiple of 128 x tp rows), split over tp.
  const double h = model.hidden, f = model.ffn_hidden, vocab_rows = double(padded_vocab_shard(model.vocab, tp, kMegatronVocabMultiple)),
               kv_share = double(model.kv_heads) / model.heads;
  const double norm = model.norm == Norm::kLayerNorm ? 2 * h : h;  // replicated on every tp rank
  switch (unit.role) {
    case LayerRole::kEmbedding:
      return h * vocab_rows;
    case LayerRole::kPostProcess:
      // The head (a copy of the embedding when tied) and final norm; each MTP module its own
      // embedding, two norms, eh_proj (2h x h) and layer, and its final norm.
      return h * vocab_rows + norm +
             model.mtp_layers * (h * vocab_rows + 3 * norm + 2 * h * h / tp + unit_params(model, model.mtp_transformer_unit(), tp));
    case LayerRole::kTransformer: {
      const bool gated = is_gated(model.activation);
      if (model.mla.enabled()) {
        // Multi-head latent attention: tp splits the up-projections and the output projection;
        // every rank holds the down-projections and the latents' norms whole (mla_spec.h).
        const double norm_per_width = model.norm == Norm::kLayerNorm ? 2 : 1;
        const double latent = mla_down_params(model.mla, h) + mla_norm_params(model.mla, norm_per_width);
        const double split = mla_split_params(model.mla, h, model.heads);
        if (!unit.moe) return (split + mlp_matrices(gated) * h * f) / tp + latent + 2 * norm;
        const double shared = mlp_matrices(gated) * h * model.moe.shared_expert_ffn_hidden;
        return (split + shared) / tp + latent + 2 * norm + model.moe.experts * h;
      }
      double attention = h * (model.query_width() + 2 * model.kv_width()) + model.query_width() * h;
      if (unit.cross_attention) attention += 2 * h * h + 2 * h * h * kv_share;
      if (!unit.moe) return (attention + mlp_matrices(gated) * h * f) / tp + 2 * norm;
      // The router is replicated on every tp rank; the shared expert splits as a dense MLP.
      const double shared = mlp_matrices(gated) * h * model.moe.shared_expert_ffn_hidden;
      return (attention + shared) / tp + 2 * norm + model.moe.experts * h;
    }
  }
  return 0;
}

double unit_expert_params(const ModelSpec& model, const LayerUnit& unit, int ep, int etp) {
  // The MTP modules' layers (with the post-process unit) are MoE where the model's last layer is.
  const int layers = unit.moe ? 1
                     : unit.role == LayerRole::kPostProcess && model.mtp_layers > 0 && model.mtp_transformer_unit().moe
                         ? model.mtp_layers
                         : 0;
  return layers == 0 ? 0 : layers * local_expert_params(model.moe, model.hidden, is_gated(model.activation), ep, etp);
}

int expert_data_parallel(const PlanKey& key) { return key.tp * key.cp * key.dp / (key.ep * key.etp); }

double AnalyticPolicy::bytes_per_param(int zero_stage, int dp, const std::string& dtype, bool bf16_gradients) {
  return static_bytes_per_param(TrainingStack::kMegatron, dtype, bf16_gradients, zero_stage, dp);
}

double AnalyticPolicy::bytes_per_param(int zero_stage, int dp, const ModelSpec& model) {
  return bytes_per_param(zero_stage, dp, model.dtype, model.grad_reduce_in_bf16);
}

double AnalyticPolicy::gradient_bytes(const std::string& dtype, bool bf16_gradients) {
  // Megatron-LM reduces gradients in the training precision for fp16 (its grad buffer is
  // params_dtype unless --accumulate-allreduce-grads-in-fp32) and in fp32 for bf16 unless
  // --grad-reduce-in-bf16 (then in bf16, as Megatron-Bridge's perf recipes run).
  return dtype == "fp16" || (bf16_gradients && has_bf16_gradients(dtype)) ? 2 : 4;
}

double AnalyticPolicy::gradient_bytes(const ModelSpec& model) {
  return gradient_bytes(model.dtype, model.grad_reduce_in_bf16);
}

std::vector<int> AnalyticPolicy::stage_node_types(const PlanContext& ctx) const {
  std::vector<int> types;
  // Each type's whole-model time, summed once (a stage spans many nodes of few types).
  std::vector<double> whole_s(ctx.unit_compute_s.size(), -1);
  auto whole = [&](int type) { return whole_s[type] < 0 ? whole_s[type] = total(ctx.unit_compute_s[type]) : whole_s[type]; };
  for (int s = 0; s < ctx.pp(); ++s) {
    int slowest = -1;
    for (int node = ctx.node_of(first_rank(ctx, s)), last = ctx.node_of(last_rank(ctx, s)); node <= last; ++node) {
      int type = ctx.key.node_order[node];
      if (slowest < 0 || whole(type) > whole(slowest)) slowest = type;
    }
    types.push_back(slowest);
  }
  return types;
}

std::vector<double> AnalyticPolicy::boundary_send_s(const PlanContext& ctx) const {
  const PlanKey& key = ctx.key;
  std::vector<double> sends;
  for (int b = 0; b + 1 < key.pp; ++b) {
    const int replicas = std::min(ctx.stage_dp(b), ctx.stage_dp(b + 1));
    const int lanes = std::min(ctx.stage_tp(b), ctx.stage_tp(b + 1));  // see boundary_send_bytes
    const double bytes = boundary_send_bytes(ctx, b, b + 1);
    double slowest = 0;
    // A pair's link depends only on whether its ranks share a node and on the two nodes' types:
    // each such kind is timed once (hundreds of replicas across zones meet a few kinds).
    std::vector<std::tuple<bool, int, int>> timed;
    auto time_pair = [&](int d, int t) {
      const int rank_a = ctx.stage_rank(b, d, t), rank_b = ctx.stage_rank(b + 1, d, t);
      const int node_a = ctx.node_of(rank_a), node_b = ctx.node_of(rank_b);
      const std::tuple<bool, int, int> kind{node_a == node_b, key.node_order[node_a], key.node_order[node_b]};
      if (std::find(timed.begin(), timed.end(), kind) == timed.end()) {
        timed.push_back(kind);
        slowest = std::max(slowest, link_between(ctx, b, rank_a, rank_b).seconds(bytes));
      }
      // The pairs after it on the same two nodes are of its kind: how many follow in rank order.
      return std::min(ctx.node_end_rank(node_a) - rank_a, ctx.node_end_rank(node_b) - rank_b);
    };
    if (!ctx.multi_zone) {
      // The corner ranks of the stages meet every kind of link their ranks use.
      for (int d = 0; d < replicas; d += std::max(1, replicas - 1))
        for (int t = 0; t < lanes; t += std::max(1, lanes - 1)) time_pair(d, t);
    } else {
      // Across zones any pair may cross between two zones: every run of pairs on the same two
      // nodes is tried. Pairs follow each other rank by rank within a replica, and across
      // replicas too where both stages' replicas are `lanes` ranks apart.
      const bool contiguous = key.cp * ctx.stage_tp(b) == lanes && key.cp * ctx.stage_tp(b + 1) == lanes;
      for (long pair = 0; pair < long(replicas) * lanes;) {
        const int d = int(pair / lanes), t = int(pair % lanes);
        const int run = time_pair(d, t);
        pair += contiguous ? run : std::min(run, lanes - t);
      }
    }
    sends.push_back(slowest);
  }
  return sends;
}

double AnalyticPolicy::gradient_bucket_params(int dp, double bucket_params) {
  return bucket_params > 0 ? bucket_params : std::max(40e6, 1e6 * dp);
}

int AnalyticPolicy::gradient_buckets(double params, int dp, double bucket_params) {
  return std::max(1, static_cast<int>(std::ceil(params / gradient_bucket_params(dp, bucket_params))));
}

double AnalyticPolicy::optimizer_step_s(const GpuSpec& gpu, const std::string& dtype, double local_params) {
  const double bandwidth = gpu.memory_bandwidth_bytes_per_s * gpu.efficiency(dtype).memory_share;
  return bandwidth > 0 ? kOptimizerBytesPerParam * local_params / bandwidth : 0;
}

double AnalyticPolicy::bucketed_exposed_s(int buckets, double bucket_s, double window_s, double slack_s) {
  if (buckets <= 0 || bucket_s <= 0) return 0;
  // Bucket i is ready at W (i + 1) / K and the stream is free after the ones before it, so the
  // last ends at max over i of W (i + 1) / K + (K - i) c: linear in i, at i = 0 or K - 1.
  const double k = buckets;
  const double exposed = std::max(bucket_s, k * bucket_s - window_s * (k - 1) / k);
  return std::max(0.0, exposed - slack_s);
}

namespace {

/// What selective recomputation adds to a backward pass, for a forward pass of `forward_s`:
/// attention's core (QK^T, softmax, x V) again, its share of the layer's FLOPs, s / (6h + s).
double selective_recompute_s(const ModelSpec& model, double forward_s) {
  const double s_len = model.sequence, h = model.hidden;
  return forward_s * s_len / (6 * h + s_len);
}

}  // namespace

double recomputed_gemm_share(const ModelSpec& model, const ActivationMode& mode) {
  return mode.op_selective ? op_selective_gemm_share(model) : recomputed_gemm_share(model, mode.selective);
}

double recompute_time_factor(const ModelSpec& model, const ActivationMode& mode) {
  // time_passes's passes for a compute of 1.
  if (mode.full_recompute) return 4.0 / 3;
  const double core = mode.selective & kRecomputeCoreAttn ? selective_recompute_s(model, 1.0 / 3) : 0;
  return 1 + core + recomputed_gemm_share(model, mode) / 3;
}

namespace {

/// What selective recomputation's element-wise modules add to stage `s`'s backward pass (units
/// [first, first + count) on node type `type`, whose compute takes `compute`).
double recomputed_elementwise_s(const PlanContext& ctx, int s, int type, int first, int count, double compute) {
  if (size_t(type) >= ctx.unit_recompute_s.size() || ctx.unit_recompute_s[type].empty()) return 0;
  const double seconds = stage_compute_s(ctx.unit_recompute_s[type], first, count);
  if (!ctx.splits_stage(s)) return seconds;
  // A speed-split stage's slowest replica runs a share of the micro-batch: its recomputation
  // scales with its compute.
  const double whole = stage_compute_s(ctx.unit_compute_s[type], first, count);
  return whole > 0 ? seconds * compute / whole : 0;
}

}  // namespace

void AnalyticPolicy::time_passes(const PlanContext& ctx, double compute, StageTiming& timing) {
  const PlanKey& key = ctx.key;
  timing.forward_s = compute / 3;
  timing.backward_s = 2 * compute / 3 + (key.recompute ? compute / 3 : 0);
  if (ctx.recomputes_core_attention) timing.backward_s += selective_recompute_s(*ctx.model, compute / 3);
  timing.backward_s += ctx.recomputed_gemm_share * compute / 3;  // 0 without module recomputation
}

double AnalyticPolicy::pass_time_factor(const PlanContext& ctx) const {
  StageTiming unit;
  time_passes(ctx, 1.0, unit);
  // time_passes of a real stage rounds differently from this x its compute: a floor keeps a
  // margin far above that rounding.
  return (unit.forward_s + unit.backward_s) * (1 - 1e-12);
}

void AnalyticPolicy::time_stage(const PlanContext& ctx, const std::vector<int>& partition, int s, int first,
                                StageTiming& timing, StagePassParts& parts) const {
  const PlanKey& key = ctx.key;
  const int type = ctx.stage_node_type[s], count = partition[s];
  // A speed-split stage takes its slowest replica's time for its share of the micro-batch.
  const StageSplit split = ctx.splits_stage(s) ? split_stage(ctx, s, first, count) : StageSplit{};
  const double compute = ctx.splits_stage(s) ? split.split.time_s : stage_compute_s(ctx.unit_compute_s[type], first, count);
  time_passes(ctx, compute, timing);
  // The communication in the units' times, in the same share of the passes (a recomputed
  // forward repeats its collectives; recomputed norms and activations do not).
  const double passes = timing.forward_s + timing.backward_s;
  const bool comm_known = size_t(type) < ctx.unit_layer_comm_s.size() && !ctx.unit_layer_comm_s[type].empty();
  const double layer_comm = ctx.splits_stage(s) ? split.layer_comm_s
                            : comm_known        ? stage_compute_s(ctx.unit_layer_comm_s[type], first, count)
                                                : 0;
  parts.layer_comm_s = compute > 0 ? layer_comm * passes / compute : 0;
  const double recomputed = recomputed_elementwise_s(ctx, s, type, first, count, compute);
  timing.backward_s += recomputed;
  parts.compute_s = passes + recomputed - parts.layer_comm_s;
  parts.gather_s = parts.overlap_s = 0;
  const int dp = ctx.stage_grad_ranks(s);
  // A MoE stage's routed experts are sharded over their own expert-data-parallel group
  // (Megatron-FSDP's expert FSDP group, tp x cp x dp / (ep x etp) GPUs).
  const std::vector<double>& expert_prefix = ctx.partition_memory->expert_params_prefix;
  const bool experts = !expert_prefix.empty() && expert_prefix[first + count] > expert_prefix[first];
  const int edp = experts ? expert_data_parallel(key) : 1;
  if (key.zero_stage == 3 && (dp > 1 || edp > 1) && !fsdp_once_a_step(options_.memory, key)) {
    // FSDP: every unit's 16-bit parameters are gathered before its forward and its backward,
    // its gradients reduce-scattered after its backward, each a unit ahead of the compute:
    // the first unit's collectives wait, the rest hide under the pass as far as it lasts.
    const Link link = dp_link(ctx, s), expert_link = expert_dp_link(ctx, s);
    const std::vector<double>& prefix = ctx.partition_memory->stage_params_prefix(s);
    const double param_bytes = element_bytes(*ctx.model), grad_bytes = gradient_bytes(*ctx.model);
    // Every unit's ring is affine in its bytes: the units' sum is theirs in one go.
    const CollectiveEfficiency::RingTerms ring =
        link.collective.ring_allreduce_terms(dp, link.ring_step_latency_s(dp), link.bits_per_s);
    const CollectiveEfficiency::RingTerms expert_ring = expert_link.collective.ring_allreduce_terms(
        edp, expert_link.ring_step_latency_s(edp), expert_link.bits_per_s);
    auto params_of_unit = [&](int u) { return prefix[u + 1] - prefix[u]; };
    auto experts_of_unit = [&](int u) { return experts ? expert_prefix[u + 1] - expert_prefix[u] : 0.0; };
    int expert_units = 0;  // the units whose experts' ring runs (MoE layers)
    for (int u = first; u < first + count; ++u) expert_units += experts_of_unit(u) > 0;
    // Half a ring: a gather or a reduce-scatter of `bytes` per element, over the span's units.
    auto span_s = [&](double bytes) {
      double t = 0;
      if (dp > 1) t += count * ring.fixed_s + ring.per_byte_s * bytes * (prefix[first + count] - prefix[first]);
      if (edp > 1)
        t += expert_units * expert_ring.fixed_s +
             expert_ring.per_byte_s * bytes * (expert_prefix[first + count] - expert_prefix[first]);
      return t / 2;
    };
    auto unit_s = [&](int u, double bytes) {
      return ((dp > 1 ? ring_s(link, dp, bytes * params_of_unit(u)) : 0) +
              (edp > 1 && experts_of_unit(u) > 0 ? ring_s(expert_link, edp, bytes * experts_of_unit(u)) : 0)) / 2;
    };
    const double gathers = span_s(param_bytes), reduces = span_s(grad_bytes);
    const double first_gather = unit_s(first, param_bytes), first_reduce = unit_s(first, grad_bytes);
    const double last_gather = unit_s(first + count - 1, param_bytes);
    const double slowdown = stage_gpu(ctx, s).overlap_slowdown;
    auto overlap = [&](double comm, double lead, double pass_s, double& pass) {
      const double exposed = options_.execution.zero3_prefetch ? std::max(lead, comm - pass_s) : comm;
      const double cost = slowdown * (comm - exposed);
      pass += exposed + cost;
      parts.gather_s += exposed;
      parts.overlap_s += cost;
    };
    // Forward: units first to last; backward: last to first, the first unit's reduce-scatter last.
    overlap(gathers, first_gather, timing.forward_s, timing.forward_s);
    overlap(gathers + reduces, count == 1 ? gathers + reduces : last_gather + first_reduce, timing.backward_s,
            timing.backward_s);
  }
  if (s + 1 < key.pp) timing.forward_send_s = ctx.boundary_send_s[s];
  if (s > 0) timing.backward_send_s = ctx.boundary_send_s[s - 1];
}

std::vector<StageTiming> AnalyticPolicy::stage_timings(const PlanContext& ctx, const std::vector<int>& partition) const {
  std::vector<StageTiming> stages(ctx.pp());
  StagePassParts parts;
  for (int s = 0, first = 0; s < ctx.pp(); first += partition[s], ++s) time_stage(ctx, partition, s, first, stages[s], parts);
  return stages;
}

std::vector<StagePassParts> AnalyticPolicy::pass_parts(const PlanContext& ctx, const std::vector<int>& partition) const {
  std::vector<StagePassParts> parts(ctx.pp());
  StageTiming timing;
  for (int s = 0, first = 0; s < ctx.pp(); first += partition[s], ++s) time_stage(ctx, partition, s, first, timing, parts[s]);
  return parts;
}

PipelineResult AnalyticPolicy::pipeline(const PlanContext& ctx, const std::vector<StageTiming>& stages) const {
  // v virtual stages a rank (the header's formulas)
  const int v = ctx.key.virtual_stages, pp = static_cast<int>(stages.size()), microbatches = ctx.num_microbatches;
  if (v <= 1 || pp == 1) return simulate_1f1b(stages, microbatches);
  // Interleaved 1F1B (Narayanan et al. 2021, section 2.2.2): each rank runs v chunks of its
  // share, so the fill and drain take (pp - 1) / v of a micro-batch's time on a rank, and each
  // micro-batch crosses v boundaries a rank instead of one. Every rank ends together.
  double total = 0;
  if (options_.execution.overlap_p2p_communication) {
    // Sends run beside the compute; only the fill and drain wait for them, crossing every
    // boundary once each way.
    double steady = 0, slowest = 0, fill_sends = 0;
    for (const StageTiming& t : stages) {
      const double work = t.forward_s + t.backward_s, sends = t.forward_send_s + t.backward_send_s;
      steady = std::max({steady, work, v * sends});
      slowest = std::max(slowest, work);
      fill_sends += sends;
    }
    total = microbatches * steady + double(pp - 1) / v * slowest + fill_sends;
  } else {
    double slowest = 0;
    for (const StageTiming& t : stages)
      slowest = std::max(slowest, t.forward_s + t.backward_s + v * (t.forward_send_s + t.backward_send_s));
    total = (microbatches + double(pp - 1) / v) * slowest;
  }
  return {total, std::vector<double>(pp, total)};
}

std::vector<StageSync> AnalyticPolicy::stage_syncs(const PlanContext& ctx, const std::vector<int>& partition,
                                                   const std::vector<StageTiming>* given) const {
  const PlanKey& key = ctx.key;
  const ModelSpec& model = *ctx.model;
  std::vector<StageTiming> computed;
  const bool fsdp_once = fsdp_once_a_step(options_.memory, key);
  if (!given && (options_.execution.overlap_grad_reduce || options_.execution.overlap_param_gather || fsdp_once))
    computed = stage_timings(ctx, partition);
  const std::vector<StageTiming>& timings = given ? *given : computed;
  const bool sharded = key.zero_stage == 1 || key.zero_stage == 2;  // the distributed optimizer
  std::vector<StageSync> syncs(key.pp);
  double slack = 0;  // the pipeline's fill before stage s's first forward
  for (int s = 0; s < key.pp; ++s) {
    StageSync& sync = syncs[s];
    const double params = stage_params(ctx, partition, s);
    // Dense weights are replicated over cp x dp GPUs; a MoE stage's routed experts over the
    // expert-data-parallel GPUs (tp x cp x dp / (ep x etp)).
    const int dp = ctx.stage_grad_ranks(s);
    const double experts = stage_expert_params(ctx, partition, s);
    const int edp = experts > 0 ? expert_data_parallel(key) : 1;
    const GpuSpec& gpu = stage_gpu(ctx, s);
    // Adam on the GPU's own parameters: its shard with ZeRO, else all of the stage's.
    const double local = key.zero_stage >= 1 ? params / dp + experts / edp : params + experts;
    sync.optimizer_s = optimizer_step_s(gpu, model.dtype, local);
    if ((dp > 1 || edp > 1) && (key.zero_stage < 3 || fsdp_once)) {
      const Link link = dp_link(ctx, s);
      const double slowdown = gpu.overlap_slowdown;
      // Megatron buckets only to overlap; without it one bucket holds every gradient. FSDP once
      // a step (fsdp_gathers.h) gathers each unit ahead of the stage's first forward and
      // reduce-scatters it behind its last backward: a unit a bucket, always overlapped.
      const bool bucketed = options_.execution.overlap_grad_reduce || options_.execution.overlap_param_gather;
      sync.buckets = fsdp_once  ? std::max(1, partition[s])
                     : bucketed ? gradient_buckets(params + experts, dp, options_.execution.ddp_bucket_size)
                                : 1;
      const double bucket = params / sync.buckets, expert_bucket = experts / sync.buckets;
      const Link expert_link = experts > 0 ? expert_dp_link(ctx, s) : link;
      const bool shards = sharded || fsdp_once;
      // ZeRO 0: all-reduce of the gradients; ZeRO 1-3: reduce-scatter, half the ring.
      const double reduce = (ring_s(link, dp, gradient_bytes(model) * bucket) +
                             (experts > 0 ? ring_s(expert_link, edp, gradient_bytes(model) * expert_bucket) : 0)) *
                            (shards ? 0.5 : 1.0);
      sync.reduce_s = sync.buckets * reduce;
      sync.reduce_exposed_s = options_.execution.overlap_grad_reduce || fsdp_once
                                  ? bucketed_exposed_s(sync.buckets, reduce, timings[s].backward_s)
                                  : sync.reduce_s;
      sync.reduce_overlap_s = slowdown * (sync.reduce_s - sync.reduce_exposed_s);
      if (shards) {
        // The updated 16-bit parameters, all-gathered: half a ring.
        const double gather = (ring_s(link, dp, element_bytes(model) * bucket) +
                               (experts > 0 ? ring_s(expert_link, edp, element_bytes(model) * expert_bucket) : 0)) / 2;
        sync.gather_s = sync.buckets * gather;
        sync.gather_exposed_s = options_.execution.overlap_param_gather || fsdp_once
                                    ? bucketed_exposed_s(sync.buckets, gather, timings[s].forward_s, slack)
                                    : sync.gather_s;
        sync.gather_overlap_s = slowdown * (sync.gather_s - sync.gather_exposed_s);
      }
    }
    if (!timings.empty()) slack += timings[s].forward_s + timings[s].forward_send_s;
  }
  return syncs;
}

std::vector<double> AnalyticPolicy::dp_allreduce_s(const PlanContext& ctx, const std::vector<int>& partition,
                                                   const std::vector<StageTiming>* given) const {
  std::vector<double> costs;
  for (const StageSync& sync : stage_syncs(ctx, partition, given)) costs.push_back(sync.after_pipeline_s());
  return costs;
}

std::vector<double> AnalyticPolicy::after_sync_s(const PlanContext& ctx, const std::vector<int>& partition,
                                                 const std::vector<StageTiming>* given) const {
  std::vector<double> costs;
  for (const StageSync& sync : stage_syncs(ctx, partition, given)) costs.push_back(sync.after_sync_s());
  return costs;
}

void AnalyticPolicy::sync_s(const PlanContext& ctx, const std::vector<int>& partition,
                            const std::vector<StageTiming>* timings, std::vector<double>* dp_allreduce,
                            std::vector<double>* after_sync) const {
  dp_allreduce->clear();
  after_sync->clear();
  for (const StageSync& sync : stage_syncs(ctx, partition, timings)) {
    dp_allreduce->push_back(sync.after_pipeline_s());
    after_sync->push_back(sync.after_sync_s());
  }
}

StepBreakdown AnalyticPolicy::step_breakdown(const PlanContext& ctx, const std::vector<int>& partition,
                                     const std::vector<int>& timed_partition, const StepResult& step) const {
  StepBreakdown terms = CostPolicy::step_breakdown(ctx, partition, timed_partition, step);
  const int bottleneck = step.bottleneck_stage, after_sync = step.after_sync_stage, microbatches = ctx.num_microbatches;
  const StagePassParts parts = pass_parts(ctx, timed_partition)[bottleneck];
  const std::vector<StageSync> syncs =
      stage_syncs(ctx, partition, partition == timed_partition ? &step.timings : nullptr);
  terms.compute_s = microbatches * parts.compute_s;
  terms.layer_comm_s = microbatches * parts.layer_comm_s;
  terms.dp_comm_s = microbatches * parts.gather_s + syncs[bottleneck].reduce_exposed_s + syncs[after_sync].gather_exposed_s;
  terms.overlap_cost_s =
      microbatches * parts.overlap_s + syncs[bottleneck].reduce_overlap_s + syncs[after_sync].gather_overlap_s;
  terms.optimizer_s = syncs[after_sync].optimizer_s;
  // The bubble and the sends stay the base's: the silent schedule's end less the stage's passes.
  return terms;
}

double AnalyticPolicy::step_time_lower_bound(const PlanContext& ctx, const std::vector<int>& partition) const {
  if (ctx.key.virtual_stages <= 1 || ctx.pp() == 1) return CostPolicy::step_time_lower_bound(ctx, partition);
  std::vector<StageTiming> timings = stage_timings(ctx, partition);
  std::vector<double> dp, after;
  sync_s(ctx, partition, &timings, &dp, &after);
  return pipeline(ctx, timings).pipeline_s + dp[0] + embedding_allreduce_s(ctx) + after[0];
}

double AnalyticPolicy::embedding_allreduce_s(const PlanContext& ctx) const {
  const ModelSpec& model = *ctx.model;
  const PlanKey& key = ctx.key;
  if (!syncs_tied_embedding(model, key.pp)) return 0;
  // Two ranks (first and last stage) all-reduce the fp32 embedding gradient: one exchange. With
  // different tp on the two, lanes t < min(tp) exchange 1/min(tp) each (as boundary_send_bytes).
  const int lanes = std::min(ctx.stage_tp(0), ctx.stage_tp(key.pp - 1));
  const double bytes = 4.0 * model.hidden * model.vocab / lanes;
  double seconds = link_between(ctx, 0, ctx.stage_rank(0, 0, 0), ctx.stage_rank(key.pp - 1, 0, 0)).seconds(bytes);
  // Across zones every replica's and lane's pair exchanges at once: the slowest ends it.
  if (ctx.multi_zone)
    for (int d = 0; d < std::min(ctx.stage_dp(0), ctx.stage_dp(key.pp - 1)); ++d)
      for (int t = 0; t < lanes; ++t)
        seconds = std::max(seconds, link_between(ctx, 0, ctx.stage_rank(0, d, t), ctx.stage_rank(key.pp - 1, d, t)).seconds(bytes));
  return seconds;
}

double AnalyticPolicy::egress_usd_per_step(const PlanContext& ctx, const std::vector<int>& partition) const {
  return fasop::egress_usd_per_step(ctx, partition);
}

}  // namespace fasop
