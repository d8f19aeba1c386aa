#pragma once
#include <string>
#include <vector>

namespace fasop {

/// The parallel layout of a candidate plan, without its layer partition.
struct PlanKey {
  int mbs = 1;  ///< micro-batch size
  int tp = 1;   ///< tensor-parallel degree
  int dp = 1;   ///< data-parallel degree
  int pp = 1;   ///< pipeline stages
  std::vector<int> node_order;  ///< node type of each node, in rank order
  int zero_stage = 0;      ///< ZeRO 0-3: what of optimizer state, gradients, parameters dp shards
  bool recompute = false;  ///< full activation recomputation: keep each layer's input, redo its forward
  /// Metis-style data parallelism per stage (empty: dp on every stage). Stage s then has
  /// stage_dp[s] replicas of tp GPUs; dp is the largest, and a pipeline micro-batch of
  /// mbs x dp samples is split over each stage's replicas (mbs x dp / stage_dp[s] each).
  std::vector<int> stage_dp;
};

/// A candidate plan: its layout and the number of pipeline units on each stage.
struct Plan {
  PlanKey key;
  std::vector<int> partition;
};

}  // namespace fasop
