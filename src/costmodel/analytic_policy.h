#pragma once
#include "costmodel/activation_memory.h"
#include "costmodel/cost_policy.h"
#include "costmodel/stage_memory_rates.h"
#include "specs/execution.h"
#include "specs/memory_headroom.h"

namespace fasop {

/// Switches of the analytic cost model: how a step's communication runs (Execution), what memory
/// the stack holds and what a plan leaves free.
struct AnalyticOptions {
  /// The communication switches (specs/execution.h).
  Execution execution;
  /// The training stack and its settings, as they change what memory holds (stage_memory_rates.h).
  MemorySettings memory;
  /// What a plan leaves free of each GPU's memory (--memory-headroom).
  MemoryHeadroom headroom;
};

/// One micro-batch's forward + backward on a stage, by part: they add up to the stage's
/// StageTiming forward_s + backward_s.
struct StagePassParts {
  double compute_s = 0;  ///< the layers' kernels (recomputation included), tp communication excluded
  double layer_comm_s = 0;  ///< tp, cp and ep communication in the units (exposed, or what overlapping it costs)
  double gather_s = 0;   ///< ZeRO-3: the exposed parameter gathers and gradient reduce-scatters
  double overlap_s = 0;  ///< ZeRO-3: what the hidden ones cost the GEMMs (overlap_slowdown x hidden)
};

/// What a stage's data parallelism costs once a step, in seconds.
struct StageSync {
  int buckets = 1;                ///< gradient (and parameter) buckets
  double reduce_s = 0;            ///< the gradient all-reduce (ZeRO 0) or reduce-scatter (ZeRO 1-2), all buckets
  double reduce_exposed_s = 0;    ///< of it, past the last backward pass
  double reduce_overlap_s = 0;    ///< overlap_slowdown x the rest (hidden under the backward pass)
  double optimizer_s = 0;         ///< the optimizer step on the GPU's local parameters
  double gather_s = 0;            ///< the distributed optimizer's parameter all-gather (ZeRO 1-2)
  double gather_exposed_s = 0;    ///< of it, exposed
  double gather_overlap_s = 0;    ///< overlap_slowdown x the rest (hidden under the first forward)
  /// What the stage adds after its last backward pass (AnalyticPolicy::dp_allreduce_s).
  double after_pipeline_s() const { return reduce_exposed_s + reduce_overlap_s; }
  /// What it adds after the step's gradient synchronisation (AnalyticPolicy::after_sync_s).
  double after_sync_s() const { return optimizer_s + gather_exposed_s + gather_overlap_s; }
};

/// The analytic cost model: Megatron-LM's step on any cluster, beside FASOP's (fasop_policy.h)
/// and with none of its quirks: stages at their slowest GPU type, alpha-beta sends and
/// data-parallel rings over the links they cross, bucketed gradient reduction, ZeRO 0-3, the
/// optimizer step, zones and speed splits. Each term's formula, source, function and test:
/// (docs/cost-model.md#analytic-policy).
class AnalyticPolicy : public CostPolicy {
 public:
  explicit AnalyticPolicy(AnalyticOptions options = {}) : options_(options) {}
  std::string name() const override { return "analytic"; }
  const AnalyticOptions& options() const { return options_; }
  /// Its stages run at their slowest rank's type; the forward share is a third (time_passes:
  /// forward c / 3, backward 2c / 3 or more), a half with ZeRO 3, whose exposed gathers
  /// lengthen the forward pass but the backward's at least as much (it gathers the same
  /// parameters and reduce-scatters gradients no smaller, and waits on no less); it prices
  /// the zones' egress.
  FloorFacts floor_facts() const override {
    return {.analytic = &options_, .stage_type_is_slowest_rank = true,
            .forward_share_bound = {1.0 / 3, 1.0 / 3, 1.0 / 3, 0.5}, .prices_zone_egress = true};
  }
  std::vector<int> stage_node_types(const PlanContext& ctx) const override;
  double pass_time_factor(const PlanContext& ctx) const override;
  std::vector<double> boundary_send_s(const PlanContext& ctx) const override;
  std::vector<StageTiming> stage_timings(const PlanContext& ctx, const std::vector<int>& partition) const override;
  /// 1F1B as simulated; with virtual stages (v > 1) Megatron-LM's interleaved 1F1B, every rank
  /// ending together: without overlap_p2p (m + (pp - 1) / v) x the slowest rank's f + b + v x
  /// its sends; with it m x the slowest max(f + b, v x sends) + (pp - 1) / v x the slowest
  /// f + b + every stage's sends once (the fill and drain cross each boundary both ways).
  PipelineResult pipeline(const PlanContext& ctx, const std::vector<StageTiming>& stages) const override;
  /// Each stage's StageSync::after_pipeline_s.
  std::vector<double> dp_allreduce_s(const PlanContext& ctx, const std::vector<int>& partition,
                                     const std::vector<StageTiming>* timings = nullptr) const override;
  /// Each stage's StageSync::after_sync_s.
  std::vector<double> after_sync_s(const PlanContext& ctx, const std::vector<int>& partition,
                                   const std::vector<StageTiming>* timings = nullptr) const override;
  /// Both from one stage_syncs.
  void sync_s(const PlanContext& ctx, const std::vector<int>& partition, const std::vector<StageTiming>* timings,
              std::vector<double>* dp_allreduce, std::vector<double>* after_sync) const override;
  /// The terms by part (StagePassParts, StageSync) of the bottleneck stage and of the stage
  /// with the most after_sync_s; the bubble is the rest of the step.
  StepBreakdown step_breakdown(const PlanContext& ctx, const std::vector<int>& partition,
                       const std::vector<int>& timed_partition, const StepResult& step) const override;
  /// CostPolicy's bound; with interleaving the schedule's own closed form (the 1F1B bound does
  /// not hold for it).
  double step_time_lower_bound(const PlanContext& ctx, const std::vector<int>& partition) const override;
  double embedding_allreduce_s(const PlanContext& ctx) const override;
  /// The egress of the step's traffic between zones (zone_egress.h); 0 in one zone.
  double egress_usd_per_step(const PlanContext& ctx, const std::vector<int>& partition) const override;
  std::vector<StageMemory> stage_memory(const PlanContext& ctx, const std::vector<int>& partition) const override;
  MemoryVerdict memory_verdict(const std::vector<StageMemory>& stages) const override;
  std::optional<MemoryModel> memory_model(const PlanContext& ctx) const override;

