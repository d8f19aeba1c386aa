#include "specs/runtime_memory.h"

#include "specs/yaml_field.h"

namespace fasop {

RuntimeMemory default_runtime_memory(TrainingStack stack) {
  // Estimates where no run measured them (docs/memory.md): cuBLAS's workspace is 32 MiB a
  // stream on Hopper (PyTorch's :4096:8), two streams' and some buffers; Transformer Engine keeps
  // a 32 MiB cuBLASLt workspace of its own on Hopper and later (4 MiB before); a CUDA 12 context
  // with PyTorch's kernels takes about half a GiB; an NCCL communicator's buffers (NCCL_BUFFSIZE
  // 4 MiB for each channel and peer) about 0.15 GiB.
  RuntimeMemory runtime{.workspace_gib = 0.075, .te_workspace_gib = 0.03125, .reserve_share = 0.05, .context_gib = 0.5,
                        .nccl_gib_per_group = 0.15};
  if (stack != TrainingStack::kMegatron) runtime.te_workspace_gib = 0;
  return runtime;
}

RuntimeMemory parse_runtime_memory(const Field& field, const RuntimeMemory& defaults) {
  field.keys("a mapping {workspace_gib, te_workspace_gib, reserve_share, context_gib, nccl_gib_per_group}");
  field.only_keys({"workspace_gib", "te_workspace_gib", "reserve_share", "context_gib", "nccl_gib_per_group"});
  RuntimeMemory runtime = defaults;
  for (auto [name, value] : {std::pair{"workspace_gib", &runtime.workspace_gib}, {"te_workspace_gib", &runtime.te_workspace_gib},
                             {"reserve_share", &runtime.reserve_share},
                             {"context_gib", &runtime.context_gib}, {"nccl_gib_per_group", &runtime.nccl_gib_per_group}})
    if (Field entry = field.child(name); entry.present()) *value = entry.non_negative_double();
  return runtime;
}

}  // namespace fasop
