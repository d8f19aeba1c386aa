#pragma once
// Where a speed split (PlanKey::speed_split, Metis-style) applies: which node type each
// data-parallel replica of each stage sits on, and the one-line SpecErrors where it cannot apply.
#include <string>
#include <vector>

#include "costmodel/plan_context.h"

namespace fasop {

/// Node type of each replica (its tp GPUs) of each stage of `layout` (a context with at least
/// its rank layout: rank_layout_context), in dp order; -1 for a replica whose GPUs sit on nodes
/// of two types. The key is checked before (its degrees use every GPU).
std::vector<std::vector<int>> replica_node_types(const PlanContext& layout);

/// Throws SpecError where a replica of `types` (replica_node_types) has no one node type, as a
/// speed is a node type's.
void require_one_type_per_replica(const std::vector<std::vector<int>>& types);

/// True where some stage's replicas sit on more than one node type, and none straddles two:
/// the layouts a speed split changes (the search adds their speed_split variant).
bool speed_split_applies(const ClusterSpec& cluster, const PlanKey& key);

/// With key.speed_split: every replica on nodes of one type, as a speed is a node type's.
void validate_speed_split_nodes(const ClusterSpec& cluster, const PlanKey& key);

/// With `speed_split`: a policy that can price it (the analytic one; FASOP's runs a stage at
/// one speed).
void validate_speed_split_policy(bool speed_split, const std::string& policy_name);

}  // namespace fasop
