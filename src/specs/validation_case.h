#pragma once
// A validation case: one published training run (model, hardware, parallel layout, measured
// step time) that `fasop-cpp validate` compares the cost model's prediction against.
// One small YAML file per case; see README.md, "Validation".
#include <string>

#include "specs/cluster_spec.h"
#include "specs/model_spec.h"
#include "specs/plan.h"
#include "specs/spec_store.h"

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
  int gpus = 0;
  int tp = 1;
  int pp = 1;
  int dp = 1;
  int global_batch = 0;
  int micro_batch = 0;  ///< 0: not stated (validate tries every size and keeps the fastest that fits)
  RecomputeMode recompute = RecomputeMode::kNone;
  bool sequence_parallel = false;
  int virtual_stages = 1;  ///< interleaved 1F1B's model chunks per pipeline rank (1: plain 1F1B)
  bool distributed_optimizer = false;  ///< ZeRO-1: optimizer state sharded over dp
  bool overlap_grad_reduce = false;    ///< the dp gradient all-reduce overlaps the backward pass
  bool overlap_tp_comm = false;        ///< tensor-parallel communication overlaps the GEMMs
};

/// What was measured: a step time, or a throughput with the FLOP formula that turns it into one
/// (the conversion lives in src/validate/measurement.h).
struct ValidationMeasurement {
  double step_s = 0;          ///< seconds per training step, when given directly (else 0)
  double tflops_per_gpu = 0;  ///< model TFLOP/s per GPU, when given instead
  std::string flop_formula;   ///< with tflops_per_gpu: e.g. megatron-narayanan-2021
  double memory_gib_per_gpu = 0;  ///< optional peak memory per GPU (0: not given)
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

/// Parses and checks a case (`source` names the file in messages); presets (model and cluster)
/// are resolved through `store`. Every problem throws SpecError naming the file and the field.
ValidationCase parse_validation_case(const std::string& yaml_text, const std::string& source,
                                     const SpecStore& store);

}  // namespace fasop
