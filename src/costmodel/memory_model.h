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

  double stage_bytes(int stage, int first, int end) const {
    return (params_prefix[end] - params_prefix[first]) * bytes_per_param[stage] +
           (activation_prefix[end] - activation_prefix[first]) * in_flight[stage] + fixed_bytes[stage];
  }
  bool fits(int stage, int first, int end) const { return stage_bytes(stage, first, end) <= limit_bytes[stage]; }
};

}  // namespace fasop
