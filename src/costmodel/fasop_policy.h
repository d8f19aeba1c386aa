#pragma once
#include "costmodel/cost_policy.h"

namespace fasop {

/// FASOP's cost model (HPDC'24, commit 93cb38b), reproduced formula for formula, quirks
/// included, so that its published tables can be checked number for number:
/// - a stage runs at the pace of the slowest node type among the nodes FASOP assigns it;
/// - a point-to-point send over the network gets the inter-node bandwidth / dp / tp / 1.05,
///   inside a node the intra-node bandwidth / 3.5; the slowest tensor-parallel lane and the
///   slowest data-parallel replica set the time;
/// - the 1F1B simulation counts only stage 0's forward sends and the last stage's backward
///   sends; a stage's compute splits 1/3 forward, 2/3 backward;
/// - every stage's DP all-reduce moves stage 0's parameters (embedding not divided by tp, 20800
///   extra per transformer layer) over the ring of tensor-parallel lane tp-1 of stage 0, with
///   FASOP's bandwidth-sharing divisors (intra-node sharing only on A10 GPUs);
/// - the embedding all-reduce runs between the first and last stage of the last replica;
/// - memory: 18 bytes per parameter (6 + 12/dp with ZeRO), Korthikanti-style activations for
///   min(pp, m) micro-batches in flight, a 1.10 margin on the OOM check without ZeRO only, and
///   the memory limit of the node FASOP picks for each stage;
/// - FASOP's arithmetic: bandwidths, sends, all-reduces and the step time are single precision
///   (FASOP's float32 tensors), the 1F1B simulation double precision. Reproducing it makes equal
///   plans give equal figures to the last bit, so "no slower than FASOP" needs no tolerance.
class FasopPolicy : public CostPolicy {
 public:
  std::string name() const override { return "fasop"; }
  std::vector<int> stage_node_types(const PlanContext& ctx) const override;
  std::vector<double> boundary_send_s(const PlanContext& ctx) const override;
  /// The forward share is a third: FASOP's forward is a third of a stage's compute, its
  /// backward two thirds.
  FloorFacts floor_facts() const override { return {.forward_share_bound = {1.0 / 3, 1.0 / 3, 1.0 / 3, 1.0 / 3}}; }
  std::vector<StageTiming> stage_timings(const PlanContext& ctx,
                                         const std::vector<int>& partition) const override;
  std::vector<double> dp_allreduce_s(const PlanContext& ctx, const std::vector<int>& partition,
                                     const std::vector<StageTiming>* timings = nullptr) const override;
  double embedding_allreduce_s(const PlanContext& ctx) const override;
  std::vector<StageMemory> stage_memory(const PlanContext& ctx,
                                        const std::vector<int>& partition) const override;
  MemoryVerdict memory_verdict(const std::vector<StageMemory>& stages) const override;
  PipelineResult pipeline(const PlanContext& ctx, const std::vector<StageTiming>& stages) const override;
  double step_time_s(const PipelineResult& pipeline, const std::vector<double>& dp_allreduce_s,
                     double embedding_allreduce_s, int* bottleneck) const override;

  /// FASOP's margin on estimated memory in its OOM check.
  static constexpr double kMemoryMargin = 1.10;
};

/// Sum of the units' compute in [first, first+count), added left to right (FASOP's order, so
/// that equal stages compare equal to the last bit).
double stage_compute_s(const std::vector<double>& unit_compute_s, int first, int count);

}  // namespace fasop
