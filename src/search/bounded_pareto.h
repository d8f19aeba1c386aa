#pragma once
// The pareto search by branch and bound over boxes of cluster shapes: the front of every plan
// on every shape of an inventory, without estimating most of them.
#include <functional>
#include <limits>

#include "search/pareto_search.h"

namespace fasop {

/// Where a bounded search stands. A shape is settled once estimated or ruled out with its box;
/// a large box stays open, its shapes unsettled, until the front rules it out whole, so the
/// settled count may jump at the end. Then the held candidates the front leaves a chance get
/// the full partitioner (`refining`).
struct ShapeProgress {
  double settled = 0, total = 0;  ///< shapes settled, shapes in all
  size_t candidates = 0;          ///< candidates estimated so far
  size_t shapes_estimated = 0;    ///< shapes whose layouts were estimated
  size_t open_boxes = 0;          ///< boxes of shapes still to settle
  /// The walk's tree settled, 0 to 1: the whole inventory's box weighs 1 and each half of a box
  /// half of it, so a box closed at depth d settles 2^-d (Knuth's measure of a search tree).
  double tree_settled = 0;
  /// Best first (--use-subset): the open boxes' lowest floor on the objective, and what a plan
  /// must beat to be kept (seconds or USD a step; infinity until enough plans are known). The
  /// walk ends when the floor reaches the bound, and most boxes close only then, all at once.
  bool best_first = false;
  bool objective_is_cost = false;  ///< the objective is USD a step (the cheapest plan), else seconds
  double lowest_open_floor = 0, objective_bound = std::numeric_limits<double>::infinity();
  bool refining = false;          ///< the last phase: the full partitioner on the held shapes
  size_t refined = 0, to_refine = 0;  ///< held candidates refined and to refine in all
};
using ShapeProgressFn = std::function<void(const ShapeProgress&)>;

/// The same front as run_pareto_search (every layout of every shape at its best partition),
/// found by bounding instead of enumerating. A box of shapes (each count between two corners)
/// is dropped when ShapeFloor's floor of its largest corner, at the price of its smallest,
/// cannot reach the front found so far (or the constraints), or no plan on its largest corner
/// fits in memory; else it is split in two along its widest count, the smaller half first,
/// down to single shapes. A shape's layouts are each ruled out by their own floor
/// (stage_type_step_floor_s) before any partition is tried, then go through
/// run_pareto_search's three steps against the front so far. Every floor is a true floor and
/// every plan in the front so far can run, so nothing on the front is ever dropped.
/// `sink` gets the candidates that were estimated, shape by shape, with their enumeration
/// indices (the shape's place in cluster_shapes order, then the layout's). The output does not
/// depend on the thread count.
ParetoStats run_bounded_pareto_search(const ParetoInput& input, CandidateSink& sink,
                                      const ShapeProgressFn& progress = {});

}  // namespace fasop
