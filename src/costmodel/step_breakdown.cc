#include "costmodel/step_breakdown.h"

namespace fasop {

const std::vector<StepTermField>& step_term_fields() {
  static const std::vector<StepTermField> fields{
      {"compute", &StepBreakdown::compute_s},   {"bubble", &StepBreakdown::bubble_s},
      {"tp_comm", &StepBreakdown::layer_comm_s}, {"sends", &StepBreakdown::sends_s},
      {"dp_comm", &StepBreakdown::dp_comm_s},   {"overlap_cost", &StepBreakdown::overlap_cost_s},
      {"optimizer", &StepBreakdown::optimizer_s}, {"embedding", &StepBreakdown::embedding_s},
  };
  return fields;
}

double StepBreakdown::total_s() const {
  double sum = 0;
  for (const StepTermField& field : step_term_fields()) sum += this->*field.seconds;
  return sum;
}

}  // namespace fasop
