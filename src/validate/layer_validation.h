#pragma once
// validate, layer by layer: the analytic layer model (profiles/analytic_profile.h) against
// measured layer times (layer-time cases, specs/validation_case.h), summarised per set and GPU.
#include <string>
#include <vector>

#include "specs/validation_case.h"

namespace fasop {

/// One measured pass of one unit, predicted.
struct LayerPointResult {
  std::string set, case_name, gpu, unit, pass;  ///< pass: forward, backward or fwd+bwd (measured together)
  int tp = 1, mbs = 1;
  double measured_s = 0, predicted_s = 0;
  double error_pct = 0;  ///< (predicted - measured) / measured x 100
};

/// Every measured pass of a case (forward, and backward where measured), predicted with the
/// case's stack on its node type's GPU data.
std::vector<LayerPointResult> predict_layer_case(const LayerTimeCase& c);

/// A set's points on one GPU type.
struct LayerSummary {
  std::string set, gpu;
  int points = 0;
  double median_abs_error_pct = 0;
  double worst_error_pct = 0;  ///< signed, the largest in absolute value
  std::string worst_point;     ///< case unit tp/mbs pass
};
std::vector<LayerSummary> summarize_layers(const std::vector<LayerPointResult>& results);

/// The text `validate` prints for layer sets (points unless `quiet`, then the summaries).
std::string layer_validation_text(const std::vector<LayerPointResult>& results, bool quiet);
/// The points as CSV: set,case,gpu,unit,tp,mbs,pass,measured_s,predicted_s,error_pct.
std::string layer_validation_csv(const std::vector<LayerPointResult>& results);

}  // namespace fasop
