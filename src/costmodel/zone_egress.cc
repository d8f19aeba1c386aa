#include "costmodel/zone_egress.h"

#include <algorithm>
#include <map>
#include <utility>

#include "costmodel/analytic_policy.h"
#include "costmodel/fsdp_gathers.h"
#include "specs/precision.h"

namespace fasop {
namespace {

/// Bytes by zone pair, as PlanContext::type_zone numbers zones (in name order): [a][b] with a < b.
class PairBytes {
 public:
  explicit PairBytes(const PlanContext& ctx)
      : zones_(count_zones(ctx)), bytes_(zones_ * zones_, 0.0), added_(zones_ * zones_, false) {}
  void add(int a, int b, double bytes) {
    const int at = std::min(a, b) * zones_ + std::max(a, b);
    bytes_[at] += bytes;
    added_[at] = true;
  }
  int zones() const { return zones_; }
  double at(int a, int b) const { return bytes_[a * zones_ + b]; }
  bool added(int a, int b) const { return added_[a * zones_ + b]; }

 private:
  static int count_zones(const PlanContext& ctx) {
    return ctx.type_zone.empty() ? 0 : *std::max_element(ctx.type_zone.begin(), ctx.type_zone.end()) + 1;
  }
  int zones_;
  std::vector<double> bytes_;
  std::vector<bool> added_;
};

/// The name of zone `zone` (a node type's of that number).
const std::string& zone_name(const PlanContext& ctx, int zone) {
  const auto type = std::find(ctx.type_zone.begin(), ctx.type_zone.end(), zone) - ctx.type_zone.begin();
  return ctx.cluster->node_types[type].zone;
}

/// Pairs of ranks, replica d and lane t of stage `from` and of stage `to` for d < the fewer
/// replicas of the two and t < the smaller tp, that sit in different zones: `bytes` each for each pair.
void add_rank_pairs(const PlanContext& ctx, int from, int to, double bytes, PairBytes& traffic) {
  const int replicas = std::min(ctx.stage_dp(from), ctx.stage_dp(to));
  const int lanes = std::min(ctx.stage_tp(from), ctx.stage_tp(to));  // as boundary_send_bytes pairs them
  for (int d = 0; d < replicas; ++d)
    for (int t = 0; t < lanes; ++t) {
      const int a = ctx.zone_of(ctx.stage_rank(from, d, t)), b = ctx.zone_of(ctx.stage_rank(to, d, t));
      if (a != b) traffic.add(a, b, bytes);
    }
}

}  // namespace

std::vector<ZoneTraffic> zone_traffic(const PlanContext& ctx, const std::vector<int>& partition) {
  if (!ctx.multi_zone) return {};
  const ModelSpec& model = *ctx.model;
  const PlanKey& k = ctx.key;
  const int pp = k.pp, v = k.virtual_stages, m = ctx.num_microbatches;
  PairBytes traffic(ctx);

  // Pipeline sends: activations forward and gradients backward, every micro-batch.
  for (int b = 0; b < pp; ++b) {
    const int next = (b + 1) % pp, crossings = b + 1 < pp ? v : v - 1;  // the wrap only with interleaving
    if (crossings <= 0 || next == b) continue;
    add_rank_pairs(ctx, b, next, 2.0 * m * crossings * boundary_send_bytes(ctx, b, next), traffic);
  }

  // Data-parallel rings, on each stage's parameters.
  for (int s = 0; s < pp; ++s) {
    if (ctx.stage_dp(s) < 2) continue;
    const double per_edge = ring_edge_bytes(model, k.zero_stage, ctx.stage_dp(s), m, stage_params(ctx, partition, s),
                                            fsdp_once_a_step(ctx.stack_settings, k));
    for_each_cross_zone_ring_edge(ctx, s, [&](int a, int b) { traffic.add(ctx.zone_of(a), ctx.zone_of(b), per_edge); });
  }

  // The tied embedding's all-reduce between the first and the last stage: each sends its share.
  if (syncs_tied_embedding(model, pp))
    add_rank_pairs(ctx, 0, pp - 1, 2 * 4.0 * model.hidden * model.vocab / std::min(ctx.stage_tp(0), ctx.stage_tp(pp - 1)),
                   traffic);

  // The pairs that some rank pair crosses, in name order.
  std::vector<ZoneTraffic> out;
  for (int a = 0; a < traffic.zones(); ++a)
    for (int b = a + 1; b < traffic.zones(); ++b) {
      if (!traffic.added(a, b)) continue;
      const double bytes = traffic.at(a, b);
      const std::string &first = zone_name(ctx, a), &second = zone_name(ctx, b);
      const ZoneLink& link = ctx.cluster->zones.link(first, second);
      out.push_back({first, second, bytes, bytes * link.egress_usd_per_gb / 1e9});
    }
  return out;
}

double ring_edge_bytes(const ModelSpec& model, int zero_stage, int dp, int microbatches, double params,
                       bool fsdp_once) {
  const double element = activation_bytes(model.dtype), gradient = AnalyticPolicy::gradient_bytes(model);
  const double d = dp, m = microbatches;
  if (zero_stage == 0) return 2 * (d - 1) / d * params * gradient;
  // ZeRO 1-2, and FSDP once a step: a reduce-scatter of the gradients, a gather of the weights.
  if (zero_stage < 3 || fsdp_once) return (d - 1) / d * params * (gradient + element);
  return m * (d - 1) / d * params * (2 * element + gradient);
}

double egress_usd_per_step(const PlanContext& ctx, const std::vector<int>& partition) {
  double usd = 0;
  for (const ZoneTraffic& t : zone_traffic(ctx, partition)) usd += t.usd;
  return usd;
}

}  // namespace fasop
