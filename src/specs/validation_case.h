#pragma once
// A validation case: one published training run (model, hardware, parallel layout, measured
// step time) that `fasop-cpp validate` compares the cost model's prediction against.
// One small YAML file per case; see docs/validation.md.
#include <string>
#include <vector>

#include "specs/cluster_spec.h"
#include "specs/execution.h"
#include "specs/model_spec.h"
#include "specs/plan.h"
#include "specs/spec_store.h"
#include "specs/training_stack.h"

namespace fasop {

/// Where the measurement was published.
struct ValidationSource {
  std::string title;  ///< paper or document
  std::string table;  ///< table or figure in it
  std::string url;    ///< optional
  std::string date;   ///< of publication
};

/// The layout the measured run used (Megatron-LM's terms).
struct ValidationPlan {
  int gpus = 0;  ///< tp x pp x cp x dp
  /// The run's degrees: tp, pp, dp and plan_degrees()' (cp, ep, etp), read as plan files read
  /// them; validate sets the rest of the key for each prediction.
  PlanKey key;
  int global_batch = 0;
  /// The micro-batch size predicted: as the source states it (micro_batch), or as the case
  /// assumes where the source is silent (micro_batch_assumed, with the reason in
  /// micro_batch_assumption). 0 with a range: every size in [micro_batch_min, micro_batch_max]
  /// that divides the batch is predicted, and the case reports the span.
  int micro_batch = 0;
  bool micro_batch_stated = true;
  std::string micro_batch_assumption;  ///< why, where not stated
  int micro_batch_min = 0, micro_batch_max = 0;  ///< field micro_batch_range: [MIN, MAX]
  RecomputeMode recompute = RecomputeMode::kNone;
  /// With selective recomputation: Megatron-Core's --recompute-modules (core attention by default).
  RecomputeModules recompute_modules = kDefaultRecomputeModules;
  bool sequence_parallel = false;
  int virtual_stages = 1;  ///< interleaved 1F1B's model chunks per pipeline rank (1: plain 1F1B)
  /// Megatron's --pipeline-model-parallel-layout where the run placed its layers unevenly (field
  /// pipeline_layout, specs/pipeline_layout.h); empty: layers / (pp x virtual_stages) a chunk.
  std::string pipeline_layout;
  std::vector<int> layout_units;  ///< pipeline units per rank that layout places (empty without one)
  bool distributed_optimizer = false;  ///< ZeRO-1: optimizer state sharded over dp
  /// How the run overlapped and reduced its communication (fields overlap_grad_reduce and
  /// execution_fields(); each false where not given, as Megatron-LM's defaults).
  Execution execution{.overlap_grad_reduce = false};
  bool fsdp = false;                   ///< parameters, gradients and optimizer sharded over dp (ZeRO-3, FSDP)
  /// The stack that ran it and its memory-relevant settings (fields stack, transformer_engine,
  /// gradient_accumulation_fusion, cross_entropy_fusion, activation_offload_layers, compile,
  /// compile_loss, async_tp, float8_all_gather).
  MemorySettings memory;
};

/// Which figure a memory measurement reports: PyTorch's caching allocator's peak of allocated
/// bytes (torch.cuda.max_memory_allocated) or of reserved bytes (max_memory_reserved).
enum class MemoryFigure { kMaxAllocated, kMaxReserved };
/// Whose: the job's last rank (world_size - 1: Megatron-LM's TensorBoard writer), or the
/// largest over every rank.
enum class MeasuredRank { kLast, kMax };

/// A measured peak memory per GPU (field measurement.memory: {figure, rank, peak_gib,
/// allocated_after_step_gib?}).
struct MemoryMeasurement {
  MemoryFigure figure = MemoryFigure::kMaxAllocated;
  MeasuredRank rank = MeasuredRank::kMax;
  double peak_gib = 0;                 ///< 0: no memory measured
  double allocated_after_step_gib = 0; ///< what stays allocated after the optimizer step (0: not given)
};

/// What was measured: a step time, or a throughput with the FLOP formula that turns it into one
/// (the conversion lives in src/validate/measurement.h), and or a peak memory per GPU.
struct ValidationMeasurement {
  double step_s = 0;          ///< seconds per training step, when given directly (else 0)
  double tflops_per_gpu = 0;  ///< model TFLOP/s per GPU, when given instead
  std::string flop_formula;   ///< with tflops_per_gpu: e.g. megatron-narayanan-2021
  double tokens_per_s_per_gpu = 0;  ///< a throughput in tokens: step_s = global_batch x sequence / (this x gpus)
  MemoryMeasurement memory;     ///< optional (peak_gib 0: none)
  /// Whether a step time (or a throughput) was measured: a case may measure memory alone.
  bool has_step() const { return step_s > 0 || tflops_per_gpu > 0 || tokens_per_s_per_gpu > 0; }
};

/// One validation case, its presets resolved.
struct ValidationCase {
  std::string file;  ///< the file (or embedded path) it was read from, for messages
  std::string set;   ///< e.g. megatron-a100-2021
  std::string name;  ///< field `case`, e.g. gpt-1.7b
  ValidationSource source;
  std::string node_type_ref;  ///< "PRESET_OR_FILE/NAME" for a cluster's node type, "inline" otherwise
  NodeType node_type;
  std::string model_ref;  ///< the preset's name, or "inline"
  ModelSpec model;        ///< global_batch is the plan's
  ValidationPlan plan;
  ValidationMeasurement measurement;
  std::string notes;
};

/// One measured layer time: a pipeline unit's forward (and, where measured, backward) seconds.
struct LayerTimePoint {
  std::string unit;  ///< the model's unit type, e.g. transformer
  int tp = 1;
  int mbs = 1;
  double forward_s = 0;
  double backward_s = 0;  ///< 0: not measured
  double forward_backward_s = 0;  ///< measured together instead (Metis): 0 where forward_s is given
};

/// A layer-time case (`kind: layer_times`): one measured profile of a model on a GPU, the
/// analytic layer model's check layer by layer.
struct LayerTimeCase {
  std::string file;
  std::string set;
  std::string name;
  ValidationSource source;
  std::string node_type_ref;
  NodeType node_type;
  std::string model_ref;
  ModelSpec model;
  Stack stack = Stack::kMegatron;  ///< the software that ran the layers
  /// Whether the times include tensor-parallel communication (false for single-process
  /// profiles of one GPU's shard: field tp_comm_included).
  bool tp_comm_included = true;
  std::vector<LayerTimePoint> points;
  std::string notes;
};

/// True when the YAML text is a layer-time case (kind: layer_times).
bool is_layer_time_case(const std::string& yaml_text);
/// Parses and checks a layer-time case; errors name the file and field.
LayerTimeCase parse_layer_time_case(const std::string& yaml_text, const std::string& source, const SpecStore& store);

/// Parses and checks a case (`source` names the file in messages); presets (model and cluster)
/// are resolved through `store`. Every problem throws SpecError naming the file and the field.
ValidationCase parse_validation_case(const std::string& yaml_text, const std::string& source,
                                     const SpecStore& store);

}  // namespace fasop
