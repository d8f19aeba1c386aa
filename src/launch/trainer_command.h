#pragma once
// The trainer a node runs when the user names none: Megatron-LM under torchrun.
#include <string>

#include "specs/model_spec.h"
#include "specs/plan_file.h"

namespace fasop {

/// `torchrun` with the node's place from the launch environment (NNODES, GPUS_PER_NODE,
/// NODE_RANK, MASTER_ADDR, MASTER_PORT) starting Megatron-LM's `script` with the plan's
/// arguments (upstream Megatron-LM, emit/megatron_args.h). Throws SpecError where Megatron-LM
/// cannot run the plan.
std::string megatron_trainer_command(const PlanFile& plan, const ModelSpec& model, const std::string& script);

}  // namespace fasop
