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
/// Per configuration. Where every layout has one tp and one micro-batch size (no per-stage
/// degrees, uneven dp or speed split), the work and path floors also hold with ref and the
/// ratios taken at the layout's own (tp, mbs), and a layout's floor is at least the least of
/// those over the configurations some layout of the shape can run. Where plans must fit in
/// memory, a configuration needs a pipeline whose stages can hold every transformer layer: stage
/// s of pp holds min(pp - s, m) micro-batches, so at most (M - reserved) / (params x bytes per
/// param + activations x mbs x min(pp - s, m)) layers on a GPU of M bytes, with the most lenient
/// recomputation, sequence parallelism and ZeRO of the space. With m micro-batches dp is
/// B / (m mbs) and pp at most G / (tp dp), so a configuration needs some fewest GPUs at each
/// memory size; more GPUs or a larger memory only allow more. Memory-bound models (which must
/// run tp 2 and mbs 1, say) get floors near their plans' times this way, not the ideal
/// configuration's.
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
  /// Floors under every layout on every shape whose counts lie between `lo` and `hi`.
  struct BoxFloor {
    double step_s = 0;         ///< step_floor_s(hi)
    /// Price x step time (USD per step, egress apart). Tighter than the price of `lo` times
    /// step_s: the work floor's price, sum_t n_t p_t over sum_t n_t k_t (k_t a type's work
    /// capacity), is least where the types of the lowest p_t / k_t sit at hi and the rest at lo.
    double step_cost_usd = 0;
  };
  BoxFloor box_floor(const NodeCounts& lo, const NodeCounts& hi) const;
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

  /// The floors of one (tp, mbs) configuration, with the present-type sets tabulated.
  struct ConfigFloor {
    double batch_ref_s = 0;                   ///< B x sum_u ref_c(u)
    std::vector<std::vector<double>> credit;  ///< per mask, per type: 1 / r_c
    std::vector<double> path_s;               ///< per mask
    /// Per node type: the fewest GPUs of a layout that fits where the largest GPU memory is
    /// that type's (0: memory not checked; LLONG_MAX: none fits).
    std::vector<long long> least_gpus;
    /// Some layout of `gpus` GPUs on nodes `counts` may fit at this configuration.
    bool may_fit(const NodeCounts& counts, long long gpus) const;
  };
  std::vector<ConfigFloor> configs_;  ///< empty where the space is not plain
  void add_config_floors(const SearchInput& input, const std::vector<int>& tps, const std::vector<int>& mbss,
                         bool check_memory);
  /// The time floors of point (tp index i, mbs index j): B x tp / mbs x the factor is
  /// `batch_scale`; `factor` scales the passes (recomputation).
  ConfigFloor config_times(size_t i, size_t j, double batch_scale, double factor) const;
  /// The least configuration floor of a shape of `gpus` GPUs, types `mask`, `counts` nodes
  /// (infinity where no configuration can run; 0 where there are no configuration floors).
  double config_floor_s(const NodeCounts& counts, unsigned mask, long long gpus) const;
  /// BoxFloor::step_cost_usd, with `hi_floor_s` = step_floor_s(hi).
  double step_cost_floor_usd(const NodeCounts& lo, const NodeCounts& hi, double hi_floor_s) const;
};

}  // namespace fasop
