#pragma once
// A speed split (PlanKey::speed_split) on the stages of one layout: the unit-time tables that
// make_plan_context fills, and a stage's split of one range of units (costmodel/speed_split.h).
#include <vector>

#include "costmodel/plan_context.h"
#include "costmodel/speed_split.h"

namespace fasop {

/// Fills `ctx`'s split tables (PlanContext::split_*) where ctx.key.speed_split, for the stages
/// whose replicas sit on several node types: their units' times at every sample count, looked up
/// like the stage's own (profile_unit_times at the tp `type_tp` gives each node type). Needs
/// ctx's node_of and stage_node_type. Throws SpecError where a replica has no one node type.
void add_speed_split_stages(PlanContext& ctx, const NodeTypeProfiles& profiles, const std::vector<int>& type_tp);

/// A split stage's micro-batch through its units [first, first + count): the split, and the
/// communication inside the units (tp, cp, ep) of the replica that sets its time.
struct StageSplit {
  SpeedSplit split;
  double layer_comm_s = 0;
};
StageSplit split_stage(const PlanContext& ctx, int stage, int first, int count);

}  // namespace fasop
