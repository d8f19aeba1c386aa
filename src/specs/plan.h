#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "specs/moe_dispatcher.h"
#include "specs/recompute_modules.h"

namespace fasop {

/// Activation recomputation as Megatron-LM names it.
enum class RecomputeMode { kNone, kSelective, kFull };

/// The name of a recomputation mode: none, selective or full.
inline const char* recompute_name(RecomputeMode mode) {
  return mode == RecomputeMode::kFull ? "full" : mode == RecomputeMode::kSelective ? "selective" : "none";
}

/// The mode a name (none, selective or full) stands for; none for another name.
inline std::optional<RecomputeMode> recompute_mode_named(const std::string& name) {
  for (RecomputeMode mode : {RecomputeMode::kNone, RecomputeMode::kSelective, RecomputeMode::kFull})
    if (name == recompute_name(mode)) return mode;
  return std::nullopt;
}

/// The parallel layout of a candidate plan, without its layer partition.
struct PlanKey {
  int mbs = 1;  ///< micro-batch size
  int tp = 1;   ///< tensor-parallel degree
  int dp = 1;   ///< data-parallel degree
  int pp = 1;   ///< pipeline stages
  std::vector<int> node_order = {};  ///< node type of each node, in rank order
  int zero_stage = 0;      ///< ZeRO 0-3: what of optimizer state, gradients, parameters dp shards
  bool recompute = false;  ///< full activation recomputation: keep each layer's input, redo its forward
  /// Megatron-LM's selective recomputation: the modules of recompute_modules are recomputed, by
  /// default Korthikanti et al.'s (2022) attention core, its softmax, dropout and attention over
  /// values (ignored with `recompute`).
  bool selective_recompute = false;
  /// With selective_recompute: the modules Megatron-Core recomputes (--recompute-modules,
  /// recompute_modules.h); core attention alone by default, as Megatron-Core's default.
  RecomputeModules recompute_modules = kDefaultRecomputeModules;
  /// Megatron-LM's sequence parallelism: tp's all-reduces become reduce-scatters and
  /// all-gathers, and the norms and dropouts work on 1/tp of the sequence.
  bool sequence_parallel = false;
  /// Megatron-LM's interleaved 1F1B: model chunks (virtual stages) per pipeline rank; 1 is the
  /// plain 1F1B schedule.
  int virtual_stages = 1;
  /// Metis-style data parallelism per stage (empty: dp on every stage). Stage s then has
  /// stage_dp[s] replicas of tp GPUs; dp is the largest, and a pipeline micro-batch of
  /// mbs x dp samples is split over each stage's replicas (mbs x dp / stage_dp[s] each).
  std::vector<int> stage_dp = {};
  /// Sailor-style tensor parallelism per stage (empty: tp on every stage). Stage s then has
  /// stage_tp[s] x its dp GPUs (tp lanes fastest in rank order); tp is the largest. A node
  /// type's stages share one tp (its layers are timed at it).
  std::vector<int> stage_tp = {};
  /// Sailor-style uneven data parallelism: mbs x dp need not divide the global batch (nor a
  /// stage's replicas the pipeline micro-batch); replicas take the floor or the ceiling of their
  /// share and the step waits for the one with the most micro-batches (batch_split.h).
  bool uneven_dp = false;
  /// Metis-style speed split: in a stage whose data-parallel replicas sit on different node
  /// types, the stage's samples per pipeline micro-batch (mbs x dp, over its stage_dp[s]
  /// replicas with per-stage dp) go to its replicas in proportion to their speed, so that the
  /// slowest replica's time is least (costmodel/speed_split.h); a stage on one node type is
  /// unchanged. Off: every replica of a stage takes the same share at its slowest type's pace.
  bool speed_split = false;
  // Beyond pipeline, tensor and data parallelism (at the end: keys are aggregates built in order).
  /// Context parallelism (Megatron-LM's --context-parallel-size): each sequence is split over
  /// cp GPUs, which attend across the split by ring attention. A stage has tp x cp x dp GPUs,
  /// tp fastest, then cp, then dp (Megatron's rank order); gradients reduce over cp x dp.
  int cp = 1;
  /// Expert parallelism: each MoE layer's experts are split over ep GPUs of the stage's
  /// tp x cp x dp (Megatron-Core's MoE parallel folding); tokens reach them by all-to-all.
  int ep = 1;
  /// Expert tensor parallelism: each expert's MLP is split over etp GPUs (ep x etp divides the
  /// stage's tp x cp x dp GPUs).
  int etp = 1;
  /// The training precision a search chose (a dtype of precision.h: bf16, fp8, ...); empty: the
  /// model's own dtype.
  std::string precision{};  // {}: brace-built keys may leave it out (-Wmissing-field-initializers)
  /// The MoE token dispatcher (Megatron-LM's --moe-token-dispatcher-type, and flex's
  /// --moe-flex-dispatcher-backend): how each MoE layer moves its tokens to the experts' GPUs
  /// and back (profiles/moe_dispatch.h). alltoall for a dense model or ep 1.
  MoeDispatcher moe_dispatcher = MoeDispatcher::kAlltoall;

  RecomputeMode recompute_mode() const {
    return recompute ? RecomputeMode::kFull : selective_recompute ? RecomputeMode::kSelective : RecomputeMode::kNone;
  }
  /// The modules recomputed in this plan: recompute_modules under selective recomputation,
  /// none without it or under full recomputation.
  RecomputeModules recomputed_modules() const {
    return recompute_mode() == RecomputeMode::kSelective ? recompute_modules : 0;
  }
  /// Whether the plan recomputes modules other than Megatron-Core's default (attention's core
  /// alone), which --recompute-modules and the reports then name.
  bool names_recompute_modules() const {
    return recomputed_modules() != 0 && recomputed_modules() != kDefaultRecomputeModules;
  }
  void set_recompute(RecomputeMode mode) {
    recompute = mode == RecomputeMode::kFull;
    selective_recompute = mode == RecomputeMode::kSelective;
  }
  /// Stage `stage`'s tensor- and data-parallel degrees (stage_tp, stage_dp where given).
  int tp_of_stage(int stage) const { return stage_tp.empty() ? tp : stage_tp[stage]; }
  int dp_of_stage(int stage) const { return stage_dp.empty() ? dp : stage_dp[stage]; }
  /// The GPUs of one data-parallel replica of stage `stage`: tp x cp (Megatron's rank order: tp
  /// fastest, then cp, then dp). A degree that multiplies a replica's GPUs joins here alone.
  int replica_gpus(int stage) const { return tp_of_stage(stage) * cp; }
  /// The GPUs of stage `stage`: its dp replicas of replica_gpus.
  int stage_gpus(int stage) const { return replica_gpus(stage) * dp_of_stage(stage); }
  /// The plan's GPUs, every stage's.
  long long num_gpus() const {
    long long gpus = 0;
    for (int stage = 0; stage < pp; ++stage) gpus += 1LL * replica_gpus(stage) * dp_of_stage(stage);
    return gpus;
  }
};

/// A plan's recomputation as text: none, full, selective, or with modules other than Megatron-
/// Core's default the modules after a colon, joined by `separator`: "selective:mla_up_proj/moe_act".
inline std::string recompute_text(const PlanKey& key, const std::string& separator = "/") {
  std::string text = recompute_name(key.recompute_mode());
  if (key.names_recompute_modules()) text += ":" + recompute_modules_text(key.recompute_modules, separator);
  return text;
}

/// A candidate plan: its layout and the number of pipeline units on each stage.
struct Plan {
  PlanKey key;
  std::vector<int> partition;
};

}  // namespace fasop
