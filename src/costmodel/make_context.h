#pragma once
#include <vector>

#include "costmodel/cost_policy.h"
#include "costmodel/plan_context.h"
#include "costmodel/unit_times.h"

namespace fasop {

/// Checks a plan layout against the model and cluster; throws SpecError naming the field.
/// Virtual stages need pp > 1 and whole rounds of pp micro-batches; the chunks need not split
/// the layers evenly, as Megatron's --pipeline-model-parallel-layout places any split.
void validate_plan_key(const ModelSpec& model, const ClusterSpec& cluster, const PlanKey& key);

/// What is wrong with a partition, if anything.
struct PartitionFault {
  enum Kind { kNone, kStageCount, kEmptyStage, kUnitCount, kSpansSegments } kind = kNone;
  int stage = 0;  ///< the stage at fault (empty or spanning two segments)
  int unit = 0;   ///< kUnitCount: the units placed; kSpansSegments: the first unit of the next segment
};

/// The partition rules, in one place: pp stages, none empty, every unit placed once, and with
/// more than one stage no stage spanning two segments (encoder and decoder).
PartitionFault find_partition_fault(const ModelSpec& model, int pp, const std::vector<int>& partition);

/// Checks a partition against the layout and the model; throws SpecError naming the field.
void validate_partition(const ModelSpec& model, const PlanKey& key, const std::vector<int>& partition);

/// The part of a layout's context that needs no profile: the key, its rank layout and (for a
/// memory-aware policy) its memory model; enough for some_partition_may_fit to rule a layout
/// out before its unit times are looked up (a speed-split stage's model there counts the even
/// share of its micro-batch, a floor; add_stage_times, which completes the context, counts the
/// busiest replica's).
PlanContext make_layout_context(const ModelSpec& model, const ClusterSpec& cluster, const CostPolicy& policy,
                                const PlanKey& key);

/// Completes a layout context (make_layout_context) with the unit times of its node types,
/// each stage's node type and the sends between stages. `profiles` and `unit_times` as below.
/// The same as add_unit_times, then add_stage_sends.
void add_stage_times(PlanContext& ctx, const NodeTypeProfiles& profiles, const CostPolicy& policy,
                     const UnitTimeTable* unit_times = nullptr);

/// The parts of a layout's context in the order a search rules layouts out, cheapest first:
/// make_rank_context (the key and its rank layout), add_unit_times (each node type's unit
/// times and each stage's node type: enough for compute_floor_s), add_memory_model (with
/// make_rank_context, make_layout_context), add_stage_sends (the sends between stages; a
/// speed-split layout's memory model again, since it needs the unit times).
PlanContext make_rank_context(const ModelSpec& model, const ClusterSpec& cluster, const CostPolicy& policy,
                              const PlanKey& key);
void add_unit_times(PlanContext& ctx, const NodeTypeProfiles& profiles, const CostPolicy& policy,
                    const UnitTimeTable* unit_times = nullptr);
void add_memory_model(PlanContext& ctx, const CostPolicy& policy);
void add_stage_sends(PlanContext& ctx, const CostPolicy& policy);

/// Computes what a layout's cost depends on besides its partition. `profiles` holds one
/// profile per node type (null for node types with no node in the cluster). `unit_times`, if
/// given, holds the profiles' unit times looked up before (a search's), else they are looked up.
PlanContext make_plan_context(const ModelSpec& model, const ClusterSpec& cluster,
                              const NodeTypeProfiles& profiles, const CostPolicy& policy,
                              const PlanKey& key, const UnitTimeTable* unit_times = nullptr);

}  // namespace fasop
