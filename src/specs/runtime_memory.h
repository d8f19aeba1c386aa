#pragma once
// What a training process holds on a GPU besides the bytes of its tensors: workspaces inside
// PyTorch's caching allocator, the allocator's reserve over what is allocated, and what lives
// outside it (the CUDA context, NCCL's buffers). One set per training stack and GPU: the GPU's
// data may give its own (configs/gpus/*.yaml, memory_runtime), else the stack's defaults.
#include <optional>

#include "specs/training_stack.h"

namespace fasop {

struct Field;

/// A process's memory beyond its tensors, per stack and GPU (docs/memory.md, "Runtime").
struct RuntimeMemory {
  double workspace_gib = 0;       ///< cuBLAS's workspaces and buffers a process keeps (allocated)
  double te_workspace_gib = 0;    ///< Transformer Engine's cuBLASLt workspace, with its layers (allocated)
  double reserve_share = 0;       ///< the allocator's reserve over the allocated peak, as a share of it
  double context_gib = 0;         ///< the CUDA context and loaded kernels, outside the allocator
  double nccl_gib_per_group = 0;  ///< one NCCL communicator's buffers, outside the allocator
};

/// The stack's defaults, for a GPU whose data gives none (estimates; docs/memory.md says whence).
RuntimeMemory default_runtime_memory(TrainingStack stack);

/// A `memory_runtime` entry of a GPU data file: {workspace_gib, te_workspace_gib, reserve_share,
/// context_gib, nccl_gib_per_group}, each optional over `defaults`; errors name the field.
RuntimeMemory parse_runtime_memory(const Field& field, const RuntimeMemory& defaults);

}  // namespace fasop
