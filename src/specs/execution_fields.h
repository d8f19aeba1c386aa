#pragma once
#include <string>
#include <vector>

#include "specs/execution.h"
#include "specs/yaml_field.h"

namespace fasop {

/// An Execution switch as plan files and validation cases spell it: false where left out.
struct ExecutionField {
  const char* key;      ///< its key in plan files and validation cases' plan blocks
  bool Execution::*value;
  const char* comment;  ///< what plan files say beside it ("" for nothing)
};

/// The switches both files spell alike, in the order plan files write them: overlap_tp_comm,
/// overlap_param_gather, overlap_ep_comm, grad_reduce_in_bf16, cuda_graphs. (The gradient reduction's overlap
/// is spelled apart: plan files' overlap_dp_allreduce, cases' overlap_grad_reduce.)
const std::vector<ExecutionField>& execution_fields();

/// Their keys, for a reader's only_keys.
std::vector<std::string> execution_field_keys();

/// Reads each switch `block` gives into `execution` (the others stay as they are).
void read_execution_fields(const Field& block, Execution& execution);

/// "overlap_tp_comm: true\n" and so on, for each switch that is on.
std::string execution_fields_yaml(const Execution& execution);

}  // namespace fasop
