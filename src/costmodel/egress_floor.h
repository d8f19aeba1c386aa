#pragma once
// A floor under the egress a layout's step pays between zones (zone_egress.h), from where its
// ranks sit alone, without its partition or a plan context: the shape searches rule out layouts
// of two-zone shapes with it before building their contexts.
#include <vector>

#include "specs/cluster_spec.h"
#include "specs/model_spec.h"
#include "specs/plan.h"
#include "specs/training_stack.h"

namespace fasop {

/// Floors under zone_traffic's USD for layouts with one tp and one dp for every stage, on
/// clusters with the node types of `cluster` (shapes of one inventory).
/// - Pipeline sends and the tied embedding's exchange do not depend on the partition: the
///   pairs of ranks that cross zones are counted exactly, from the runs of ranks in one zone.
/// - Data-parallel rings: a stage whose replicas sit in two zones or more crosses them on
///   at least two of each lane's ring edges, carrying a share of the stage's parameters.
///   Where every stage does so, they hold every parameter between them; otherwise a stage may
///   hold as little as one unit, and the floor counts none (a stage in one zone next to one
///   across two then sends some of its activations across, counted above).
/// - Interleaved schedules cross each boundary v times, and the floor counts v (the last
///   chunk's wrap-around to the first stage is left out).
/// Ring bytes are priced at the cheapest egress between two zones the layout's nodes are in;
/// sends and the embedding's exchange at their own pair's.
class EgressFloor {
 public:
  /// `memory`: the stack, which decides how often FSDP's rings run (fsdp_gathers.h).
  EgressFloor(const ModelSpec& model, const ClusterSpec& cluster, const MemorySettings& memory = {});
  /// USD a step of `key` pays for egress at the least; 0 where its nodes sit in one zone, its
  /// stages differ in tp or dp, or it runs context or expert parallelism.
  double usd_per_step(const PlanKey& key) const;

 private:
  const ModelSpec* model_;
  const ClusterSpec* cluster_;
  MemorySettings memory_;
  std::vector<int> zone_of_type_;            ///< a zone index per node type
  std::vector<std::vector<double>> usd_per_byte_;  ///< per pair of zone indices
  std::vector<double> params_per_gpu_;       ///< per tp (index tp): every unit's parameters on one GPU
};

}  // namespace fasop
