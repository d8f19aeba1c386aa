#include "costmodel/memory_model.h"

namespace fasop {

MemoryBreakdown MemoryModel::breakdown(int stage, int first, int end) const {
  const double params = stage_param_sum(stage, first, end), experts = stage_expert_sum(first, end),
               activations = stage_activation_sum(stage, first, end);
  MemoryBreakdown worst;
  bool have = false;
  for (const MomentRates& rates : stage_moments(stage)) {
    MemoryTerms terms = rates.at(params, experts, activations);
    if (rates.moment == MemoryMoment::kOptimizerStep)
      worst.after_step_bytes = terms.weights_bytes + terms.gradients_bytes + terms.master_weights_bytes +
                               terms.optimizer_states_bytes + terms.workspace_bytes + terms.optimizer_step_bytes;
    if (!have || terms.device_bytes() > worst.terms.device_bytes()) {
      worst.moment = rates.moment;
      worst.terms = terms;
      have = true;
    }
  }
  worst.limit_bytes = limit_bytes[stage];
  worst.capacity_bytes = capacity_bytes[stage];
  return worst;
}

std::vector<MemoryModel::MomentTotals> MemoryModel::totals_of(const std::vector<MomentRates>& moments) {
  std::vector<MemoryModel::MomentTotals> totals;
  totals.reserve(moments.size());
  for (const MomentRates& rates : moments)
    totals.push_back({.per_param = rates.per_param.device_bytes(),
                      .per_expert_param = rates.per_expert_param.device_bytes(),
                      .per_activation = rates.per_activation.device_bytes(),
                      .fixed = rates.fixed.device_bytes()});
  return totals;
}

void MemoryModel::add_stage(std::vector<MomentRates> stage_moments) {
  stage_rates.push_back(static_cast<int>(moments.size()));
  totals.push_back(totals_of(stage_moments));
  moments.push_back(std::move(stage_moments));
}

void MemoryModel::add_stage_like_previous() { stage_rates.push_back(stage_rates.back()); }

void MemoryModel::add_stage_totals(std::vector<MomentTotals> stage_totals) {
  stage_rates.push_back(static_cast<int>(totals.size()));
  totals.push_back(std::move(stage_totals));
  moments.emplace_back();
}

}  // namespace fasop
