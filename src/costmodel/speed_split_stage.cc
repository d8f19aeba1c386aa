#include "costmodel/speed_split_stage.h"

#include <algorithm>
#include <limits>

#include "costmodel/speed_split_checks.h"
#include "costmodel/unit_times.h"
#include "specs/spec_error.h"

namespace fasop {
namespace {

std::vector<double> prefix_sums(const std::vector<double>& values) {
  std::vector<double> prefix(values.size() + 1, 0);
  for (size_t u = 0; u < values.size(); ++u) prefix[u + 1] = prefix[u] + values[u];
  return prefix;
}

/// Node type `type`'s unit times at 0..`samples` samples (at tp `tp`) into ctx's prefix tables,
/// once per type.
void fill_type_tables(PlanContext& ctx, const ProfileSpec& profile, int type, int tp, int samples) {
  if (!ctx.split_compute_prefix_s[type].empty()) return;
  const size_t units = ctx.model->units.size();
  ctx.split_compute_prefix_s[type].assign(1, std::vector<double>(units + 1, 0));  // no samples, no time
  ctx.split_layer_comm_prefix_s[type].assign(1, std::vector<double>(units + 1, 0));
  for (int n = 1; n <= samples; ++n) {
    const UnitTimes times = profile_unit_times(*ctx.model, profile, tp, n);
    ctx.split_compute_prefix_s[type].push_back(prefix_sums(times.compute_s));
    ctx.split_layer_comm_prefix_s[type].push_back(prefix_sums(times.layer_comm_s));
  }
}

/// Per unit, the least time any of `types` takes on `samples` samples.
std::vector<double> fastest_unit_s(const PlanContext& ctx, const std::vector<int>& types, int samples) {
  std::vector<double> fastest(ctx.model->units.size(), std::numeric_limits<double>::infinity());
  for (int type : types) {
    const std::vector<double>& prefix = ctx.split_compute_prefix_s[type][samples];
    for (size_t u = 0; u < fastest.size(); ++u) fastest[u] = std::min(fastest[u], prefix[u + 1] - prefix[u]);
  }
  return fastest;
}

double range_s(const std::vector<std::vector<double>>& prefix, int samples, int first, int count) {
  return prefix[samples][first + count] - prefix[samples][first];
}

}  // namespace

void add_speed_split_stages(PlanContext& ctx, const NodeTypeProfiles& profiles, const std::vector<int>& type_tp) {
  const PlanKey& key = ctx.key;
  if (!key.speed_split) return;
  const std::vector<std::vector<int>> replicas = replica_node_types(ctx);
  require_one_type_per_replica(replicas);
  const size_t types = ctx.cluster->node_types.size();
  const int samples = key.mbs * key.dp;  // the pipeline micro-batch every stage splits
  ctx.split_replica_types.assign(key.pp, {});
  ctx.split_compute_prefix_s.assign(types, {});
  ctx.split_layer_comm_prefix_s.assign(types, {});
  ctx.split_floor_unit_s.assign(key.pp, {});
  ctx.split_memory_samples.assign(key.pp, 0);
  for (int s = 0; s < key.pp; ++s) {
    const std::vector<int>& stage = replicas[s];
    if (std::all_of(stage.begin(), stage.end(), [&](int t) { return t == stage.front(); })) continue;
    std::vector<int> present;
    for (int type : stage) {
      if (std::find(present.begin(), present.end(), type) != present.end()) continue;
      if (!profiles[type])
        throw SpecError("--speed-split: no profile of node type '" + ctx.cluster->node_types[type].name + "'");
      fill_type_tables(ctx, *profiles[type], type, type_tp[type], samples);
      present.push_back(type);
    }
    ctx.split_replica_types[s] = stage;
    // Some replica takes at least the even share, ceil(samples / replicas), and a unit's time
    // does not fall with more samples: no split runs a unit faster than its fastest type at it.
    ctx.split_floor_unit_s[s] = fastest_unit_s(ctx, present, ctx.stage_mbs(s));
    const SpeedSplit whole = split_stage(ctx, s, 0, ctx.num_units()).split;
    ctx.split_memory_samples[s] = *std::max_element(whole.samples.begin(), whole.samples.end());
  }
}

StageSplit split_stage(const PlanContext& ctx, int stage, int first, int count) {
  const std::vector<int>& types = ctx.split_replica_types[stage];
  const ReplicaTimeS time_s = [&](int r, int n) { return range_s(ctx.split_compute_prefix_s[types[r]], n, first, count); };
  StageSplit result;
  result.split = split_by_speed(int(types.size()), ctx.key.mbs * ctx.key.dp, time_s);
  // The tensor-parallel communication of the first replica whose time is the stage's.
  for (size_t r = 0; r < types.size(); ++r) {
    const int n = result.split.samples[r];
    if (n > 0 && time_s(int(r), n) == result.split.time_s) {
      result.layer_comm_s = range_s(ctx.split_layer_comm_prefix_s[types[r]], n, first, count);
      break;
    }
  }
  return result;
}

}  // namespace fasop
