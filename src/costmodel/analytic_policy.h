#pragma once
#include "costmodel/cost_policy.h"

namespace fasop {

/// Switches of the analytic cost model.
struct AnalyticOptions {
  bool overlap_dp_allreduce = true;  ///< the gradient all-reduce overlaps the last backward pass
};

/// A cost model for any cluster, beside FASOP's (fasop_policy.h), with none of its quirks:
/// - a stage runs on the GPUs of its ranks (Megatron order: tp, then dp, then stage) at the pace
///   of the slowest node type among them, within the smallest GPU memory among them;
/// - every point-to-point send is an alpha-beta message (latency + bytes / bandwidth) of one
///   micro-batch's activations, 1/tp of them per rank (Megatron's scatter/gather), over the
///   link it crosses: inside a node, or the node's network shared by its GPUs of the stage;
///   sends of every stage are simulated in 1F1B;
/// - each stage's data-parallel all-reduce is a ring over its own parameters' fp32 gradients on
///   the slowest link of its ring (2(d-1)/d x bytes / bandwidth + 2(d-1) latencies), exposed
///   only past the last backward pass when it overlaps; tied embeddings add an all-reduce
///   between the first and last stage;
/// - memory per GPU: Megatron's bytes a parameter with mixed-precision Adam (18 for bf16, 20 for
///   fp16; bytes_per_param), ZeRO-1 sharding the optimizer's, ZeRO-2 the gradients' too,
///   ZeRO-3 all over dp; activations per Korthikanti et al. for the micro-batches a 1F1B
///   stage holds (min(pp - stage, m)), only each layer's input with full recomputation;
/// - ZeRO-3 gathers each stage's parameters before every forward and backward pass; full
///   recomputation repeats the forward inside the backward pass.
class AnalyticPolicy : public CostPolicy {
 public:
  explicit AnalyticPolicy(AnalyticOptions options = {}) : options_(options) {}
  std::string name() const override { return "analytic"; }
  std::vector<int> stage_node_types(const PlanContext& ctx) const override;
  std::vector<double> boundary_send_s(const PlanContext& ctx) const override;
  std::vector<StageTiming> stage_timings(const PlanContext& ctx, const std::vector<int>& partition) const override;
  /// 1F1B as simulated; with virtual stages (v > 1) Megatron-LM's interleaved 1F1B: the
  /// bubble (pp - 1) / v of the slowest rank's micro-batch time, v times the sends.
  PipelineResult pipeline(const PlanContext& ctx, const std::vector<StageTiming>& stages) const override;
  std::vector<double> dp_allreduce_s(const PlanContext& ctx, const std::vector<int>& partition,
                                     const std::vector<StageTiming>* timings = nullptr) const override;
  double embedding_allreduce_s(const PlanContext& ctx) const override;
  std::vector<StageMemory> stage_memory(const PlanContext& ctx, const std::vector<int>& partition) const override;
  MemoryVerdict memory_verdict(const std::vector<StageMemory>& stages) const override;
  std::optional<MemoryModel> memory_model(const PlanContext& ctx) const override;

  /// Bytes a parameter costs on one GPU when training in `dtype`: weights, gradients and
  /// optimizer state, the parts ZeRO stage `zero_stage` shards over `dp` divided by it.
  static double bytes_per_param(int zero_stage, int dp, const std::string& dtype = "bf16");
  /// Bytes a gradient all-reduce moves per parameter when training in `dtype`.
  static double gradient_bytes(const std::string& dtype);

 private:
  /// The ring all-reduce of stage `stage` over `bytes`, before any overlap.
  double ring_allreduce_s(const PlanContext& ctx, int stage, double bytes) const;
  AnalyticOptions options_;
};

/// Parameters of one pipeline unit of `model` on one GPU at tensor-parallel degree `tp`.
double unit_params(const ModelSpec& model, const LayerUnit& unit, int tp);
/// How a plan keeps activations: Megatron-LM's recomputation modes and sequence parallelism.
struct ActivationMode {
  bool full_recompute = false;     ///< a transformer layer keeps only its input
  bool selective = false;          ///< attention's softmax and dropout are recomputed, not kept
  bool sequence_parallel = false;  ///< what tp replicates is split over the sequence
};
/// The mode of a plan (selective only without full recomputation, sequence parallelism only
/// with tp > 1).
ActivationMode activation_mode(const PlanKey& key);
/// Activation bytes one micro-batch leaves in one GPU's memory for unit `unit` (Korthikanti
/// et al. 2022, Table 2, per mode; no score matrix with fused attention).
double unit_activation_bytes(const ModelSpec& model, const LayerUnit& unit, int tp, int mbs, const ActivationMode& mode);

}  // namespace fasop
