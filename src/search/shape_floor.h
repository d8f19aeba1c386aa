#pragma once
// Floors under every plan of a cluster shape, computed from each node type's work per sample
// without enumerating a layout: the bounded pareto search (bounded_pareto.h) prunes whole boxes
// of shapes with them.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <unordered_map>
#include <vector>

#include "costmodel/analytic_sync_floor.h"
#include "search/cluster_shapes.h"
#include "search/search.h"

namespace fasop {

/// Floors under the step time, cost and memory of every plan on a shape of an inventory, or on a
/// box of shapes, computed once per search from the profiles without listing a layout: the work,
/// path, per-configuration, fill-and-drain, ladder, ZeRO 3, sync and memory floors. Each floor's
/// proof sketch and its test: (docs/search.md#shape-floor).
class ShapeFloor {
 public:
  /// `input`: the pareto search's input (the inventory as its cluster, a profile per node
  /// type). `stage_type_is_slowest_rank`: the policy runs a stage at the slowest node type of
  /// its own ranks (the analytic policy), which tightens the work floor of mixed shapes.
  /// `check_memory`: may_fit compares the shape's memory with the state's (the memory-aware
  /// policy's plans that do not fit are never admitted).
  ShapeFloor(const SearchInput& input, bool stage_type_is_slowest_rank, bool check_memory);

  /// A floor under the step time of every layout on a shape with `counts` nodes of each type
  /// (infinity for a shape without nodes or without a layout).
  double step_floor_s(const NodeCounts& counts) const;
  /// A configuration option's place in the floors' tables (configuration, dp and ZeRO stage,
  /// pp 1 or more): a box's options that may still reach the front.
  using OptionList = std::vector<unsigned>;
  /// Floors under every layout on every shape whose counts lie between `lo` and `hi`.
  struct BoxFloor {
    double step_s = 0;         ///< under every shape's step_floor_s
    /// Price x step time (USD per step, egress apart). Tighter than the price of `lo` times
    /// step_s: the work floor's price, sum_t n_t p_t over sum_t n_t k_t (k_t a type's work
    /// capacity), is least where the types of the lowest p_t / k_t sit at hi and the rest at lo.
    double step_cost_usd = 0;
    /// The configuration options whose floors `reachable` accepted (the least of their floors
    /// give the two above); `all_options` where the floors have no configuration options.
    OptionList open;
    bool all_options = true;
  };
  /// Whether a plan of floors (step seconds, USD per step) may still be wanted.
  using Reachable = std::function<bool(double step_s, double step_cost_usd)>;
  /// The floors of a box whose options `reachable` rejects (infinity where it rejects every
  /// one); only `parent`'s open options are tried where given (a box inside the parent's,
  /// reached later: an option the front had ruled out then stays ruled out).
  BoxFloor box_floor(const NodeCounts& lo, const NodeCounts& hi, const Reachable& reachable = {},
                     const BoxFloor* parent = nullptr) const;
  /// False when the shape's GPUs together hold less memory than the model's weights,
  /// gradients and optimizer state need however they are sharded (the memory-aware policy's
  /// bytes per parameter): no plan on it fits. Non-decreasing in every count.
  bool may_fit(const NodeCounts& counts) const;
  /// A floor under the step time of layout `key` on the shape `counts` at any partition, from
  /// its configuration's floors at its own dp, ZeRO stage and pp (infinity where its stages
  /// cannot hold the layers; zero where there are no configuration floors): cheaper than the
  /// layout's context.
  double layout_floor_s(const NodeCounts& counts, const PlanKey& key) const;
  /// False where `box` (box_floor's floors) ruled out layout `key`'s configuration option: no
  /// layout of it on any shape of the box reaches the front. The box's open options are in
  /// ascending order (as box_floor lists them).
  bool option_open(const BoxFloor& box, const PlanKey& key) const;

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
  std::vector<bool> transformer_layer_;  ///< each distinct layer type is a transformer layer
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

