#include "specs/execution_fields.h"

namespace fasop {

const std::vector<ExecutionField>& execution_fields() {
  static const std::vector<ExecutionField> fields{
      {.key = "overlap_tp_comm", .value = &Execution::tp_comm_overlap, .comment = ""},
      {.key = "overlap_param_gather", .value = &Execution::overlap_param_gather, .comment = ""},
      {.key = "overlap_ep_comm", .value = &Execution::overlap_moe_expert_parallel_comm, .comment = ""},
      {.key = "grad_reduce_in_bf16", .value = &Execution::grad_reduce_in_bf16,
       .comment = "gradients kept and reduced in bf16"},
      {.key = "cuda_graphs", .value = &Execution::cuda_graphs,
       .comment = "each layer's passes replayed as CUDA graphs (--cuda-graph-impl local)"},
  };
  return fields;
}

std::vector<std::string> execution_field_keys() {
  std::vector<std::string> keys;
  for (const ExecutionField& field : execution_fields()) keys.emplace_back(field.key);
  return keys;
}

void read_execution_fields(const Field& block, Execution& execution) {
  for (const ExecutionField& field : execution_fields())
    if (const Field value = block.child(field.key); value.present()) execution.*field.value = value.as<bool>("true or false");
}

std::string execution_fields_yaml(const Execution& execution) {
  std::string out;
  for (const ExecutionField& field : execution_fields())
    if (execution.*field.value)
      out += std::string(field.key) + ": true" + (*field.comment ? std::string("    # ") + field.comment : "") + "\n";
  return out;
}

}  // namespace fasop