  /// Each stage's micro-batch by part (stage_timings' forward_s + backward_s).
  std::vector<StagePassParts> pass_parts(const PlanContext& ctx, const std::vector<int>& partition) const;
  /// Each stage's data-parallel costs once a step. `timings`, if given, are
  /// stage_timings(ctx, partition) (the overlaps' windows).
  std::vector<StageSync> stage_syncs(const PlanContext& ctx, const std::vector<int>& partition,
                                     const std::vector<StageTiming>* timings = nullptr) const;

  /// Bytes a parameter costs on one GPU for the whole step on Megatron-Core when training in
  /// `dtype`: weights, gradients (bf16 with `bf16_gradients`, Megatron's --grad-reduce-in-bf16)
  /// and optimizer state, the parts ZeRO stage `zero_stage` shards over `dp` divided by it
  /// (static_bytes_per_param).
  static double bytes_per_param(int zero_stage, int dp, const std::string& dtype = "bf16", bool bf16_gradients = false);
  /// The same for `model`'s precision and its grad_reduce_in_bf16.
  static double bytes_per_param(int zero_stage, int dp, const ModelSpec& model);
  /// Bytes a gradient takes, and its all-reduce moves, per parameter when training in `dtype`.
  static double gradient_bytes(const std::string& dtype, bool bf16_gradients = false);
  /// The same for `model`'s precision and its grad_reduce_in_bf16.
  static double gradient_bytes(const ModelSpec& model);
  /// Megatron-Core's gradient bucket size at data-parallel degree `dp`: `bucket_params`, or
  /// where 0 its default max(40e6, 1e6 x dp) parameters.
  static double gradient_bucket_params(int dp, double bucket_params = 0);
  /// Its buckets of `params` parameters: ceil(params / gradient_bucket_params).
  static int gradient_buckets(double params, int dp, double bucket_params = 0);
  /// Seconds exposed of `buckets` collectives of `bucket_s` each, run one after another on one
  /// stream as a pass of `window_s` seconds produces (or consumes) their data uniformly, bucket
  /// i at window_s (i + 1) / K, after `slack_s` seconds in which nothing waits for them:
  /// max(0, max(c, K c - W (K - 1) / K) - slack). The last bucket is exposed at least.
  static double bucketed_exposed_s(int buckets, double bucket_s, double window_s, double slack_s = 0);
  /// Adam's memory traffic per local parameter: the fp32 gradient read (4), the master weight
  /// and both moments read and written (12 + 12), the 16-bit weight written (2), and the
  /// gradient norm's pass over the gradient for clipping (4).
  static constexpr double kOptimizerBytesPerParam = 34;
  /// Seconds of Adam's step over `local_params` parameters on `gpu` training in `dtype`: their
  /// kOptimizerBytesPerParam at its memory bandwidth x memory_share (0 where it has none).
  static double optimizer_step_s(const GpuSpec& gpu, const std::string& dtype, double local_params);

