#pragma once
// The GPU efficiencies of a validation set's node type fitted to some of its cases, so that
// the others measure the fitted model on runs it has not seen (`validate --fit`).
#include <vector>

#include "specs/validation_case.h"

namespace fasop {

/// What --fit found.
struct EfficiencyFit {
  double compute_efficiency = 0;  ///< share of dense peak the GEMMs reach
  double memory_efficiency = 0;   ///< share of memory bandwidth element-wise kernels reach
  double mean_abs_error_pct = 0;  ///< over the fitted cases
};

/// The compute and memory efficiencies (the fields of a node type, the same for every case)
/// minimising the mean absolute error of `cases`: a grid of 0.02 steps (compute 0.30-0.98,
/// memory 0.40-0.90, the most element-wise kernels reach), then of 0.005 around its best.
/// Deterministic.
EfficiencyFit fit_efficiencies(const std::vector<ValidationCase>& cases);

/// `cases` with every node type's efficiencies set to `fit`'s.
std::vector<ValidationCase> with_efficiencies(std::vector<ValidationCase> cases, const EfficiencyFit& fit);

}  // namespace fasop
