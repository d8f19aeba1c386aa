#pragma once
#include <optional>
#include <string>
#include <vector>

#include "costmodel/floor_facts.h"
#include "costmodel/memory_model.h"
#include "costmodel/memory_terms.h"
#include "costmodel/pipeline_1f1b.h"
#include "costmodel/plan_context.h"
#include "costmodel/step_breakdown.h"

namespace fasop {

/// Peak memory of one pipeline stage on one GPU.
struct StageMemory {
  double gib = 0;         ///< parameters, gradients, optimizer state and activations
  double zero_gib = 0;    ///< the same with optimizer state and gradients sharded over dp
  double limit_gib = 0;   ///< the GPU memory it must fit in
  /// The analytic policy's terms at the stage's worst moment (its device bytes are `gib`); none
  /// for FASOP's policy.
  std::optional<MemoryBreakdown> breakdown{};  // {}: brace-built stages may leave it out
};

/// Out-of-memory verdict of a plan, as FASOP reports it, and the room the worst stage leaves.
struct MemoryVerdict {
  bool is_oom = false;
  double oom_gpumem_gib = 0;
  bool is_zero_oom = false;
  double zero_oom_gpumem_gib = 0;
  /// The analytic policy's (0 where the policy gives none): the stage that leaves the least of
  /// its GPU's memory free, its peak, that GPU's memory, what the plan must leave free there
  /// (--memory-headroom) and what it does (capacity - peak; negative past capacity).
  int worst_stage = 0;
  double worst_gib = 0;
  double capacity_gib = 0;
  double headroom_gib = 0;
  double free_gib = 0;
};

/// One step as the estimate (estimate.h) puts it together from a policy's parts.
struct StepResult {
  std::vector<StageTiming> timings;     ///< per-micro-batch timings of the timed partition
  PipelineResult pipeline;              ///< their schedule
  std::vector<double> dp_allreduce_s;   ///< what each stage adds after its last backward pass
  double embedding_allreduce_s = 0;
  /// What each stage adds after the step's gradient synchronisation (the optimizer step, the
  /// parameter all-gather); empty where the policy has none (FASOP's).
  std::vector<double> after_sync_s;
  int bottleneck_stage = 0;  ///< the first stage whose end + all-reduce is the latest
  int after_sync_stage = 0;  ///< the first stage with the most after_sync_s
  double step_s = 0;
};

/// The formulas of a cost model that differ between FASOP and better models: how stages map to
/// GPU types, what a point-to-point send, an all-reduce and a stage's memory cost.
/// The estimate (estimate.h) combines them the same way for every policy.
class CostPolicy {
 public:
  virtual ~CostPolicy() = default;
  virtual std::string name() const = 0;
  /// What the search's floors may assume of this policy.
  virtual FloorFacts floor_facts() const { return {}; }

  /// Node type whose speed stage `stage` runs at.
  virtual std::vector<int> stage_node_types(const PlanContext& ctx) const = 0;
  /// A stage's forward plus backward seconds per micro-batch are at least this times its units'
  /// compute (PlanContext::unit_compute_s): more than 1 where the backward pass recomputes. The
  /// partition floors (partitioner.h) scale by it. 1 by default, as FASOP's passes are.
  virtual double pass_time_factor(const PlanContext&) const { return 1; }
  /// Seconds to send one micro-batch's activations across boundary b, for each b < pp-1.
  virtual std::vector<double> boundary_send_s(const PlanContext& ctx) const = 0;
  /// Per-micro-batch timing of each stage of `partition`.
  virtual std::vector<StageTiming> stage_timings(const PlanContext& ctx,
                                                 const std::vector<int>& partition) const = 0;
  /// Seconds of each stage's data-parallel gradient all-reduce. `timings`, if given, are
  /// stage_timings(ctx, partition), for a policy that overlaps the all-reduce with them.
  virtual std::vector<double> dp_allreduce_s(const PlanContext& ctx, const std::vector<int>& partition,
                                             const std::vector<StageTiming>* timings = nullptr) const = 0;
  /// Seconds of the all-reduce that ties the input embedding to the output head.
  virtual double embedding_allreduce_s(const PlanContext& ctx) const = 0;
  /// USD a step of `partition` pays besides the nodes' time: the egress of its traffic between
  /// zones. Never negative, so that the nodes' price x the step time bounds the step's price
  /// from below. None by default (FASOP's policy ignores zones).
  virtual double egress_usd_per_step(const PlanContext&, const std::vector<int>&) const { return 0; }
  /// Peak memory of each stage.
  virtual std::vector<StageMemory> stage_memory(const PlanContext& ctx,
                                                const std::vector<int>& partition) const = 0;
  /// Whether the plan runs out of memory, and the figures reported with the verdict.
  virtual MemoryVerdict memory_verdict(const std::vector<StageMemory>& stages) const = 0;

