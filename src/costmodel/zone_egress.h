#pragma once
// What a training step sends across zone boundaries (ClusterSpec::zones) and what that egress
// costs, under the analytic policy's communication (analytic_policy.h): a pure function of the
// plan. FASOP's policy ignores zones.
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

/// The zone of the node that holds `rank`.
inline const std::string& zone_of_rank(const PlanContext& ctx, int rank) {
  return ctx.cluster->node_types[ctx.key.node_order[ctx.node_of(rank)]].zone;
}

/// Calls `edge(rank_a, rank_b)` for each edge of stage `stage`'s data-parallel rings whose two
/// ranks are on nodes in different zones. A stage has one ring per tensor-parallel lane over its
/// dp replicas in rank order, closed from the last back to the first: dp edges, each carrying a
/// ring all-reduce's 2(dp - 1)/dp x the bytes one way (none for dp 1).
template <typename Edge>
void for_each_cross_zone_ring_edge(const PlanContext& ctx, int stage, Edge edge) {
  const int dp = ctx.stage_dp(stage);
  if (dp < 2) return;
  for (int t = 0; t < ctx.stage_tp(stage); ++t)
    for (int d = 0; d < dp; ++d) {
      const int a = ctx.stage_rank(stage, d, t), b = ctx.stage_rank(stage, (d + 1) % dp, t);
      if (zone_of_rank(ctx, a) != zone_of_rank(ctx, b)) edge(a, b);
    }
}

/// Bytes a step sends one way over each edge of a stage's data-parallel ring of `dp` ranks, a
/// GPU of which holds `params` parameters, at ZeRO stage `zero_stage` with `microbatches` a
/// step (as zone_traffic counts them below).
double ring_edge_bytes(const ModelSpec& model, int zero_stage, int dp, int microbatches, double params);

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
