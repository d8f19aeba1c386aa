#pragma once
#include <vector>

namespace fasop {

/// A stage's memory as a linear function of its units: parameters times the bytes each costs
/// (weights, gradients, optimizer state, as ZeRO shards them) plus activations times the
/// micro-batches in flight, plus a fixed working set. The exact partitioner checks a stage
/// [first, end) against its GPU in O(1) with the prefix sums.
struct MemoryModel {
  std::vector<double> params_prefix;      ///< parameters (per GPU) of units [0, u)
  std::vector<double> activation_prefix;  ///< activation bytes of one micro-batch, units [0, u)
  std::vector<double> bytes_per_param;    ///< per stage
  std::vector<double> in_flight;          ///< micro-batches whose activations a stage holds at once
  std::vector<double> fixed_bytes;        ///< per stage
  std::vector<double> limit_bytes;        ///< per stage: the memory of its GPU
  /// Per-stage tp (PlanKey::stage_tp): stage s holds the parameters and activations of prefix
  /// table stage_table[s], one table per tp, since a unit's share on a GPU is not one factor of
  /// another tp's (norms stay whole). Empty: the two prefixes above serve every stage; with
  /// tables they hold the largest tp's, the least any stage holds, as bounds need.
  std::vector<int> stage_table;
  std::vector<std::vector<double>> table_params_prefix, table_activation_prefix;

  const std::vector<double>& stage_params_prefix(int stage) const {
    return stage_table.empty() ? params_prefix : table_params_prefix[stage_table[stage]];
  }
  const std::vector<double>& stage_activation_prefix(int stage) const {
    return stage_table.empty() ? activation_prefix : table_activation_prefix[stage_table[stage]];
  }
  /// A MoE model's routed experts (PlanKey::ep): their parameters per GPU, units [0, u), and
  /// per stage the bytes each costs, sharded over the expert-data-parallel GPUs rather than dp.
  /// Empty for a dense model.
  std::vector<double> expert_params_prefix;
  std::vector<double> expert_bytes_per_param;

  double stage_bytes(int stage, int first, int end) const {
    const std::vector<double>&params = stage_params_prefix(stage), &activations = stage_activation_prefix(stage);
    const double experts = expert_params_prefix.empty()
                               ? 0
                               : (expert_params_prefix[end] - expert_params_prefix[first]) * expert_bytes_per_param[stage];
    return (params[end] - params[first]) * bytes_per_param[stage] +
           (activations[end] - activations[first]) * in_flight[stage] + fixed_bytes[stage] + experts;
  }
  bool fits(int stage, int first, int end) const { return stage_bytes(stage, first, end) <= limit_bytes[stage]; }
};

}  // namespace fasop
