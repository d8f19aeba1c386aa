#include "profiles/model_flops.h"

#include <map>
#include <string>

#include "profiles/analytic_profile.h"

namespace fasop {

double model_flops_per_step(const ModelSpec& model, int global_batch) {
  // Units of one type (one profile key) do the same work, as analytic profiles time them once.
  std::map<std::string, double> type_forward;
  double forward_per_sequence = 0;
  for (const LayerUnit& unit : model.units) {
    auto [at, added] = type_forward.try_emplace(unit.type, 0.0);
    if (added) {
      const PassWork forward = layer_work(model, unit, /*tp=*/1, /*mbs=*/1).forward;
      at->second = forward.gemm_flops() + forward.attention_flops;
    }
    forward_per_sequence += at->second;
  }
  return 3 * forward_per_sequence * global_batch;
}

}  // namespace fasop
