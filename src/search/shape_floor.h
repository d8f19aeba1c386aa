#pragma once
// Floors under every plan of a cluster shape, computed from each node type's work per sample
// without enumerating a layout: the bounded pareto search (bounded_pareto.h) prunes whole boxes
// of shapes with them.
#include <vector>

#include "search/cluster_shapes.h"
#include "search/search.h"

namespace fasop {

/// What bounds the step time and memory of any plan on a shape of an inventory, computed once
/// per search from the profiles (nothing here depends on the shape).
///
/// Work floor. Stage s of a layout has g_s GPUs, runs m micro-batches of the global batch B and
/// takes at least m x its units' compute at its node type t_s, so T >= m x time_s, and
/// g_s x m x time_s >= B x sum over its units of w_t(u), where w_t(u) is the fewest GPU-seconds
/// per sample unit u takes on type t at any tp and micro-batch size. With ref(u) the fewest over
/// every type, w_t(u) >= r_t ref(u), so sum_u ref(u) <= T / B x sum_s g_s / r_(t_s), and
///   T >= B x sum_u ref(u) / sum_s g_s / r_(t_s) >= B x sum_u ref(u) / sum_g c(type of g),
/// where c(type) bounds 1 / r of any stage type a GPU of that type can run at: where the policy
/// runs a stage at the slowest of its ranks' types (by whole-model time), only the types at
/// least as slow; for any other policy, every type of the shape.
/// Path floor. One micro-batch passes every unit forward and backward: T >= sum_u of its
/// fastest time on the shape's types, at the best tp and micro-batch size.
/// Both fall as nodes are added, so a box of shapes is bounded by its largest corner.
class ShapeFloor {
 public:
  /// `input`: the pareto search's input (the inventory as its cluster, a profile per node
  /// type). `stage_type_is_slowest_rank`: the policy runs a stage at the slowest node type of
  /// its own ranks (the analytic policy), which tightens the work floor of mixed shapes.
  /// `check_memory`: may_fit compares the shape's memory with the state's (the memory-aware
  /// policy's plans that do not fit are never admitted).
  ShapeFloor(const SearchInput& input, bool stage_type_is_slowest_rank, bool check_memory);

  /// A floor under the step time of every layout on a shape with `counts` nodes of each type
  /// (infinity for a shape without nodes). Non-increasing in every count.
  double step_floor_s(const NodeCounts& counts) const;
  /// False when the shape's GPUs together hold less memory than the model's weights,
  /// gradients and optimizer state need however they are sharded (the memory-aware policy's
  /// bytes per parameter): no plan on it fits. Non-decreasing in every count.
  bool may_fit(const NodeCounts& counts) const;

 private:
  /// One node type's compute at one (tp, micro-batch size).
  struct TypePoint {
    double ratio = 0;       ///< r: its GPU-seconds per sample over ref, at the least
    double whole_s = 0;     ///< the whole model's time per micro-batch (which stage type is slowest)
    std::vector<double> layer_s;  ///< per distinct layer type, one micro-batch
  };
  /// Per node type, per (tp, mbs) point; empty where its profile lacks the tp.
  std::vector<std::vector<std::vector<TypePoint>>> points_;
  std::vector<int> layer_counts_;  ///< units of each distinct layer type
  size_t tps_ = 0, mbs_ = 0;
  bool slowest_rank_ = false;
  const ClusterSpec* inventory_;
  double batch_ref_s_ = 0;  ///< B x sum_u ref(u)
  double min_state_bytes_ = 0;  ///< 0: no memory check
  /// Per present-type set (a bit mask of node types; where there are few types): the credit of
  /// each type, and the path floor.
  std::vector<std::vector<double>> credit_;
  std::vector<double> path_floor_s_;
  std::vector<double> credits(unsigned mask) const;
  double path_floor_s(unsigned mask) const;
};

}  // namespace fasop
