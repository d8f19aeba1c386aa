#include "costmodel/estimate.h"

#include "costmodel/pipeline_1f1b.h"

namespace fasop {
namespace {

struct StepTime {
  double step_s = 0;
  int bottleneck_stage = 0;
  std::vector<StageTiming> timings;
  PipelineResult pipeline;
  std::vector<double> dp_allreduce_s;
  double embedding_allreduce_s = 0;
};

StepTime compute_step_time(const PlanContext& ctx, const CostPolicy& policy,
                           const std::vector<int>& partition, const std::vector<int>& timed_partition) {
  StepTime t;
  t.timings = policy.stage_timings(ctx, timed_partition);
  t.pipeline = policy.pipeline(ctx, t.timings);
  // The timings serve the all-reduce's overlap when they are of the same partition.
  t.dp_allreduce_s = policy.dp_allreduce_s(ctx, partition, partition == timed_partition ? &t.timings : nullptr);
  t.embedding_allreduce_s = policy.embedding_allreduce_s(ctx);
  t.step_s = policy.step_time_s(t.pipeline, t.dp_allreduce_s, t.embedding_allreduce_s, &t.bottleneck_stage);
  return t;
}

}  // namespace

double price_per_second_usd(const PlanContext& ctx) {
  double usd = 0;
  for (size_t type = 0; type < ctx.cluster->node_types.size(); ++type)
    usd += ctx.cluster->node_types[type].price_usd_per_hour / 3600 * ctx.cluster->node_count(int(type));
  return usd;
}

std::vector<PipelineEvent> pipeline_events(const PlanContext& ctx, const CostPolicy& policy,
                                           const std::vector<int>& partition) {
  return simulate_1f1b_events(policy.stage_timings(ctx, partition), ctx.num_microbatches);
}

double step_time_s(const PlanContext& ctx, const CostPolicy& policy, const std::vector<int>& partition) {
  return compute_step_time(ctx, policy, partition, partition).step_s;
}

PlanEstimate estimate_plan(const PlanContext& ctx, const CostPolicy& policy,
                           const std::vector<int>& partition, double iterations,
                           const std::vector<int>* timed_partition) {
  const std::vector<int>& timed = timed_partition ? *timed_partition : partition;
  StepTime t = compute_step_time(ctx, policy, partition, timed);
  PlanEstimate e;
  e.step_time_s = t.step_s;
  e.pipeline_time_s = t.pipeline.pipeline_s;
  e.dp_allreduce_s = t.dp_allreduce_s[t.bottleneck_stage];
  e.embedding_allreduce_s = t.embedding_allreduce_s;
  e.price_per_step_usd = price_per_second_usd(ctx) * e.step_time_s;
  e.train_cost_usd = e.price_per_step_usd * iterations;
  std::vector<StageMemory> memory = policy.stage_memory(ctx, partition);
  e.memory = policy.memory_verdict(memory);
  int first = 0;
  for (int s = 0; s < ctx.pp(); ++s) {
    StageReport r;
    r.first_unit = first;
    r.num_units = partition[s];
    r.node_type = ctx.stage_node_type[s];
    r.compute_s = t.timings[s].forward_s + t.timings[s].backward_s;
    r.end_s = t.pipeline.stage_end_s[s];
    r.dp_allreduce_s = t.dp_allreduce_s[s];
    r.memory = memory[s];
    e.stages.push_back(r);
    first += partition[s];
  }
  return e;
}

}  // namespace fasop
