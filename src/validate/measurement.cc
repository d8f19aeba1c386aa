#include "validate/measurement.h"

#include "specs/spec_error.h"

namespace fasop {

double megatron_narayanan_2021_flops(double batch, double sequence, double layers, double hidden, double vocab) {
  return 96.0 * batch * sequence * layers * hidden * hidden *
         (1.0 + sequence / (6.0 * hidden) + vocab / (16.0 * layers * hidden));
}

double step_s_from_tflops(double flops, int gpus, double tflops_per_gpu) {
  return flops / (static_cast<double>(gpus) * tflops_per_gpu * 1e12);
}

double measured_step_s(const ValidationCase& c) {
  const ValidationMeasurement& m = c.measurement;
  if (m.step_s > 0) return m.step_s;
  if (m.tokens_per_s_per_gpu > 0)
    return double(c.plan.global_batch) * c.model.sequence / (m.tokens_per_s_per_gpu * c.plan.gpus);
  if (m.flop_formula == kMegatronNarayanan2021) {
    double flops = megatron_narayanan_2021_flops(c.plan.global_batch, c.model.sequence,
                                                 c.model.num_transformer_layers(), c.model.hidden, c.model.vocab);
    return step_s_from_tflops(flops, c.plan.gpus, m.tflops_per_gpu);
  }
  throw SpecError(c.file + ": field 'measurement.flop_formula': unknown formula '" + m.flop_formula + "'; use " +
                  kMegatronNarayanan2021 + " (or give measurement.step_s)");
}

}  // namespace fasop
