#pragma once
#include <vector>

#include "specs/cluster_spec.h"
#include "specs/model_spec.h"
#include "specs/plan.h"

namespace fasop {

/// Bounds of the layouts the search tries.
struct SearchSpaceOptions {
  int max_tp = 4;  ///< FASOP: tp divides min(GPUs per node, 4)
};

/// The node orders FASOP tries: the distinct cyclic rotations of the cluster's node list.
std::vector<std::vector<int>> cyclic_placements(const ClusterSpec& cluster);

/// Every layout FASOP tries, in FASOP's enumeration order: for each placement, for each
/// micro-batch size (ascending), each tp (ascending) and dp (ascending) such that tp divides
/// min(GPUs per node, max_tp), dp divides the GPUs / tp and the global batch, pp = GPUs/(tp*dp)
/// is at most the number of transformer layers, and mbs divides the global batch / dp.
std::vector<PlanKey> enumerate_plan_keys(const ModelSpec& model, const ClusterSpec& cluster,
                                         const SearchSpaceOptions& options = {});

}  // namespace fasop