 private:
  /// A stage's forward and backward kernels from its units' `compute` (1/3 and 2/3, plus what
  /// the backward recomputes); time_stage adds the ZeRO-3 gathers and the sends.
  static void time_passes(const PlanContext& ctx, double compute, StageTiming& timing);
  /// Stage `stage`'s timing (`first`: its first unit) and its parts.
  void time_stage(const PlanContext& ctx, const std::vector<int>& partition, int stage, int first,
                  StageTiming& timing, StagePassParts& parts) const;
  AnalyticOptions options_;
};

/// Parameters of one pipeline unit of `model` on one GPU at tensor-parallel degree `tp`, its
/// routed experts apart (unit_expert_params): what the stage's cp x dp GPUs replicate.
double unit_params(const ModelSpec& model, const LayerUnit& unit, int tp);
/// A tied head's weight on one GPU where it shares its stage with the embedding (pp 1): one
/// tensor, which the units' unit_params count twice. 0 otherwise.
double shared_head_params(const ModelSpec& model, int pp, int tp);
/// The parameters on one GPU of the whole model on one stage at `tp`: every unit's, a tied
/// head's weight once.
double one_stage_params(const ModelSpec& model, int tp);
/// Parameters of a MoE unit's routed experts on one GPU (experts / ep of them, each split over
/// etp), which the expert-data-parallel GPUs replicate; 0 for other units.
double unit_expert_params(const ModelSpec& model, const LayerUnit& unit, int ep, int etp);
/// GPUs that replicate the routed experts of a stage of tp x cp x dp GPUs with expert
/// parallelism ep and expert tensor parallelism etp: tp x cp x dp / (ep x etp).
int expert_data_parallel(const PlanKey& key);
/// Parameters on one GPU of stage `stage` of `partition` (the memory model's prefix sums),
/// routed experts apart.
double stage_params(const PlanContext& ctx, const std::vector<int>& partition, int stage);
/// The routed experts' parameters on one GPU of stage `stage` of `partition` (0: a dense model).
double stage_expert_params(const PlanContext& ctx, const std::vector<int>& partition, int stage);
/// Bytes of `samples` sequences' activations at a stage boundary, split over `lanes`
/// tensor-parallel ranks: one lane's share.
double activation_message_bytes(const ModelSpec& model, double samples, int lanes);
/// Bytes one rank sends across the pipeline boundary from stage `from` to stage `to`, one
/// micro-batch's activations (or their gradients back): its 1/tp share of the side with fewer
/// replicas (1/min(tp) where the two stages' tp differ).
double boundary_send_bytes(const PlanContext& ctx, int from, int to);
/// True when tied embeddings add an all-reduce between the first and the last stage: the
/// model ties them, has an output head, and has more than one stage.
bool syncs_tied_embedding(const ModelSpec& model, int pp);
/// The share of a forward pass's FLOPs `mode`'s selective recomputation repeats in GEMMs:
/// torchtitan's per-op checkpointing's matmuls, else Megatron's recomputed modules'.
double recomputed_gemm_share(const ModelSpec& model, const ActivationMode& mode);
/// Forward + backward time under `mode` over the same without recomputation (full
/// recomputation repeats the forward, selective its modules' share of it), as AnalyticPolicy
/// times passes.
double recompute_time_factor(const ModelSpec& model, const ActivationMode& mode);

}  // namespace fasop
