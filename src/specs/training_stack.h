#pragma once
// The framework that runs a plan, as the memory model prices it: what each one allocates for
// weights, gradients, optimizer state and activations differs (docs/memory.md).
#include <optional>
#include <string>

namespace fasop {

/// The training framework a plan runs on: Megatron-Core (Megatron-LM, NeMo and Megatron-Bridge),
/// PyTorch FSDP2 as torchtitan runs it, or DeepSpeed's ZeRO.
enum class TrainingStack { kMegatron, kTorchtitan, kDeepSpeed };

/// Its name as files and flags write it: megatron, torchtitan or deepspeed.
const char* training_stack_name(TrainingStack stack);
/// The stack a name stands for; none for another name.
std::optional<TrainingStack> training_stack_named(const std::string& name);
/// The names, for messages: "megatron, torchtitan or deepspeed".
const char* training_stack_choices();

/// How a stack runs a plan where it changes what memory holds (plan files and validation cases
/// give them; search and estimate take each stack's usual settings).
struct MemorySettings {
  TrainingStack stack = TrainingStack::kMegatron;
  /// Megatron: weight gradients accumulate straight into the gradient buffer (the default);
  /// false (--no-gradient-accumulation-fusion): each is a temporary first.
  bool gradient_accumulation_fusion = true;
  /// Megatron: Transformer Engine's layers (--transformer-impl transformer_engine); false: its
  /// local layers, which keep one buffer of all-gathered activations under sequence parallelism.
  bool transformer_engine = true;
  /// Megatron: the fused cross entropy (--cross-entropy-loss-fusion): the loss's gradient
  /// overwrites the 16-bit logits, no fp32 copy.
  bool cross_entropy_fusion = false;
  /// Megatron (NeMo's distributed_fused_adam with dtype bf16): Adam keeps its moments in bf16
  /// and no fp32 copy of the parameters (field optimizer_dtype: bf16).
  bool bf16_optimizer = false;
  /// Megatron: layers whose activations go to host memory (--cpu-offloading-num-layers,
  /// Transformer Engine's activation offloading): the GPU keeps the others' and one layer's in
  /// transit.
  int activation_offload_layers = 0;
  /// torchtitan: blocks compiled with torch.compile.
  bool compiled = false;
  /// torchtitan: the loss compiled too (its training.compile since mid-2025): the fused cross
  /// entropy keeps the 16-bit logits and no fp32 copy.
  bool compiled_loss = false;
  /// torchtitan: asynchronous tensor parallelism (micro-pipelined all-gather matmuls): no whole
  /// all-gathered input is materialised in a layer's backward.
  bool async_tp = false;
  /// torchtitan: FSDP gathers the linear layers' weights in float8 (1 byte, not 2).
  bool float8_all_gather = false;
  /// torchtitan before e5ef99a (October 2025), whose pipeline schedule's step() returned the
  /// outputs: the last stage keeps every micro-batch's logits until the step ends.
  bool pipeline_keeps_outputs = false;
};

}  // namespace fasop
