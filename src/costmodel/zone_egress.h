#pragma once
// What a training step sends across zone boundaries (ClusterSpec::zones) and what that egress
// costs, under the analytic policy's communication (analytic_policy.h): a pure function of the
// plan. FASOP's policy ignores zones.
#include <algorithm>
#include <string>
#include <vector>

#include "costmodel/plan_context.h"

namespace fasop {

/// Bytes one step sends between two zones, both directions together, and their egress price.
struct ZoneTraffic {
  std::string zone_a;  ///< the pair's zones, zone_a < zone_b
  std::string zone_b;
  double bytes = 0;    ///< bytes a step that leave one of the two zones for the other
  double usd = 0;      ///< bytes x the pair's egress_usd_per_gb / 1e9
};

/// Calls `edge(rank_a, rank_b)` for each edge of stage `stage`'s data-parallel rings whose two
/// ranks are on nodes in different zones. A stage has one ring per tensor-parallel lane over its
/// dp replicas in rank order, closed from the last back to the first: dp edges, each carrying a
/// ring all-reduce's 2(dp - 1)/dp x the bytes one way (none for dp 1).
/// An edge from replica d to d + 1 joins ranks a and a + S (S = cp x tp) and crosses zones only
/// if some node boundary between them does, so only the ranks within S before each boundary
/// where the zone changes are tried (each once), then the closing edges: a few nodes' ranks, not
/// every replica's. The edges come in rank order, not ring by ring.
template <typename Edge>
void for_each_cross_zone_ring_edge(const PlanContext& ctx, int stage, Edge edge) {
  const int dp = ctx.stage_dp(stage);
  if (dp < 2) return;
  const int tp = ctx.stage_tp(stage), stride = ctx.key.cp * tp, first = ctx.stage_first_rank(stage);
  const int last_node = ctx.node_of(first + ctx.stage_gpus(stage) - 1);
  int tried_to = first;  // ranks below it were tried
  for (int node = ctx.node_of(first); node < last_node; ++node) {
    const int boundary = ctx.node_end_rank(node);
    if (ctx.zone_of(boundary - 1) == ctx.zone_of(boundary)) continue;
    for (int a = std::max(tried_to, boundary - stride); a < boundary; ++a) {
      const int replica = (a - first) / stride, lane = (a - first) % stride;
      if (lane < tp && replica + 1 < dp && ctx.zone_of(a) != ctx.zone_of(a + stride)) edge(a, a + stride);
    }
    tried_to = boundary;
  }
  for (int t = 0; t < tp; ++t) {
    const int a = ctx.stage_rank(stage, dp - 1, t), b = ctx.stage_rank(stage, 0, t);
    if (ctx.zone_of(a) != ctx.zone_of(b)) edge(a, b);
  }
}

/// Bytes a step sends one way over each edge of a stage's data-parallel ring of `dp` ranks, a
/// GPU of which holds `params` parameters, at ZeRO stage `zero_stage` with `microbatches` a
/// step (as zone_traffic counts them below); `fsdp_once`: ZeRO 3's collectives run once a step
/// (fsdp_gathers.h).
double ring_edge_bytes(const ModelSpec& model, int zero_stage, int dp, int microbatches, double params,
                       bool fsdp_once = false);

/// The bytes one step of the plan with `partition` sends across zone boundaries, by zone pair
/// (sorted; only pairs with traffic), each pair priced at its link's egress_usd_per_gb:
/// - pipeline sends: each micro-batch's activations forward and their gradients backward across
///   every stage boundary (with v virtual stages v times, and v - 1 times from the last stage
///   back to the first), from replica d, tensor-parallel lane t of one stage to the same of the
///   next: mbs x dp / r x sequence x hidden x activation bytes / tp each, r = the fewer
///   replicas of the two stages (AnalyticPolicy::boundary_send_s), m micro-batches a step;
/// - data-parallel rings (for_each_cross_zone_ring_edge): each edge between zones carries, of
///   the P parameters a GPU of the stage holds, 2(d-1)/d x P x gradient bytes (ZeRO 0's
///   all-reduce), (d-1)/d x P x (gradient + 16-bit parameter bytes) (ZeRO 1-2: reduce-scatter,
///   then all-gather), or m x (d-1)/d x P x (2 x parameter + gradient bytes) (ZeRO 3: two
///   gathers and a reduce-scatter every micro-batch);
/// - tied embeddings: replica d, lane t of the first and of the last stage exchange the fp32
///   embedding gradient (4 x hidden x vocab / tp bytes each way).
/// Empty on a cluster in one zone (PlanContext::multi_zone false).
std::vector<ZoneTraffic> zone_traffic(const PlanContext& ctx, const std::vector<int>& partition);

/// USD a step pays for egress: the sum of zone_traffic's usd (0 on a cluster in one zone).
double egress_usd_per_step(const PlanContext& ctx, const std::vector<int>& partition);

}  // namespace fasop
