#pragma once
#include <vector>

#include "costmodel/cost_policy.h"
#include "costmodel/plan_context.h"

namespace fasop {

/// Checks a plan layout against the model and cluster; throws SpecError naming the field.
void validate_plan_key(const ModelSpec& model, const ClusterSpec& cluster, const PlanKey& key);

/// Checks a partition against the layout and the model; throws SpecError naming the field.
void validate_partition(const ModelSpec& model, const PlanKey& key, const std::vector<int>& partition);

/// Computes what a layout's cost depends on besides its partition. `profiles` holds one
/// profile per node type (null for node types with no node in the cluster).
PlanContext make_plan_context(const ModelSpec& model, const ClusterSpec& cluster,
                              const NodeTypeProfiles& profiles, const CostPolicy& policy,
                              const PlanKey& key);

}  // namespace fasop
