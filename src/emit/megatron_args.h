#pragma once
// Megatron-LM command-line arguments for a saved plan: the parallel layout, the batch, the model's
// dimensions and the plan's uneven pipeline partition, for upstream Megatron-LM or FASOP's fork.
// Pure functions of the plan and the model: no files are read or written.
#include <string>
#include <vector>

#include "specs/model_spec.h"
#include "specs/plan_file.h"

namespace fasop {

/// Which Megatron-LM the arguments are for; they differ in how an uneven partition is written.
enum class MegatronFlavor {
  /// NVIDIA/Megatron-LM as of 2025-2026 (megatron/training/arguments.py): the partition as
  /// --pipeline-model-parallel-layout, e.g. "Et*17|t*15|t*16L".
  kUpstream,
  /// FASOP's fork (AvatarHwang/FASOP, Megatron-LM-2/): the partition as --balance "17-15-16",
  /// transformer layers per stage. The fork predates --swiglu, RMSNorm, GQA and untied heads.
  kFasop,
};

/// The Megatron-LM arguments that run `plan` of `model`, one token per element, e.g.
/// {"--tensor-model-parallel-size", "2", "--pipeline-model-parallel-size", "3", ...}.
/// Values are bare (no shell quoting). Throws SpecError naming the problem and the fix when that
/// Megatron cannot run the plan (a partition its flags cannot express, a feature it lacks).
std::vector<std::string> megatron_args(const PlanFile& plan, const ModelSpec& model, MegatronFlavor flavor);

/// The same arguments as a `.sh`-style block to paste after `torchrun ... pretrain_gpt.py \`: one
/// flag with its value a line, lines joined by " \\\n", values with shell metacharacters
/// (the layout's '|' and '*') in single quotes; no trailing backslash or newline.
std::string megatron_args_text(const PlanFile& plan, const ModelSpec& model, MegatronFlavor flavor);

/// The --pipeline-model-parallel-layout string of a plan: per stage, 'E' for the embedding, 't'
/// per transformer layer (runs written t*n), 'L' for the loss (post-process), stages joined by
/// '|'. Grammar from Megatron-LM megatron/core/transformer/pipeline_parallel_layer_layout.py
/// (PipelineParallelLayerLayout.parse_str_to_list). Throws SpecError for encoder-decoder models.
std::string megatron_pipeline_layout(const PlanFile& plan, const ModelSpec& model);

/// FASOP's --balance value: transformer layers per stage joined by '-', e.g. "17-15-16"
/// (the embedding and the post-process are not counted: the fork puts them on the first and
/// last stage). Throws SpecError for encoder-decoder models, whose --balance the fork ignores.
std::string fasop_balance(const PlanFile& plan, const ModelSpec& model);

}  // namespace fasop
