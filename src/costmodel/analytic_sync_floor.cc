#include "costmodel/analytic_sync_floor.h"

#include <algorithm>

#include "costmodel/fsdp_gathers.h"
#include "specs/link.h"
#include "specs/precision.h"

namespace fasop {

LinkFloorLimits link_floor_limits(const ClusterSpec& inventory) {
  LinkFloorLimits limits{1e300, 1 << 30};
  for (const NodeType& type : inventory.node_types) {
    limits.least_latency_s = std::min({limits.least_latency_s, type.intra_node_latency_s, type.inter_node_latency_s});
    limits.fewest_gpus_per_node = std::min(limits.fewest_gpus_per_node, type.gpus_per_node);
  }
  if (inventory.node_types.empty()) limits = {0, 1};
  return limits;
}

namespace {

/// The least of `ring_s(link)` over the links a stage's data-parallel ring on
/// type `type` may use: its network, shared by at least min(tp, tp dp, the fewest GPUs a node)
/// rings, or where the stage fits in a node (or the type has NVLink domains) possibly NVLink. A
/// ring time only grows with the latency and falls with the bandwidth; zones only lower the
/// bandwidth.
template <typename RingTime>
double least_over_links(const NodeType& type, const LinkFloorLimits& limits, int tp, int dp, RingTime ring_s) {
  const int sharing = std::max(1, std::min({tp, tp * dp, limits.fewest_gpus_per_node}));
  double least = ring_s(network_of(type, sharing));
  // A ring inside a node or an NVLink domain runs on NVLink; one across domains no faster.
  if (tp * dp <= type.nvlink_gpus() || type.nvlink_domain_nodes > 1) least = std::min(least, ring_s(nvlink_of(type)));
  return least;
}

/// A floor under a ring all-reduce of `bytes` over the dp ranks of a stage on type `type`, at
/// the least latency.
double ring_floor_s(const NodeType& type, const LinkFloorLimits& limits, int tp, int dp, double bytes) {
  return least_over_links(type, limits, tp, dp, [&](const Link& link) {
    return link.collective.ring_allreduce_s(bytes, dp, limits.least_latency_s, link.bits_per_s);
  });
}

/// Its bandwidth part alone (no latency, the link's plateau share), at most what the ring takes.
double ring_stream_floor_s(const NodeType& type, const LinkFloorLimits& limits, int tp, int dp, double bytes) {
  return least_over_links(type, limits, tp, dp, [&](const Link& link) {
    return link.collective.ring_allreduce_terms(dp, 0, link.bits_per_s).per_byte_s * bytes;
  });
}

}  // namespace

SyncFloorParts sync_floor_parts(const ModelSpec& model, const AnalyticOptions& options, const NodeType& type,
                                const LinkFloorLimits& limits, int tp, int dp, int zero_stage, double params) {
  SyncFloorParts parts;
  parts.optimizer_s = AnalyticPolicy::optimizer_step_s(type.gpu_data, model.dtype, zero_stage >= 1 ? params / dp : params);
  if (dp <= 1) return parts;
  const double gradient = AnalyticPolicy::gradient_bytes(model), element = activation_bytes(model.dtype);
  auto ring = [&](double bytes) { return ring_floor_s(type, limits, tp, dp, bytes); };
  if (zero_stage == 3) {
    // Every unit's gathers twice and its reduce-scatter once a micro-batch (half rings each);
    // ring times add up to at least the ring of the sum (each has its own latency). Where the
    // stack may run them once a step instead (fsdp_gathers.h), nothing a micro-batch.
    if (fsdp_may_run_once_a_step(options.memory)) return parts;
    parts.zero3_pass_s = ring(element * params) + ring(gradient * params) / 2;
    parts.zero3_stream_s = ring_stream_floor_s(type, limits, tp, dp, element * params) +
                           ring_stream_floor_s(type, limits, tp, dp, gradient * params) / 2;
    return parts;
  }
  // A stage of P parameters has K = ceil(P / cap) buckets where bucketing (or one of P): each of
  // at least min(P, cap / 2); K buckets' rings take at least the ring of their sum.
  const bool bucketed = options.execution.overlap_grad_reduce || options.execution.overlap_param_gather;
  const double cap = AnalyticPolicy::gradient_bucket_params(dp, options.execution.ddp_bucket_size);
  const double bucket = bucketed ? std::min(params, cap / 2) : params;
  const bool sharded = zero_stage == 1 || zero_stage == 2;
  const double half = sharded ? 0.5 : 1.0;
  parts.reduce_total_s = ring(gradient * params) * half;
  parts.reduce_bucket_s = ring(gradient * bucket) * half;
  if (sharded) {
    parts.gather_total_s = ring(element * params) / 2;
    parts.gather_bucket_s = ring(element * bucket) / 2;
  }
  return parts;
}

std::vector<double> send_floor_s_by_types(const ModelSpec& model, const ClusterSpec& inventory,
                                          const LinkFloorLimits& limits, int tp, int dp, int mbs) {
  const size_t types = inventory.node_types.size();
  const double bytes = activation_message_bytes(model, mbs, tp);
  const long long stage = 1LL * tp * dp;
  // Per type: the fastest link its ranks send on (link_between: the network shared by the
  // stage's GPUs on the node, the zones' only slower; or the node's NVLink where rank r and
  // rank r + tp dp may share a node).
  std::vector<double> fastest(types, 0);
  for (size_t t = 0; t < types; ++t) {
    const NodeType& type = inventory.node_types[t];
    fastest[t] = network_of(type, double(std::min<long long>(type.gpus_per_node, stage))).bits_per_s;
    if (stage < type.nvlink_gpus()) fastest[t] = std::max(fastest[t], nvlink_of(type).bits_per_s);
  }
  std::vector<double> floors(size_t(1) << types, 0);
  for (size_t mask = 1; mask < floors.size(); ++mask) {
    double bits_per_s = 0;
    for (size_t t = 0; t < types; ++t)
      if (mask >> t & 1u) bits_per_s = std::max(bits_per_s, fastest[t]);
    if (bits_per_s > 0) floors[mask] = limits.least_latency_s + 8 * bytes / bits_per_s;
  }
  return floors;
}

double exposed_sync_floor_s(const SyncFloorParts& parts, const AnalyticOptions& options, int zero_stage,
                            double backward_window_s, double forward_window_s) {
  if (zero_stage == 3) return parts.optimizer_s;
  // bucketed_exposed_s: max(c, K c - W (K - 1) / K) >= max(c, K c - W).
  const double reduce = options.execution.overlap_grad_reduce
                            ? std::max(parts.reduce_bucket_s, parts.reduce_total_s - backward_window_s)
                            : parts.reduce_total_s;
  const double gather = options.execution.overlap_param_gather
                            ? std::max(parts.gather_bucket_s, parts.gather_total_s - forward_window_s)
                            : parts.gather_total_s;
  return reduce + gather + parts.optimizer_s;
}

}  // namespace fasop
