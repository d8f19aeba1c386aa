#pragma once
#include <algorithm>
#include <vector>

#include "costmodel/memory_terms.h"

namespace fasop {

/// A stage's memory as linear functions of its units, one per moment of the step (forward,
/// backward, optimizer step; stage_memory_rates.h): its parameters, routed experts' parameters
/// and one sample's activations, summed over the units from prefix sums, times each moment's
/// rates. The exact partitioner checks a stage [first, end) against its GPU in O(1); the reports
/// take the terms of its worst moment.
struct MemoryModel {
  std::vector<double> params_prefix;      ///< parameters (per GPU) of units [0, u)
  std::vector<double> activation_prefix;  ///< activation bytes of one sample, units [0, u)
  /// Per-stage tp (PlanKey::stage_tp): stage s holds the parameters and activations of prefix
  /// table stage_table[s], one table per tp, since a unit's share on a GPU is not one factor of
  /// another tp's (norms stay whole). Empty: the two prefixes above serve every stage; with
  /// tables they hold the largest tp's, the least any stage holds, as bounds need.
  std::vector<int> stage_table;
  std::vector<std::vector<double>> table_params_prefix, table_activation_prefix;
  /// A MoE model's routed experts (PlanKey::ep): their parameters per GPU, units [0, u). Empty
  /// for a dense model.
  std::vector<double> expert_params_prefix;
  /// The moments' rates of the stages (per_activation: per byte of the samples a stage holds),
  /// each set once: middle stages alike share theirs (stage_rates indexes it, per stage).
  std::vector<std::vector<MomentRates>> moments;
  std::vector<int> stage_rates;
  /// Per stage: the samples whose activations it holds at its peak (micro-batches in flight x
  /// samples a micro-batch on one GPU).
  std::vector<double> held_samples;
  /// The device bytes of one moment, per unit of each quantity: the rates' terms summed.
  struct MomentTotals {
    double per_param = 0, per_expert_param = 0, per_activation = 0, fixed = 0;
  };
  /// Per set of moments (moments's order), per moment: the totals, for the O(1) checks.
  std::vector<std::vector<MomentTotals>> totals;
  std::vector<double> limit_bytes;     ///< per stage: the GPU memory a plan may use (capacity less headroom)
  std::vector<double> capacity_bytes;  ///< per stage: the GPU's memory

  /// Stage `stage`'s moments and their totals.
  const std::vector<MomentRates>& stage_moments(int stage) const { return moments[stage_rates[stage]]; }
  const std::vector<MomentTotals>& stage_totals(int stage) const { return totals[stage_rates[stage]]; }
  const std::vector<double>& stage_params_prefix(int stage) const {
    return stage_table.empty() ? params_prefix : table_params_prefix[stage_table[stage]];
  }
  const std::vector<double>& stage_activation_prefix(int stage) const {
    return stage_table.empty() ? activation_prefix : table_activation_prefix[stage_table[stage]];
  }
  /// Stage `stage` holding units [first, end): its parameters, routed experts' and one sample's activations.
  double stage_param_sum(int stage, int first, int end) const {
    const std::vector<double>& params = stage_params_prefix(stage);
    return params[end] - params[first];
  }
  double stage_expert_sum(int first, int end) const {
    return expert_params_prefix.empty() ? 0 : expert_params_prefix[end] - expert_params_prefix[first];
  }
  /// The activations stage `stage` holds: one sample's through units [first, end) x the samples it holds.
  double stage_activation_sum(int stage, int first, int end) const {
    const std::vector<double>& activations = stage_activation_prefix(stage);
    return (activations[end] - activations[first]) * held_samples[stage];
  }
  /// The device bytes of stage `stage` holding units [first, end) at its worst moment.
  double stage_bytes(int stage, int first, int end) const {
    return worst_bytes(stage_totals(stage), stage_param_sum(stage, first, end), stage_expert_sum(first, end),
                       stage_activation_sum(stage, first, end));
  }
  /// Each moment's totals: its rates' terms summed.
  static std::vector<MomentTotals> totals_of(const std::vector<MomentRates>& moments);
  /// The device bytes of the worst of a stage's moments (`moment_totals`) holding these.
  static double worst_bytes(const std::vector<MomentTotals>& moment_totals, double params, double expert_params,
                            double activation_bytes) {
    double worst = 0;
    for (const MomentTotals& t : moment_totals)
      worst = std::max(worst, t.per_param * params + t.per_expert_param * expert_params +
                                  t.per_activation * activation_bytes + t.fixed);
    return worst;
  }
  bool fits(int stage, int first, int end) const { return stage_bytes(stage, first, end) <= limit_bytes[stage]; }
  /// The terms of stage `stage` holding units [first, end) at its worst moment.
  MemoryBreakdown breakdown(int stage, int first, int end) const;
  /// Appends a stage with its moments (and their totals); or with the previous stage's again.
  void add_stage(std::vector<MomentRates> stage_moments);
  void add_stage_like_previous();
  /// Appends a stage with the totals alone (tests' made-up models; no breakdown).
  void add_stage_totals(std::vector<MomentTotals> stage_totals);
};

}  // namespace fasop
