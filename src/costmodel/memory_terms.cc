#include "costmodel/memory_terms.h"

#include <cstdio>

namespace fasop {

const char* memory_moment_name(MemoryMoment moment) {
  switch (moment) {
    case MemoryMoment::kBackward: return "backward";
    case MemoryMoment::kOptimizerStep: return "optimizer step";
    default: return "forward";
  }
}

double MemoryTerms::dynamic_bytes() const {
  return activations_bytes + layer_transient_bytes + loss_bytes + gathered_params_bytes + unreduced_grads_bytes +
         optimizer_step_bytes + pipeline_buffers_bytes;
}

double MemoryTerms::allocated_bytes() const {
  return weights_bytes + gradients_bytes + master_weights_bytes + optimizer_states_bytes + workspace_bytes +
         dynamic_bytes();
}

double MemoryTerms::reserved_bytes() const { return allocated_bytes() + allocator_reserve_bytes; }

double MemoryTerms::device_bytes() const { return reserved_bytes() + runtime_bytes; }

const std::vector<MemoryTermField>& memory_term_fields() {
  static const std::vector<MemoryTermField> fields = {
      {"weights", &MemoryTerms::weights_bytes},
      {"gradients", &MemoryTerms::gradients_bytes},
      {"master_weights", &MemoryTerms::master_weights_bytes},
      {"optimizer_states", &MemoryTerms::optimizer_states_bytes},
      {"workspace", &MemoryTerms::workspace_bytes},
      {"activations", &MemoryTerms::activations_bytes},
      {"layer_transient", &MemoryTerms::layer_transient_bytes},
      {"loss", &MemoryTerms::loss_bytes},
      {"gathered_params", &MemoryTerms::gathered_params_bytes},
      {"unreduced_grads", &MemoryTerms::unreduced_grads_bytes},
      {"optimizer_step", &MemoryTerms::optimizer_step_bytes},
      {"pipeline_buffers", &MemoryTerms::pipeline_buffers_bytes},
      {"allocator_reserve", &MemoryTerms::allocator_reserve_bytes},
      {"runtime", &MemoryTerms::runtime_bytes}};
  return fields;
}

MemoryTerms& MemoryTerms::operator+=(const MemoryTerms& other) {
  for (const MemoryTermField& field : memory_term_fields()) this->*field.bytes += other.*field.bytes;
  return *this;
}

bool MemoryTerms::operator==(const MemoryTerms& other) const {
  for (const MemoryTermField& field : memory_term_fields())
    if (this->*field.bytes != other.*field.bytes) return false;
  return true;
}

MemoryTerms MemoryTerms::scaled(double factor) const {
  MemoryTerms terms;
  for (const MemoryTermField& field : memory_term_fields()) terms.*field.bytes = this->*field.bytes * factor;
  return terms;
}

MemoryTerms MomentRates::at(double params, double expert_params, double activation_bytes) const {
  MemoryTerms terms = fixed;
  terms += per_param.scaled(params);
  terms += per_expert_param.scaled(expert_params);
  terms += per_activation.scaled(activation_bytes);
  return terms;
}

std::string memory_terms_text(const MemoryTerms& terms) {
  std::string text;
  for (const MemoryTermField& field : memory_term_fields()) {
    char buffer[96];
    std::snprintf(buffer, sizeof buffer, "%s %.0f\n", field.name, terms.*field.bytes);
    text += buffer;
  }
  return text;
}

}  // namespace fasop
