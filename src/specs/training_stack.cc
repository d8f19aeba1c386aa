#include "specs/training_stack.h"

namespace fasop {

const char* training_stack_name(TrainingStack stack) {
  switch (stack) {
    case TrainingStack::kTorchtitan: return "torchtitan";
    case TrainingStack::kDeepSpeed: return "deepspeed";
    default: return "megatron";
  }
}

std::optional<TrainingStack> training_stack_named(const std::string& name) {
  for (TrainingStack stack : {TrainingStack::kMegatron, TrainingStack::kTorchtitan, TrainingStack::kDeepSpeed})
    if (name == training_stack_name(stack)) return stack;
  return std::nullopt;
}

const char* training_stack_choices() { return "megatron, torchtitan or deepspeed"; }

}  // namespace fasop
