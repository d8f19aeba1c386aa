#include "profiles/model_flops.h"

#include "profiles/analytic_profile.h"

namespace fasop {

double model_flops_per_step(const ModelSpec& model, int global_batch) {
  double forward_per_sequence = 0;
  for (const LayerUnit& unit : model.units) {
    const PassWork forward = layer_work(model, unit, /*tp=*/1, /*mbs=*/1).forward;
    forward_per_sequence += forward.gemm_flops() + forward.attention_flops;
  }
  return 3 * forward_per_sequence * global_batch;
}

}  // namespace fasop
