#pragma once
// Which node runs what when a plan is launched: the nodes in the plan's rank order, their
// GPUs and first ranks, the Slurm heterogeneous-job component of each (one per node type), and
// every rank's coordinates (stage, data-parallel replica, context- and tensor-parallel lanes).
#include <string>
#include <vector>

#include "specs/cluster_spec.h"
#include "specs/plan_file.h"

namespace fasop {

/// One node of a launch.
struct LaunchNode {
  int node_rank = 0;           ///< position in the plan's node order
  std::string node_type;       ///< its node type's name
  int gpus = 0;                ///< GPUs (ranks) it runs
  int first_rank = 0;          ///< the global rank of its first GPU
  int component = 0;           ///< heterogeneous-job component (one per node type)
  int index_in_component = 0;  ///< its place among its component's nodes
};

/// A heterogeneous-job component: the nodes of one node type.
struct LaunchComponent {
  std::string node_type;
  int node_type_index = 0;  ///< in the cluster
  int nodes = 0;
};

/// The nodes and components of a plan's launch.
struct LaunchLayout {
  std::vector<LaunchNode> nodes;            ///< by node rank
  std::vector<LaunchComponent> components;  ///< in order of first appearance: node rank 0's first
  int world_size = 0;                       ///< GPUs in all
};

/// The launch of `plan` on `cluster` (the node types the plan names; throws SpecError when one
/// is missing). Component 0 holds node rank 0, so its first node is the rendezvous master.
LaunchLayout make_launch_layout(const PlanFile& plan, const ClusterSpec& cluster);

/// Where one rank sits in the plan.
struct RankCoordinates {
  int rank = 0;
  int stage = 0;
  int dp_index = 0;
  int cp_index = 0;  ///< its context-parallel lane: which chunks of each sequence (0 without cp)
  int tp_index = 0;
};

/// The stage, replica and lanes of global rank `rank`: stages take contiguous ranks, tp x cp x
/// the stage's dp each, the tensor-parallel lane fastest, then the context-parallel one
/// (Megatron-LM's tp-cp-ep-dp-pp order; DeepSpeed's, without cp).
RankCoordinates coordinates_of_rank(const PlanFile& plan, int rank);

}  // namespace fasop
