#pragma once
// How often FSDP (ZeRO-3) gathers a stage's parameters and reduce-scatters its gradients: every
// micro-batch (Megatron-FSDP, DeepSpeed, torchtitan without pipelining), or once a step where
// torchtitan pipelines: it sets reshard_after_forward off under pp, and PyTorch's pipeline
// schedules keep the parameters unsharded and the gradients unreduced until the last
// micro-batch's backward (torch.distributed.pipelining's stage: reshard_after_backward and
// requires_gradient_sync off but for it).
#include "specs/plan.h"
#include "specs/training_stack.h"

namespace fasop {

/// Whether `key`'s FSDP gathers and reduce-scatters once a step on `memory`'s stack.
bool fsdp_once_a_step(const MemorySettings& memory, const PlanKey& key);

/// Whether some plan may on this stack: the search's floors, which bound every pp, then count
/// no per-micro-batch FSDP collective.
bool fsdp_may_run_once_a_step(const MemorySettings& memory);

}  // namespace fasop