  /// The pipeline schedule of the stages' timings: the 1F1B simulation.
  virtual PipelineResult pipeline(const PlanContext& ctx, const std::vector<StageTiming>& stages) const {
    return simulate_1f1b(stages, ctx.num_microbatches);
  }
  /// The stages' memory as a linear model of their units, for partitioners that must keep
  /// every stage within its GPU's memory; none for a policy whose partitions may overflow
  /// (FASOP's: it reports OOM after partitioning for time). make_plan_context stores it.
  virtual std::optional<MemoryModel> memory_model(const PlanContext&) const { return std::nullopt; }

  /// Seconds each stage spends after the step's gradient synchronisation (every stage's
  /// all-reduce and the embedding's): the optimizer step and whatever of the parameter
  /// all-gather is exposed. The step adds the slowest stage's. `timings` as for
  /// dp_allreduce_s. None (empty) by default: FASOP's model has no such terms.
  virtual std::vector<double> after_sync_s(const PlanContext&, const std::vector<int>&,
                                           const std::vector<StageTiming>* = nullptr) const {
    return {};
  }
  /// dp_allreduce_s and after_sync_s together: a policy that derives both from one computation
  /// (the analytic policy's stage_syncs) overrides this to do it once a step.
  virtual void sync_s(const PlanContext& ctx, const std::vector<int>& partition, const std::vector<StageTiming>* timings,
                      std::vector<double>* dp_allreduce, std::vector<double>* after_sync) const {
    *dp_allreduce = dp_allreduce_s(ctx, partition, timings);
    *after_sync = after_sync_s(ctx, partition, timings);
  }
  /// The step's terms (StepBreakdown) of `step`, an estimate of `partition` whose stages were
  /// timed with `timed_partition`. By default: compute is the bottleneck stage's m x (forward +
  /// backward), sends what zeroing them would take off that stage's end, bubble the rest of its
  /// pipeline (the schedule without sends), dp_comm its all-reduce, embedding the embedding
  /// sync, optimizer the slowest after_sync_s (estimate.cc). Nothing is a remainder: a test
  /// checks total_s() against the step.
  virtual StepBreakdown step_breakdown(const PlanContext& ctx, const std::vector<int>& partition,
                                       const std::vector<int>& timed_partition, const StepResult& step) const;

  /// A cheap lower bound on the step time of `partition` (no simulation), so that a search
  /// can skip partitions that cannot win: the pipeline's lower bound (pipeline_1f1b.h) plus
  /// stage 0's all-reduce, the embedding sync and stage 0's after_sync_s, as stage 0 ends the
  /// pipeline.
  virtual double step_time_lower_bound(const PlanContext& ctx, const std::vector<int>& partition) const {
    std::vector<StageTiming> timings = stage_timings(ctx, partition);
    std::vector<double> dp, after;
    sync_s(ctx, partition, &timings, &dp, &after);
    double bound = pipeline_1f1b_lower_bound(timings, ctx.num_microbatches) + dp[0] + embedding_allreduce_s(ctx);
    return after.empty() ? bound : bound + after[0];
  }
  /// The step time up to the gradient synchronisation: the latest stage end plus its
  /// all-reduce, plus the embedding sync (the estimate adds the slowest after_sync_s).
  /// Sets `bottleneck` to the first stage that reaches the latest end.
  virtual double step_time_s(const PipelineResult& pipeline, const std::vector<double>& dp_allreduce_s,
                             double embedding_allreduce_s, int* bottleneck) const {
    return latest_end_plus_sync<double>(pipeline, dp_allreduce_s, embedding_allreduce_s, bottleneck);
  }

 protected:
  /// step_time_s's sum in the arithmetic `Real` (FASOP's is float32).
  template <typename Real>
  static double latest_end_plus_sync(const PipelineResult& pipeline, const std::vector<double>& dp_allreduce_s,
                                     double embedding_allreduce_s, int* bottleneck) {
    Real latest = -1;
    for (size_t s = 0; s < dp_allreduce_s.size(); ++s) {
      Real end = Real(pipeline.stage_end_s[s]) + Real(dp_allreduce_s[s]);
      if (end > latest) {
        latest = end;
        *bottleneck = static_cast<int>(s);
      }
    }
    return latest + Real(embedding_allreduce_s);
  }
};

}  // namespace fasop
