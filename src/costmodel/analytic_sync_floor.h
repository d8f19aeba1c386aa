#pragma once
// Floors under what the analytic policy's data-parallel synchronisation adds to a step
// (AnalyticPolicy::stage_syncs, and ZeRO 3's gathers in its passes), from a stage's degrees and
// a floor of its parameters, without a layout: the shape search's floors (shape_floor.h) use
// them to see that large data-parallel degrees do not come free.
#include <vector>

#include "costmodel/analytic_policy.h"
#include "specs/cluster_spec.h"
#include "specs/model_spec.h"

namespace fasop {

/// The collectives of one stage's data-parallel sync on one node type, each at least as long as
/// AnalyticPolicy makes it for a stage of at least `params` parameters per GPU.
struct SyncFloorParts {
  double reduce_total_s = 0;   ///< every gradient bucket's reduce (all-reduce or reduce-scatter)
  double reduce_bucket_s = 0;  ///< one bucket's
  double gather_total_s = 0;   ///< ZeRO 1-2: the updated parameters' all-gather, every bucket
  double gather_bucket_s = 0;  ///< one bucket's
  double optimizer_s = 0;      ///< the optimizer step on the GPU's own parameters
  /// ZeRO 3: one micro-batch's gathers (forward and backward) and reduce-scatter: a floor
  /// under the stage's forward plus backward seconds.
  double zero3_pass_s = 0;
  /// ZeRO 3: the same at the bandwidth alone (no latency, the collective's plateau share):
  /// linear in the parameters, so the stages' pass collectives together take at least this
  /// for all of theirs, however the parameters are split.
  double zero3_stream_s = 0;
};

/// What the link floors need of the inventory: the least latency and the fewest tp rings that
/// share a node's network of any node type.
struct LinkFloorLimits {
  double least_latency_s = 0;
  int fewest_gpus_per_node = 1;
};
LinkFloorLimits link_floor_limits(const ClusterSpec& inventory);

/// SyncFloorParts of a stage of tp `tp`, dp `dp`, ZeRO `zero_stage` and at least `params`
/// parameters per GPU, its ranks on nodes of type `type` (a ring that meets two types is
/// at least as slow as on one of them). Zero where dp is 1.
SyncFloorParts sync_floor_parts(const ModelSpec& model, const AnalyticOptions& options, const NodeType& type,
                                const LinkFloorLimits& limits, int tp, int dp, int zero_stage, double params);

/// Floors under AnalyticPolicy's boundary send (boundary_send_s) between two stages of tp `tp`
/// and dp `dp` at micro-batch size `mbs`, one per set of node types present (bit t of the
/// index: type t of `inventory`): the least latency plus the activations over the fastest link a
/// rank of a present type can have (its network shared by the stage's GPUs on its node, or
/// NVLink where a stage is smaller than a node).
std::vector<double> send_floor_s_by_types(const ModelSpec& model, const ClusterSpec& inventory,
                                          const LinkFloorLimits& limits, int tp, int dp, int mbs);

/// A floor under the exposed part of the parts, the first stage's (its gathers have no slack):
/// the reduce after its last backward pass of at most `backward_window_s`, the gather before
/// the next forward of at most `forward_window_s`, and the optimizer step. The parts are each
/// the least over the node types the stage may use.
double exposed_sync_floor_s(const SyncFloorParts& parts, const AnalyticOptions& options, int zero_stage,
                            double backward_window_s, double forward_window_s);

}  // namespace fasop
