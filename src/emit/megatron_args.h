#pragma once
// Megatron-LM command-line arguments for a saved plan: the parallel layout (tp, pp, and context
// and expert parallelism), the batch, the model's dimensions, its mixture of experts, its
// precision and the plan's uneven pipeline partition, for upstream Megatron-LM or FASOP's fork.
// Pure functions of the plan and the model: no files are read or written.
#include <string>
#include <vector>

#include "emit/megatron_flavor.h"
#include "emit/megatron_partition.h"
#include "specs/model_spec.h"
#include "specs/plan_file.h"
#include "specs/trainer_config.h"

namespace fasop {

/// Whether Megatron-LM runs `key`'s data parallelism as Megatron-FSDP: ZeRO 2 (its optim_grads
/// sharding) and 3 (optim_grads_params); ZeRO 1 is its distributed optimizer.
inline bool runs_megatron_fsdp(const PlanKey& key) { return key.zero_stage >= 2; }

/// The Megatron-LM arguments that run `plan` of `model`, one token per element, e.g.
/// {"--tensor-model-parallel-size", "2", "--pipeline-model-parallel-size", "3", ...}.
/// Values are bare (no shell quoting). Throws SpecError naming the problem and the fix when that
/// Megatron cannot run the plan (a partition its flags cannot express, a feature it lacks).
/// `fsdp` picks the sharding of a ZeRO-3 plan (ZeRO-2 is Megatron-FSDP's alone).
std::vector<std::string> megatron_args(const PlanFile& plan, const ModelSpec& model, MegatronFlavor flavor,
                                       FsdpImpl fsdp = FsdpImpl::kMegatron);

/// The flags of a token list (megatron_args') with their values, in order.
std::vector<TrainerArg> split_flags(const std::vector<std::string>& tokens);

/// The same arguments as a `.sh`-style block to paste after `torchrun ... pretrain_gpt.py \`: one
/// flag with its value a line, lines joined by " \\\n", values with shell metacharacters
/// (the layout's '|' and '*') in single quotes; no trailing backslash or newline.
std::string megatron_args_text(const PlanFile& plan, const ModelSpec& model, MegatronFlavor flavor,
                               FsdpImpl fsdp = FsdpImpl::kMegatron);

}  // namespace fasop
