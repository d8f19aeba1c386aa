#pragma once
#include <vector>

namespace fasop {

/// A step's time as a sum of named terms, in seconds (PlanEstimate::breakdown). They add up to
/// the step time along the path that sets it: the bottleneck stage's pipeline, then the slowest
/// stage after the gradient synchronisation (docs/cost-model.md#step-terms).
struct StepBreakdown {
  double compute_s = 0;       ///< the bottleneck stage's m x (forward + backward) kernels, tp communication excluded
  double bubble_s = 0;        ///< the rest of the pipeline on that stage: fill, drain and waiting
  double layer_comm_s = 0;    ///< m x the stage's exposed tp, cp and ep communication (reports: tp_comm)
  double sends_s = 0;         ///< what the point-to-point sends add to the pipeline
  double dp_comm_s = 0;       ///< exposed gradient reduction, parameter all-gather and ZeRO-3 gathers
  double overlap_cost_s = 0;  ///< what hidden communication costs the GEMMs (GpuSpec::overlap_slowdown)
  double optimizer_s = 0;     ///< the optimizer step
  double embedding_s = 0;     ///< the tied embedding's all-reduce
  /// The step: the only place the terms are added.
  double total_s() const;
};

/// One term of StepBreakdown as the reports name it: `name` is the JSON key, the CSV column with
/// "_s" and the text with spaces ("tp_comm": tp_comm_s, "tp comm").
struct StepTermField {
  const char* name;
  double StepBreakdown::*seconds;
};

/// Every term, in the order total_s adds them and every report lists them.
const std::vector<StepTermField>& step_term_fields();

}  // namespace fasop
