#include "costmodel/egress_floor.h"

#include <algorithm>
#include <limits>

#include "costmodel/analytic_policy.h"
#include "costmodel/fsdp_gathers.h"
#include "costmodel/zone_egress.h"
#include "specs/batch_split.h"

namespace fasop {
namespace {

/// The ranks of a layout as runs in one zone: run k starts at start[k] and is in zone zone[k];
/// neighbouring runs differ in zone.
struct ZoneRuns {
  std::vector<long long> start;
  std::vector<int> zone;
  long long ranks = 0;
  int zone_at(long long rank) const {
    size_t k = std::upper_bound(start.begin(), start.end(), rank) - start.begin();
    return zone[k - 1];
  }
};

ZoneRuns zone_runs(const ClusterSpec& cluster, const std::vector<int>& zone_of_type, const std::vector<int>& node_order) {
  ZoneRuns runs;
  for (int type : node_order) {
    const int zone = zone_of_type[type];
    if (runs.zone.empty() || runs.zone.back() != zone) {
      runs.start.push_back(runs.ranks);
      runs.zone.push_back(zone);
    }
    runs.ranks += cluster.node_types[type].gpus_per_node;
  }
  return runs;
}

/// Sum over ranks r in [lo, hi) of price(zone of r, zone of r + shift): the ranks that send to
/// the rank `shift` on, priced by the pair of zones they cross (0 within a zone).
template <typename Price>
double crossing_pairs(const ZoneRuns& runs, long long lo, long long hi, long long shift, Price price) {
  std::vector<long long> cuts{lo, hi};
  for (long long s : runs.start)
    for (long long c : {s, s - shift})
      if (c > lo && c < hi) cuts.push_back(c);
  std::sort(cuts.begin(), cuts.end());
  double total = 0;
  for (size_t i = 0; i + 1 < cuts.size(); ++i)
    if (cuts[i + 1] > cuts[i]) total += (cuts[i + 1] - cuts[i]) * price(runs.zone_at(cuts[i]), runs.zone_at(cuts[i] + shift));
  return total;
}

}  // namespace

EgressFloor::EgressFloor(const ModelSpec& model, const ClusterSpec& cluster, const MemorySettings& memory)
    : model_(&model), cluster_(&cluster), memory_(memory) {
  const std::vector<std::string> zones = cluster.zone_names();
  for (const NodeType& t : cluster.node_types)
    zone_of_type_.push_back(int(std::find(zones.begin(), zones.end(), t.zone) - zones.begin()));
  usd_per_byte_.assign(zones.size(), std::vector<double>(zones.size(), 0));
  if (zones.size() > 1)
    for (size_t a = 0; a < zones.size(); ++a)
      for (size_t b = 0; b < zones.size(); ++b)
        if (a != b) usd_per_byte_[a][b] = cluster.zones.link(zones[a], zones[b]).egress_usd_per_gb / 1e9;
  int largest_node = 1;
  for (const NodeType& t : cluster.node_types) largest_node = std::max(largest_node, t.gpus_per_node);
  params_per_gpu_.assign(largest_node + 1, 0);
  for (int tp = 1; tp <= largest_node; ++tp)
    for (const LayerUnit& unit : model.units) params_per_gpu_[tp] += unit_params(model, unit, tp);
}

double EgressFloor::usd_per_step(const PlanKey& key) const {
  if (usd_per_byte_.size() < 2 || !key.stage_dp.empty() || !key.stage_tp.empty()) return 0;
  // Context parallelism widens a stage to tp x cp x dp ranks and expert parallelism reduces the
  // experts' gradients over fewer replicas: the counts below assume neither, so no floor.
  if (key.cp > 1 || key.ep > 1) return 0;
  const ZoneRuns runs = zone_runs(*cluster_, zone_of_type_, key.node_order);
  if (runs.zone.size() < 2) return 0;
  auto price = [&](int a, int b) { return usd_per_byte_[a][b]; };
  const ModelSpec& model = *model_;
  const long long tp = key.tp, dp = key.dp, pp = key.pp, stage = tp * dp;
  const int m = slowest_replica_microbatches(model.global_batch, key);
  double usd = 0;
  // Pipeline sends: rank r of stage b pairs with rank r + tp dp of stage b + 1, each pair
  // carrying its micro-batches' activations forward and their gradients back, v times.
  const double send_bytes = activation_message_bytes(model, key.mbs, key.tp);
  usd += 2.0 * m * key.virtual_stages * send_bytes * crossing_pairs(runs, 0, (pp - 1) * stage, stage, price);
  // The tied embedding: rank r of the first stage and rank r of the last exchange its gradient.
  if (syncs_tied_embedding(model, key.pp))
    usd += 2 * 4.0 * model.hidden * model.vocab / tp * crossing_pairs(runs, 0, stage, (pp - 1) * stage, price);
  // Data-parallel rings: with runs that start on replica boundaries, every lane of a stage
  // crosses the same edges; a stage across zones crosses at least two a lane.
  if (dp < 2 || tp >= long(params_per_gpu_.size()) ||
      std::any_of(runs.start.begin(), runs.start.end(), [&](long long s) { return s % tp != 0; }))
    return usd;
  long long least_edges = std::numeric_limits<long long>::max();
  for (long long s = 0; s < pp && least_edges > 0; ++s) {
    const long long first = s * stage, end = first + stage;
    long long edges = std::count_if(runs.start.begin(), runs.start.end(), [&](long long r) { return r > first && r < end; });
    if (runs.zone_at(first) != runs.zone_at(end - 1)) ++edges;  // the ring closes from the last replica to the first
    least_edges = std::min(least_edges, edges);
  }
  if (least_edges == 0) return usd;
  double cheapest = std::numeric_limits<double>::infinity();
  for (int a : runs.zone)
    for (int b : runs.zone)
      if (a != b) cheapest = std::min(cheapest, price(a, b));
  // On one stage a tied head is the embedding's weight, reduced once.
  const double params = params_per_gpu_[tp] - shared_head_params(model, key.pp, key.tp);
  return usd + least_edges * tp * ring_edge_bytes(model, key.zero_stage, key.dp, m, params, fsdp_once_a_step(memory_, key)) *
                   cheapest;
}

}  // namespace fasop
