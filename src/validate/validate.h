#pragma once
// validate: the cost model's predictions against published measurements (validation cases,
// src/specs/validation_case.h), per case and per set.
#include <string>
#include <vector>

#include "costmodel/analytic_policy.h"
#include "costmodel/estimate.h"
#include "specs/spec_store.h"
#include "specs/validation_case.h"
#include "validate/gemm_sweep.h"

namespace fasop {

/// One case predicted.
struct ValidationResult {
  ValidationCase c;
  int mbs = 0;               ///< the micro-batch size predicted (a range: its middle size)
  bool mbs_chosen = false;   ///< true: the source states none; the case assumes it (or a range)
  std::vector<int> partition;  ///< units per stage (Megatron's: embedding first, head last)
  double measured_step_s = 0;
  double predicted_step_s = 0;  ///< a range: the middle of the span
  double predicted_min_s = 0, predicted_max_s = 0;  ///< over the micro-batch sizes predicted
  PlanEstimate estimate;         ///< the prediction at `mbs`, with the step's terms
  double error_pct = 0;        ///< (predicted - measured) / measured x 100
  double predicted_memory_gib = 0;  ///< peak over stages, per GPU, of what the process takes of it
  bool fits = true;            ///< the predicted memory fits the GPU (no headroom: did the run fit?)
  // A measured memory (c.measurement.memory.peak_gib > 0) against the same figure predicted.
  int memory_stage = 0;               ///< the stage whose GPU the figure is of (the last, or the largest)
  MemoryBreakdown memory_breakdown;   ///< that stage's terms at its worst moment
  double predicted_figure_gib = 0;    ///< the measured figure (max allocated or reserved) predicted
  double memory_error_pct = 0;        ///< (predicted - measured) / measured x 100
  double predicted_after_step_gib = 0;  ///< what stays allocated after the optimizer step
  double after_step_error_pct = 0;      ///< against allocated_after_step_gib, where given
};

/// A set's summary: its step times' errors, and its memory's where measured.
struct ValidationSummary {
  std::string set;
  int cases = 0;  ///< cases with a step time
  double mean_abs_error_pct = 0;
  std::string worst_case{};
  double worst_error_pct = 0;  ///< signed, the largest in absolute value
  int memory_cases = 0;        ///< cases with a peak memory
  double memory_mean_abs_error_pct = 0;
  std::string memory_worst_case{};
  double memory_worst_error_pct = 0;
  int not_fitting = 0;  ///< runs (they all ran) predicted not to fit their GPUs
};

/// Loads cases from `paths` (files, or directories of *.yaml files read in name order); a path
/// that is not on disk but names the shipped cases' directory (validation/..., embedded) reads
/// those. No paths: every shipped case. Cases come sorted by set, then GPUs, then file.
std::vector<ValidationCase> load_validation_cases(const std::vector<std::string>& paths, const SpecStore& store,
                                                  const TextSource& disk);

/// Step-time cases and layer-time cases, as loaded.
struct ValidationInputs {
  std::vector<ValidationCase> cases;
  std::vector<LayerTimeCase> layer_cases;
  std::vector<GemmSweep> gemm_sweeps;  ///< kind: gemm_times
};
/// As load_validation_cases, with the layer-time cases (kind: layer_times) and GEMM sweeps
/// (kind: gemm_times) kept apart.
ValidationInputs load_validation_inputs(const std::vector<std::string>& paths, const SpecStore& store,
                                        const TextSource& disk);

/// The shipped cases' paths (embedded into the binary), sorted.
std::vector<std::string> shipped_validation_files();

/// Megatron-LM's partition of the case's model: layers / pp transformer layers a stage, the
/// embedding on the first stage, the post-process unit on the last.
std::vector<int> megatron_partition(const ModelSpec& model, int pp);

/// The cluster a case ran on: its node type, gpus / gpus_per_node nodes of it.
ClusterSpec case_cluster(const ValidationCase& c);

/// The analytic policy's options for a case: its switches and memory settings, and no headroom
/// (whether the run fit is a question of its GPUs' whole memory).
AnalyticOptions case_analytic_options(const ValidationCase& c);

/// Predicts one case with the analytic profiles and the analytic cost policy.
ValidationResult predict_case(const ValidationCase& c);

/// Per set (in order of first appearance): mean absolute error and the worst case.
std::vector<ValidationSummary> summarize(const std::vector<ValidationResult>& results);

/// The table `fasop-cpp validate` prints (rows unless `quiet`, then the sets' summaries).
std::string validation_text(const std::vector<ValidationResult>& results, bool quiet);
/// The rows as CSV: set, case, the layout, the step times and their terms, the memory measured
/// against predicted and the predicted memory's terms (a column each, GiB).
std::string validation_csv(const std::vector<ValidationResult>& results);

}  // namespace fasop