  /// A work floor's terms at one configuration, over some of the units.
  struct WorkFloor {
    double batch_ref_s = 0;                   ///< B x sum_u ref_c(u)
    std::vector<std::vector<double>> credit;  ///< per mask, per type: 1 / r_c
    /// Per mask: the least 1 / r_c of a type present, so a stage of g GPUs has at least g x
    /// this of the work floor's capacity (0 where unknown).
    std::vector<double> least_speed;
  };
  /// The credited GPUs of a shape under both work floors.
  struct Capacity {
    double all = 0, layers = 0;
  };
  /// The floors of one (tp, mbs, recomputation) configuration, with the present-type sets
  /// tabulated.
  struct ConfigFloor {
    int tp = 1;
    /// The work floor over every unit, and over the transformer layers alone (ratios r^L_c from
    /// those layers: a stage's other units only add to its time, so T >= W_L / sum k^L too).
    WorkFloor work, layer_work;
    std::vector<double> path_s;               ///< per mask
    /// Per mask: the first stage's backward and forward seconds per micro-batch at most (the
    /// sync floors' overlap windows).
    std::vector<double> backward_window_s, forward_window_s;
    /// Per mask: each layer type's time at its fastest present type (with the passes'
    /// factor) and its units, fastest first.
    std::vector<std::vector<std::pair<double, int>>> fastest_layers;
    std::vector<double> least_layer_s;  ///< per mask: the fastest transformer layer's time
    std::vector<std::vector<size_t>> slowest_first;  ///< per mask: its types by whole-model time
    /// Per node type: the whole model's time (which type is slower), its fastest unit's, and
    /// its fastest transformer layer's (0 where none).
    std::vector<double> whole_s, least_unit_s, least_layer_by_type_s;
    /// One data-parallel degree and ZeRO stage the configuration can run.
    struct DpOption {
      int dp = 1;
      int zero = 0;
      int microbatches = 1;  ///< m = B / (mbs dp)
      /// Per node type: the least pp whose stages can hold every layer where the largest GPU
      /// memory is that type's (1: memory not checked; INT_MAX: none).
      std::vector<int> least_pp;
      /// Per node type: the most transformer layers a stage k-th from the end (k = 1 .. layers)
      /// holds in its memory (empty: memory not checked, or the whole model fits one stage).
      std::vector<std::vector<uint16_t>> layer_caps;
      /// Per node type (analytic policy): the first stage's sync floors with pp 1 (every
      /// parameter) and with more stages (its first unit's).
      std::vector<SyncFloorParts> one_stage, first_stage;
      /// Per node type (analytic policy): a stage holding one transformer layer, or one unit, at least.
      std::vector<SyncFloorParts> layer_stage, unit_stage;
      /// Per mask (analytic policy): the least seconds a pipeline send between two stages
      /// takes on the types present (0: not known).
      std::vector<double> send_s;
    };
    std::vector<DpOption> dps;
  };
  /// The configurations' floors on every shape of a box: (step seconds, USD per step), the
  /// least over the options `reachable` accepts, and those options.
  struct ConfigBound {
    double step_s = std::numeric_limits<double>::infinity();
    double step_cost_usd = std::numeric_limits<double>::infinity();
    OptionList open;
  };
  std::vector<ConfigFloor> configs_;  ///< empty where the space is not plain; by mode, tp, mbs
  std::vector<RecomputeMode> modes_;
  std::vector<int> tp_values_, mbs_values_;
  /// A configuration option's floors, on shapes whose pp is at most `most_pp`, `one_stage`
  /// where pp is 1: the pipeline (work, path, fill and drain), ZeRO 3's collectives in the
  /// passes and the sync after them.
  struct OptionTerms {
    double stage_s = 0;  ///< the busiest stage's forward and backward of one micro-batch
    double drain = 0;    ///< the busiest stage's passes the fill and drain add to the path
    double pipe_s = 0, comm_s = 0, sync_s = 0;
    /// The sends the stages wait on over the work floor's work: a price x work floor grows by
    /// this share.
    double send_work_share = 0, layer_send_work_share = 0;  ///< of the work floor, of the layers' one
    /// A stage's passes and the sends it waits on, one micro-batch, at the least: some stage
    /// at a slow type holds a transformer layer (slow_layer_stage).
    double chain_s = 0;
    double step_s() const { return std::max(pipe_s, comm_s) + sync_s; }
  };
  /// On shapes of types `mask` with at least `lo` nodes (surely of lo's types), `capacity`
  /// credited GPUs at most (under each work floor) and from `least_pp` to `most_pp` stages;
  /// `laddered`: with the ladder's floors (the costliest).
  OptionTerms option_terms(const ConfigFloor& config, const ConfigFloor::DpOption& option, unsigned mask,
                           const Capacity& capacity, const NodeCounts& lo, long long least_pp, long long most_pp,
                           bool one_stage, bool laddered = true) const;
  /// Where each stage runs at its slowest rank's type: the GPUs of lo's k slowest types (of
  /// config.slowest_first[mask], equal whole-model times together) fill at least ceil(N_k /
  /// replica) stages, at most `most_pp`, each at a type at least as slow as the k-th. Calls
  /// step(k, those stages) at each group's last type.
  template <typename Step>
  void for_each_slow_step(const ConfigFloor& config, unsigned mask, const NodeCounts& lo, long long replica,
                          long long most_pp, Step&& step) const;
  /// The types of `mask` whose whole-model time is at least type t's.
  static unsigned at_least_as_slow(const ConfigFloor& config, unsigned mask, size_t t);
  /// An upper bound on the credit-weighted GPUs of a layout of `replica` GPUs a stage and at
  /// most `most_pp` stages on shapes of types `mask` with at least `lo` nodes, where a stage
  /// runs at its slowest rank's type (infinity for other policies).
  double staged_capacity(const ConfigFloor& config, const WorkFloor& work, unsigned mask, const NodeCounts& lo,
                         long long replica, long long most_pp) const;
  /// Where each stage runs at its slowest rank's type, the slowest types present may fill
  /// stages enough that one holds a transformer layer at their speed: floors under that
  /// stage's passes of one micro-batch, and with the sends (`send_s` each) it waits on before
  /// its next pass (0: none known).
  struct SlowLayerStage {
    double layer_s = 0, chain_s = 0;
  };
  SlowLayerStage slow_layer_stage(const ConfigFloor& config, unsigned mask, const NodeCounts& lo, long long replica,
                                  long long most_pp, double send_s) const;
  /// A floor under the busiest stage's micro-batch at a configuration on shapes of at most
  /// `most_pp` stages whose types lie in `mask`, those of `sure_mask` surely present: whole units.
  double least_stage_s(const ConfigFloor& config, unsigned mask, unsigned sure_mask, long long most_pp) const;
  /// Where each stage runs at its slowest rank's type: the stages a layout of `replica` GPUs a
  /// stage and at most `most_pp` stages surely runs at each speed. The GPUs of lo's slowest
  /// types fill some stages at their speed or slower (rungs, fastest first); a stage holds
  /// whole transformer layers, at most its room in memory.
  struct Ladder {
    struct Rung {
      long long stages = 0;
      double layer_s = 0;     ///< a transformer layer's least time on the rung's types (0: unknown)
      std::vector<int> room;  ///< per stage, the most layers it holds in memory, most first
    };
    std::vector<Rung> rungs;  ///< empty: no ladder (another policy)
  };
  Ladder ladder(const ConfigFloor& config, const ConfigFloor::DpOption& option, unsigned mask, const NodeCounts& lo,
                long long replica, long long most_pp) const;
  /// A floor under the busiest stage's micro-batch from the ladder: slow stages of one or two
  /// layers leave the fast ones the rest. Shapes whose slow GPUs cannot share the work evenly
  /// pay here what the work floor credits them.
  double laddered_stage_s(const Ladder& ladder) const;
  /// A floor under 1F1B's step (sum_s t_s + `drain` tau, tau >= `tau0` the busiest stage's
  /// micro-batch) from the ladder: at a given tau the stages' passes sum to at least the
  /// least that holds the layers, each stage holding one (but the model's other units') and
  /// the rest going where a layer takes least.
  double laddered_pipeline_s(const Ladder& ladder, double tau0, double drain) const;
  /// Where plans must fit in memory, a floor under the busiest stage's micro-batch on `pp` stages
  /// of types `mask`: stage k-th from the end holds at most cap_k(t) transformer layers on a GPU
  /// of type t, and at most tau / l_t in time tau (l_t: a layer's least time at t), so tau is at
  /// least the least with sum_k max_t min(cap_k(t), floor(tau / l_t)) >= the layers. Memory-bound
  /// models pay here what the work floor misses: their stages cannot share the layers evenly, the
  /// first ones holding the most micro-batches. 0 where memory is not checked; infinity where the
  /// stages cannot hold the layers at all. Kept per (option, mask, pp): not for concurrent use.
  double memory_balanced_stage_s(const ConfigFloor& config, const ConfigFloor::DpOption& option, unsigned mask,
                                 long long pp) const;
  mutable std::unordered_map<uint64_t, double> balanced_stage_s_;
  /// Layout `key`'s configuration option (none where the floors have none for it: virtual
  /// stages, per-stage degrees, a degree the tables lack).
  std::optional<unsigned> option_of(const PlanKey& key) const;
  /// The fewest stages that hold the layers with the largest memory of `counts`.
  static int least_fitting(const ConfigFloor::DpOption& option, const NodeCounts& counts);
  int most_stages_ = 0;               ///< pp at most the transformer layers
  int units_ = 0;                     ///< the model's pipeline units
  double forward_share_[4] = {0.5, 0.5, 0.5, 0.5};  ///< phi per ZeRO stage: a forward pass's largest share of its stage's time
  bool interleaved_ = false;          ///< the space tries virtual stages: no fill-and-drain term
  bool type_blocks_ = false;          ///< the space places each node type's nodes together
  /// On type blocks, whether type t's GPUs (at least lo's) sit at an end of every stage of
  /// `replica` ranks they touch: their N_t ranks in a row are no fewer than replica - 1, so no
  /// stage holds them strictly inside (that would need N_t + 2 ranks).
  bool at_stage_ends(const NodeCounts& lo, size_t t, long long replica) const;
  /// ZeRO 3 on type blocks: the floor of the busiest stage's collectives a micro-batch where
  /// lo's types fill whole stages (zero3_type_stage_s).
  double zero3_type_stage_s(const ConfigFloor::DpOption& option, const NodeCounts& lo, long long replica,
                            long long most_pp) const;
  const AnalyticOptions* sync_ = nullptr;  ///< the analytic policy's options: sync floors
  void add_config_floors(const SearchInput& input, const std::vector<int>& tps, const std::vector<int>& mbss,
                         bool check_memory);
  /// The time floors of point (tp index i, mbs index j): B x tp / mbs x the factor is
  /// `batch_scale`; `factor` scales the passes (recomputation).
  ConfigFloor config_times(size_t i, size_t j, double batch_scale, double factor) const;
  /// The least configuration floors over every shape between `lo` and `hi` (infinity where no
  /// configuration can run; zero where there are no configuration floors). `work_cost` gives a
  /// configuration's least price x work floor over the box (infinity: not wanted). Each
  /// option's floors are first raised to `general` (the floors of every configuration) and
  /// kept where `reachable` accepts them; only `only` are tried where given.
  ConfigBound config_bound(const NodeCounts& lo, const NodeCounts& hi,
                           const std::function<double(const WorkFloor&)>& work_cost, const ConfigBound& general,
                           const Reachable& reachable, const OptionList* only) const;
  size_t dp_stride_ = 0;  ///< option indices: (configuration x dp_stride_ + dp option) x 2 + (pp > 1)
  /// The work and path floors of every configuration together (no configuration floors).
  double general_floor_s(const NodeCounts& counts) const;
};

}  // namespace fasop
