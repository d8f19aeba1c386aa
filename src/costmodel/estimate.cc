#include "costmodel/estimate.h"

#include "costmodel/pipeline_1f1b.h"

namespace fasop {
namespace {

StepResult compute_step_time(const PlanContext& ctx, const CostPolicy& policy,
                             const std::vector<int>& partition, const std::vector<int>& timed_partition) {
  StepResult t;
  t.timings = policy.stage_timings(ctx, timed_partition);
  t.pipeline = policy.pipeline(ctx, t.timings);
  // The timings serve the all-reduce's overlap when they are of the same partition.
  const std::vector<StageTiming>* own = partition == timed_partition ? &t.timings : nullptr;
  policy.sync_s(ctx, partition, own, &t.dp_allreduce_s, &t.after_sync_s);
  t.embedding_allreduce_s = policy.embedding_allreduce_s(ctx);
  t.step_s = policy.step_time_s(t.pipeline, t.dp_allreduce_s, t.embedding_allreduce_s, &t.bottleneck_stage);
  // Left out where the policy has none, so that FASOP's sum stays its own to the last bit.
  if (!t.after_sync_s.empty()) {
    for (size_t s = 1; s < t.after_sync_s.size(); ++s)
      if (t.after_sync_s[s] > t.after_sync_s[t.after_sync_stage]) t.after_sync_stage = static_cast<int>(s);
    t.step_s += t.after_sync_s[t.after_sync_stage];
  }
  return t;
}

}  // namespace

StepBreakdown CostPolicy::step_breakdown(const PlanContext& ctx, const std::vector<int>&, const std::vector<int>&,
                                 const StepResult& step) const {
  const int bottleneck = step.bottleneck_stage, microbatches = ctx.num_microbatches;
  const StageTiming& timing = step.timings[bottleneck];
  StepBreakdown terms{};
  terms.compute_s = microbatches * (timing.forward_s + timing.backward_s);
  // The sends' share: how much earlier the bottleneck stage would end without them.
  std::vector<StageTiming> silent = step.timings;
  for (StageTiming& st : silent) st.forward_send_s = st.backward_send_s = 0;
  const double end_s = step.pipeline.stage_end_s[bottleneck], silent_end_s = pipeline(ctx, silent).stage_end_s[bottleneck];
  terms.sends_s = end_s - silent_end_s;
  terms.bubble_s = silent_end_s - terms.compute_s;
  terms.dp_comm_s = step.dp_allreduce_s[bottleneck];
  terms.embedding_s = step.embedding_allreduce_s;
  if (!step.after_sync_s.empty()) terms.optimizer_s = step.after_sync_s[step.after_sync_stage];
  return terms;
}

double price_per_second_usd(const PlanContext& ctx) { return ctx.cluster->price_usd_per_s(); }

std::vector<PipelineEvent> pipeline_events(const PlanContext& ctx, const CostPolicy& policy,
                                           const std::vector<int>& partition) {
  return simulate_1f1b_events(policy.stage_timings(ctx, partition), ctx.num_microbatches);
}

double step_time_s(const PlanContext& ctx, const CostPolicy& policy, const std::vector<int>& partition) {
  return compute_step_time(ctx, policy, partition, partition).step_s;
}

PlanEstimate estimate_plan(const PlanContext& ctx, const CostPolicy& policy,
                           const std::vector<int>& partition, double iterations,
                           const std::vector<int>* timed_partition, bool with_breakdown) {
  const std::vector<int>& timed = timed_partition ? *timed_partition : partition;
  StepResult t = compute_step_time(ctx, policy, partition, timed);
  PlanEstimate e;
  e.step_time_s = t.step_s;
  e.pipeline_time_s = t.pipeline.pipeline_s;
  e.dp_allreduce_s = t.dp_allreduce_s[t.bottleneck_stage];
  e.embedding_allreduce_s = t.embedding_allreduce_s;
  e.node_price_per_step_usd = price_per_second_usd(ctx) * e.step_time_s;
  e.egress_usd_per_step = policy.egress_usd_per_step(ctx, partition);
  e.price_per_step_usd = e.node_price_per_step_usd + e.egress_usd_per_step;
  e.train_cost_usd = e.price_per_step_usd * iterations;
  e.train_time_s = e.step_time_s * iterations;
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
  if (with_breakdown) e.breakdown = policy.step_breakdown(ctx, partition, timed, t);
  return e;
}

}  // namespace fasop
