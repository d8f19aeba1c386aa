#pragma once
// A shape search answers within its inventory: where the plans it keeps use every node of a
// type the inventory holds, more of them might do better, and the answer says so.
#include <string>
#include <vector>

#include "search/search.h"
#include "specs/cluster_spec.h"

namespace fasop {

/// For each node type of which some kept plan uses all `limits` nodes: a line naming the type,
/// the plans (numbered from 1 as printed) and the --max-nodes that doubles it; "" when none does.
std::string inventory_ceiling_lines(const ClusterSpec& inventory, const std::vector<int>& limits,
                                    const std::vector<CandidateResult>& kept);

}  // namespace fasop
