#pragma once
// What one GPU of a pipeline stage allocates, as each training stack allocates it: the moments
// of its step (memory_terms.h) as linear rates in the stage's parameters and activations, so that
// the partitioners check a stage in O(1) and the reports show the same terms (docs/memory.md).
#include <string>
#include <vector>

#include "costmodel/activation_memory.h"
#include "costmodel/memory_terms.h"
#include "specs/model_spec.h"
#include "specs/runtime_memory.h"
#include "specs/training_stack.h"

namespace fasop {

/// What one GPU of a stage holds besides its units' sums (per GPU, bytes unless said).
struct StageMemoryInputs {
  const ModelSpec* model = nullptr;
  double element_bytes = 2;   ///< an activation element's (activation_bytes of the model's dtype)
  double gradient_bytes = 4;  ///< a gradient's in Megatron's buffer (its precision, or fp32)
  MemorySettings settings;
  RuntimeMemory runtime;
  int zero_stage = 0;
  int pp = 1;
  int stage = 0;
  int tp = 1;
  int grad_ranks = 1;         ///< GPUs sharing its dense weights' gradients and optimizer state (cp x dp)
  int expert_grad_ranks = 1;  ///< the same for its routed experts
  double samples = 1;         ///< one micro-batch's samples on a GPU
  double held_samples = 1;    ///< samples whose activations the stage holds at its peak
  int microbatches = 1;       ///< micro-batches of a step
  int virtual_stages = 1;     ///< pipeline chunks a rank runs (interleaved 1F1B)
  /// One sample's activation a stage sends to the next (torchtitan: [s / cp / tp, h], sequence
  /// sharded), and the last stage's output (its logits, the vocabulary over tp), in bytes.
  double boundary_bytes_per_sample = 0, output_bytes_per_sample = 0;
  /// The share of its activations the GPU keeps (below 1 where layers offload theirs to the host).
  double kept_activation_share = 1;
  ActivationMode mode;
  /// One sample's activations of the post-process unit (the loss) on the last stage: under the
  /// interleaved schedule its chunk holds one micro-batch, not the rank's average.
  double head_activation_bytes = 0;
  /// Transients of one sample: the largest over the model's transformer units, and the
  /// post-process unit's (the loss) where the stage is the last.
  UnitTransient layer_transient, head_transient;
  double largest_layer_params = 0;   ///< dense parameters a GPU holds of the largest transformer unit
  double largest_matrix_params = 0;  ///< the largest weight matrix on a GPU (a gradient temporary)
  double embedding_params = 0;       ///< the embedding's on a GPU (first stage; FSDP's root)
  double head_params = 0;            ///< the output head's and final norm's (last stage; FSDP's root)
  int nccl_groups = 1;               ///< NCCL communicators the GPU's rank joins
};

/// The stage's moments: forward, backward and optimizer step, as `inputs.settings.stack` allocates.
std::vector<MomentRates> stage_memory_rates(const StageMemoryInputs& inputs);

/// The bytes a parameter's state takes on one GPU for the whole step (weights, gradients, the
/// master copy and moments; nothing gathered) on `stack`, training in `dtype` (with
/// --grad-reduce-in-bf16: `bf16_gradients`), ZeRO `zero_stage` sharding over `ranks` GPUs. Every
/// moment holds at least this much of each parameter.
double static_bytes_per_param(TrainingStack stack, const std::string& dtype, bool bf16_gradients, int zero_stage,
                              int ranks);
/// Bytes a gradient takes in Megatron-Core's buffer when training in `dtype`: fp16's own, bf16's
/// with --grad-reduce-in-bf16 (`bf16_gradients`), else fp32 (bf16 gradients accumulate in fp32).
double megatron_gradient_bytes(const std::string& dtype, bool bf16_gradients);

/// Bytes every moment of every stage holds on a GPU of `runtime` beyond its units' state and
/// activations: the CUDA context and the workspaces (NCCL's buffers and the transients come on
/// top). The search's floors subtract it from a GPU's room.
double least_fixed_bytes(const RuntimeMemory& runtime, const MemorySettings& settings);

/// Micro-batches whose activations stage `stage` of `pp` holds at its peak under 1F1B with `m`
/// micro-batches (min(pp - stage, m)), or under Megatron's interleaved 1F1B with `virtual_stages`
/// chunks a rank (its warm-up's chunks plus one, at most m x v, each 1/v of the rank's layers).
double held_microbatches(int pp, int stage, int m, int virtual_stages);

}  // namespace fasop
