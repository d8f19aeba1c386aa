#include "costmodel/fsdp_gathers.h"

namespace fasop {

bool fsdp_once_a_step(const MemorySettings& memory, const PlanKey& key) {
  return key.zero_stage == 3 && key.pp > 1 && memory.stack == TrainingStack::kTorchtitan;
}

bool fsdp_may_run_once_a_step(const MemorySettings& memory) { return memory.stack == TrainingStack::kTorchtitan; }

}  // namespace fasop
