#pragma once
#include <vector>

#include "costmodel/cost_policy.h"
#include "costmodel/pipeline_1f1b.h"
#include "costmodel/plan_context.h"

namespace fasop {

/// One pipeline stage of an estimated plan.
struct StageReport {
  int first_unit = 0;
  int num_units = 0;
  int node_type = 0;          ///< node type whose speed the stage runs at
  double compute_s = 0;       ///< forward+backward of one micro-batch
  double end_s = 0;           ///< end of its last backward in the 1F1B simulation
  double dp_allreduce_s = 0;  ///< its gradient all-reduce
  StageMemory memory;
};

/// A plan's estimated time, price and memory, with FASOP's figures.
struct PlanEstimate {
  /// max over stages of (end + DP all-reduce) + embedding sync + the slowest stage's optimizer
  /// step and parameter all-gather (CostPolicy::after_sync_s; none for FASOP)
  double step_time_s = 0;
  double pipeline_time_s = 0;        ///< 1F1B latency (stage 0's last backward)
  double dp_allreduce_s = 0;         ///< DP all-reduce of the stage that bounds the step
  double embedding_allreduce_s = 0;
  double price_per_step_usd = 0;     ///< node_price_per_step_usd + egress_usd_per_step
  double node_price_per_step_usd = 0;  ///< the nodes' price per second x step_time_s
  double egress_usd_per_step = 0;    ///< bytes sent between zones x their egress price (0 in one zone)
  double train_cost_usd = 0;         ///< price per step x iterations
  double train_time_s = 0;           ///< step_time_s x iterations: the run's wall time
  MemoryVerdict memory;
  std::vector<StageReport> stages;
  StepBreakdown breakdown;           ///< step_time_s as a sum of terms (estimate_plan's with_breakdown; else zeros)
};

/// FASOP's default number of training steps (12.5M).
constexpr double kFasopIterations = 12.5e6;

/// Seconds of one training step with `partition`; the search's objective.
double step_time_s(const PlanContext& ctx, const CostPolicy& policy, const std::vector<int>& partition);

/// The full estimate of a plan with `partition`. `timed_partition`, if given, supplies the
/// stage compute times instead (to reproduce FASOP's figures where FASOP timed one partition and
/// reported another); memory and all-reduce always follow `partition`.
/// `with_breakdown`: also the step's terms (PlanEstimate::breakdown), which cost another pipeline
/// simulation; the search's inner loops go without, the plans it reports get them.
PlanEstimate estimate_plan(const PlanContext& ctx, const CostPolicy& policy,
                           const std::vector<int>& partition, double iterations = kFasopIterations,
                           const std::vector<int>* timed_partition = nullptr, bool with_breakdown = false);

/// The plan's 1F1B schedule as timeline boxes (stage timings of `partition`), for pictures.
std::vector<PipelineEvent> pipeline_events(const PlanContext& ctx, const CostPolicy& policy,
                                           const std::vector<int>& partition);

/// USD per second of the plan's nodes. Times the step time, a lower bound of the price per
/// step (egress only adds to it).
double price_per_second_usd(const PlanContext& ctx);

}  // namespace fasop
