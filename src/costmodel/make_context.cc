#include "costmodel/make_context.h"

#include <algorithm>
#include <string>

#include "costmodel/parallel_dims_checks.h"
#include "costmodel/speed_split_checks.h"
#include "costmodel/speed_split_stage.h"
#include "costmodel/stage_tp_checks.h"
#include "costmodel/activation_memory.h"
#include "costmodel/analytic_policy.h"
#include "costmodel/floor_facts.h"
#include "profiles/op_selective_recompute.h"
#include "profiles/recomputed_elementwise.h"
#include "profiles/recomputed_flops.h"
#include "specs/batch_split.h"
#include "specs/spec_error.h"

namespace fasop {
namespace {

std::string str(int v) { return std::to_string(v); }

}  // namespace

namespace {

/// The checks of per-stage data parallelism (PlanKey::stage_dp).
void validate_stage_dp(const ModelSpec& model, const ClusterSpec& cluster, const PlanKey& key) {
  if (static_cast<int>(key.stage_dp.size()) != key.pp)
    throw SpecError("--stage-dp: gives " + str(int(key.stage_dp.size())) + " stages' dp but pp is " + str(key.pp));
  int gpus = 0, largest = 0;
  for (int d : key.stage_dp) {
    if (d <= 0) throw SpecError("--stage-dp: every stage needs at least one replica");
    gpus += key.tp * d;
    largest = std::max(largest, d);
  }
  if (largest != key.dp) throw SpecError("--dp: with per-stage dp, dp is the largest stage's: " + str(largest));
  for (int d : key.stage_dp) {
    if ((key.mbs * key.dp) % d != 0 && !key.uneven_dp)
      throw SpecError("--stage-dp: a stage of " + str(d) + " replicas cannot split the pipeline's micro-batch of " +
                      str(key.mbs * key.dp) + " samples (mbs x dp); pass --uneven-dp to let its replicas take unequal shares");
  }
  // With per-stage tp, validate_stage_tp_degrees counts the GPUs.
  if (key.stage_tp.empty() && gpus != cluster.num_gpus())
    throw SpecError("--stage-dp: the stages take " + str(gpus) + " GPUs (tp x each stage's dp) but cluster '" +
                    cluster.name + "' has " + str(cluster.num_gpus()));
  (void)model;
}

/// The global batch against dp and mbs (batch_split_allowed), and where they fail, why.
void validate_batch_split(const ModelSpec& model, const PlanKey& key) {
  if (batch_split_allowed(model.global_batch, key.mbs, key.dp, key.uneven_dp)) return;
  if (key.uneven_dp) {
    const int largest_share = (model.global_batch + key.dp - 1) / key.dp;
    if (key.dp > model.global_batch)
      throw SpecError("--dp: " + str(key.dp) + " replicas but the global batch " + str(model.global_batch) +
                      " of model '" + model.name + "' gives some none; choose at most " + str(model.global_batch));
    if (key.mbs > largest_share)
      throw SpecError("--mbs: " + str(key.mbs) + " is more than the largest replica's share " + str(largest_share) +
                      " (global batch / dp, rounded up)");
    return;
  }
  if (model.global_batch % key.dp != 0)
    throw SpecError("--dp: " + str(key.dp) + " does not divide the global batch " + str(model.global_batch) +
                    " of model '" + model.name + "'; pass --uneven-dp to let replicas take unequal shares");
  if ((model.global_batch / key.dp) % key.mbs != 0)
    throw SpecError("--mbs: " + str(key.mbs) + " does not divide the per-replica batch " +
                    str(model.global_batch / key.dp) + " (global batch / dp); pass --uneven-dp to let replicas take "
                    "unequal shares");
}

}  // namespace

void validate_plan_key(const ModelSpec& model, const ClusterSpec& cluster, const PlanKey& key) {
  for (auto [name, value] : {std::pair{"mbs", key.mbs}, {"tp", key.tp}, {"dp", key.dp}, {"pp", key.pp}})
    if (value <= 0) throw SpecError(std::string("--") + name + ": must be positive, got " + str(value));
  validate_parallel_dims(model, cluster, key);
  if (!key.stage_dp.empty()) validate_stage_dp(model, cluster, key);
  if (!key.stage_tp.empty())
    validate_stage_tp_degrees(model, cluster, key);
  else if (key.stage_dp.empty() && key.num_gpus() != cluster.num_gpus())
    throw SpecError(std::string(key.cp > 1 ? "--tp/--cp/--dp/--pp: tp * cp * dp * pp = " : "--tp/--dp/--pp: tp * dp * pp = ") +
                    std::to_string(key.num_gpus()) + " but cluster '" + cluster.name + "' has " +
                    str(cluster.num_gpus()) + " GPUs; choose degrees whose product is " + str(cluster.num_gpus()));
  validate_batch_split(model, key);
  if (key.pp > model.num_units())
    throw SpecError("--pp: " + str(key.pp) + " stages but model '" + model.name + "' has only " +
                    str(model.num_units()) + " pipeline units");
  if (model.heads % key.tp != 0 || model.kv_heads % key.tp != 0)
    throw SpecError("--tp: " + str(key.tp) + " does not divide model '" + model.name + "''s " + str(model.heads) +
                    " attention heads and " + str(model.kv_heads) + " key/value heads; tensor parallelism splits "
                    "whole heads: choose a tp that divides both");
  if (key.zero_stage < 0 || key.zero_stage > 3)
    throw SpecError("--zero: ZeRO stage " + str(key.zero_stage) + " does not exist; use 0, 1, 2 or 3");
  if (key.recomputed_modules())
    if (const std::string fault = recompute_modules_fault(model, key.recompute_modules); !fault.empty())
      throw SpecError("--recompute-modules: " + fault);
  if (key.virtual_stages < 1)
    throw SpecError("virtual pipeline stages: " + str(key.virtual_stages) + "; use 1 (plain 1F1B) or more");
  if (key.virtual_stages > 1) {
    // Megatron-LM's interleaved schedule: v model chunks on each of pp ranks (any split of the
    // layers, empty chunks included, as its layout places them), and whole rounds of pp
    // micro-batches.
    const int micro_batches = slowest_replica_microbatches(model.global_batch, key);
    if (key.pp == 1)
      throw SpecError("virtual pipeline stages " + str(key.virtual_stages) +
                      ": the interleaved schedule needs pp > 1; use 1 virtual stage or more pipeline stages");
    if (micro_batches % key.pp != 0)
      throw SpecError("virtual pipeline stages " + str(key.virtual_stages) + ": the interleaved schedule needs the " +
                      str(micro_batches) + " micro-batches a step to be a multiple of pp " + str(key.pp));
  }
  if (static_cast<int>(key.node_order.size()) != cluster.num_nodes())
    throw SpecError("--placement: names " + str(int(key.node_order.size())) + " nodes but cluster '" +
                    cluster.name + "' has " + str(cluster.num_nodes()));
  for (size_t t = 0; t < cluster.node_types.size(); ++t) {
    int placed = 0;
    for (int n : key.node_order) placed += n == int(t);
    if (placed != cluster.node_count(int(t)))
      throw SpecError("--placement: places " + str(placed) + " '" + cluster.node_types[t].name +
                      "' nodes but cluster '" + cluster.name + "' has " +
                      str(cluster.node_count(int(t))));
  }
  if (!key.stage_tp.empty()) validate_stage_tp_nodes(cluster, key);
  validate_speed_split_nodes(cluster, key);
}

PartitionFault find_partition_fault(const ModelSpec& model, int pp, const std::vector<int>& partition) {
  if (static_cast<int>(partition.size()) != pp) return {PartitionFault::kStageCount};
  int total = 0;
  for (int s = 0; s < pp; ++s) {
    if (partition[s] <= 0) return {PartitionFault::kEmptyStage, s};
    total += partition[s];
  }
  if (total != model.num_units()) return {PartitionFault::kUnitCount, 0, total};
  // Segments are contiguous: a stage stays inside one iff its first and last unit share it.
  for (int s = 0, first = 0; pp > 1 && s < pp; first += partition[s], ++s) {
    int last = first + partition[s] - 1;
    if (model.units[first].segment == model.units[last].segment) continue;
    int next = first;
    while (model.units[next].segment == model.units[first].segment) ++next;
    return {PartitionFault::kSpansSegments, s, next};
  }
  return {};
}

void validate_partition(const ModelSpec& model, const PlanKey& key, const std::vector<int>& partition) {
  PartitionFault fault = find_partition_fault(model, key.pp, partition);
  switch (fault.kind) {
    case PartitionFault::kNone:
      return;
    case PartitionFault::kStageCount:
      throw SpecError("--partition: has " + str(int(partition.size())) + " stages but pp is " + str(key.pp));
    case PartitionFault::kEmptyStage:
      throw SpecError("--partition: stage " + str(fault.stage) + " has no unit; every stage needs at least one");
    case PartitionFault::kUnitCount:
      throw SpecError("--partition: places " + str(fault.unit) + " units but model '" + model.name + "' has " +
                      str(model.num_units()));
    case PartitionFault::kSpansSegments:
      throw SpecError("--partition: stage " + str(fault.stage) + " holds units of both the " +
                      model.units[fault.unit - 1].segment + " and the " + model.units[fault.unit].segment +
                      "; end a stage at unit " + str(fault.unit));
  }
}

PlanContext make_rank_context(const ModelSpec& model, const ClusterSpec& cluster, const CostPolicy& policy,
                              const PlanKey& key) {
  if (!key.stage_tp.empty() && policy.name() == "fasop")
    throw SpecError("--stage-tp: the fasop policy prices one tp on every stage; use --policy analytic");
  validate_speed_split_policy(key.speed_split, policy.name());
  validate_parallel_dims_policy(model, key, policy.name());
  PlanContext ctx = rank_layout_context(cluster, key);
  ctx.model = &model;
  ctx.num_microbatches = slowest_replica_microbatches(model.global_batch, key);
  const FloorFacts facts = policy.floor_facts();
  if (facts.analytic) ctx.stack_settings = facts.analytic->memory;
  const ActivationMode mode = activation_mode(key, ctx.stack_settings);
  ctx.recomputed_gemm_share = recomputed_gemm_share(model, mode);
  ctx.recomputes_core_attention = (mode.selective & kRecomputeCoreAttn) != 0;
  return ctx;
}

void add_memory_model(PlanContext& ctx, const CostPolicy& policy) { ctx.partition_memory = policy.memory_model(ctx); }

PlanContext make_layout_context(const ModelSpec& model, const ClusterSpec& cluster, const CostPolicy& policy,
                                const PlanKey& key) {
  PlanContext ctx = make_rank_context(model, cluster, policy, key);
  add_memory_model(ctx, policy);
  return ctx;
}

namespace {

/// ctx.unit_recompute_s: each placed node type's units' recomputed element-wise work, timed at
/// the type's tp and micro-batch (runs of one layer type timed once).
void add_recomputed_elementwise(PlanContext& ctx, const std::vector<int>& type_tp, const std::vector<int>& type_mbs) {
  const ActivationMode mode = activation_mode(ctx.key, ctx.stack_settings);
  const RecomputeModules modules = mode.selective;
  ctx.unit_recompute_s.clear();
  if (!recomputes_elementwise(modules) && !mode.op_selective) return;
  const ModelSpec& model = *ctx.model;
  const std::vector<NodeType>& types = ctx.cluster->node_types;
  ctx.unit_recompute_s.resize(types.size());
  for (size_t type = 0; type < types.size(); ++type) {
    const NodeType& node = types[type];
    if (!node.has_gpu_data() || ctx.unit_compute_s[type].empty()) continue;
    LayerOptions options = with_training_stack(split_as({}, ctx.key), ctx.stack_settings);
    options.sequence_parallel = ctx.key.sequence_parallel && type_tp[type] > 1;
    std::vector<double>& seconds = ctx.unit_recompute_s[type];
    for (size_t u = 0; u < model.units.size(); ++u) {
      if (u > 0 && model.units[u].type == model.units[u - 1].type) {
        seconds.push_back(seconds.back());
        continue;
      }
      const PassWork work =
          mode.op_selective
              ? op_selective_elementwise_work(model, model.units[u], type_tp[type], type_mbs[type], options)
              : recomputed_elementwise_work(model, model.units[u], type_tp[type], type_mbs[type], options, modules);
      seconds.push_back(work.memory_bytes > 0 ? pass_time(work, type_tp[type], node, model.dtype, options).seconds : 0);
    }
  }
}

}  // namespace

void add_unit_times(PlanContext& ctx, const NodeTypeProfiles& profiles, const CostPolicy& policy,
                    const UnitTimeTable* unit_times) {
  const ModelSpec& model = *ctx.model;
  const ClusterSpec& cluster = *ctx.cluster;
  const PlanKey& key = ctx.key;
  ctx.unit_compute_s.resize(cluster.node_types.size());
  ctx.unit_layer_comm_s.resize(cluster.node_types.size());
  // With per-stage dp, a node type's stages share one dp (the search never lets a stage straddle
  // two types) and so one micro-batch per GPU; find it from the stage on the type's first node.
  std::vector<int> type_mbs(cluster.node_types.size(), key.mbs);
  for (int s = key.pp - 1; s >= 0 && !key.stage_dp.empty(); --s)
    type_mbs[key.node_order[ctx.node_of(ctx.stage_first_rank(s))]] = ctx.stage_mbs(s);
  // With per-stage tp, a node type's stages share one tp (validate_stage_tp_nodes): its layers,
  // their tp all-reduces included, are timed at it.
  std::vector<int> type_tp(cluster.node_types.size(), key.tp);
  for (int s = 0; s < key.pp && !key.stage_tp.empty(); ++s) {
    const int first = ctx.stage_first_rank(s), last = first + ctx.stage_gpus(s) - 1;
    for (int node = ctx.node_of(first), end = ctx.node_of(last); node <= end; ++node) type_tp[key.node_order[node]] = ctx.stage_tp(s);
  }
  for (size_t type = 0; type < cluster.node_types.size(); ++type) {
    const ProfileSpec* profile = profiles[type];
    // Node types the layout does not place are never consulted.
    if (!profile || std::find(key.node_order.begin(), key.node_order.end(), int(type)) == key.node_order.end())
      continue;
    const int tp = type_tp[type];
    if (const UnitTimes* tabled = unit_times ? unit_times->find(int(type), profile, tp, type_mbs[type]) : nullptr) {
      ctx.unit_compute_s[type] = tabled->compute_s;
      ctx.unit_layer_comm_s[type] = tabled->layer_comm_s;
      continue;
    }
    UnitTimes looked_up = profile_unit_times(model, *profile, tp, type_mbs[type]);
    ctx.unit_compute_s[type] = std::move(looked_up.compute_s);
    ctx.unit_layer_comm_s[type] = std::move(looked_up.layer_comm_s);
  }
  add_recomputed_elementwise(ctx, type_tp, type_mbs);
  ctx.stage_node_type = policy.stage_node_types(ctx);
  add_speed_split_stages(ctx, profiles, type_tp);
}

void add_stage_sends(PlanContext& ctx, const CostPolicy& policy) {
  // A speed-split stage holds its busiest replica's share, known only now; the layout's model
  // (the even share, less memory) served only to rule out layouts that cannot fit even so.
  if (ctx.key.speed_split) add_memory_model(ctx, policy);
  ctx.boundary_send_s = policy.boundary_send_s(ctx);
}

void add_stage_times(PlanContext& ctx, const NodeTypeProfiles& profiles, const CostPolicy& policy,
                     const UnitTimeTable* unit_times) {
  add_unit_times(ctx, profiles, policy, unit_times);
  add_stage_sends(ctx, policy);
}

PlanContext make_plan_context(const ModelSpec& model, const ClusterSpec& cluster,
                              const NodeTypeProfiles& profiles, const CostPolicy& policy,
                              const PlanKey& key, const UnitTimeTable* unit_times) {
  PlanContext ctx = make_layout_context(model, cluster, policy, key);
  add_stage_times(ctx, profiles, policy, unit_times);
  return ctx;
}

}  // namespace fasop
