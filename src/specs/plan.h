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
};

/// A candidate plan: its layout and the number of pipeline units on each stage.
struct Plan {
  PlanKey key;
  std::vector<int> partition;
};

}  // namespace fasop
