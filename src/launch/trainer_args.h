#pragma once
// The plan's Megatron-LM arguments merged with a trainer config's: the config adds what the
// plan does not say (data, tokenizer, iterations, schedule, logging), the plan's value is kept
// where both give a flag, and a config that sets a parallel degree or batch is refused.
#include <string>
#include <vector>

#include "specs/model_spec.h"
#include "specs/plan_file.h"
#include "specs/trainer_config.h"

namespace fasop {

/// Merged arguments and what the merge did, for --dry-run.
struct MergedTrainerArgs {
  std::vector<std::string> tokens;  ///< the plan's flags, then the config's, values bare
  /// One line each, e.g. "--seq-length: the plan's 1024 kept (trainer config megatron-mock gives 512)".
  std::vector<std::string> notes;
};

/// `plan_tokens` (megatron_args of `plan`) with `config`'s arguments added. A NullTokenizer
/// takes the model's vocabulary (--vocab-size), which the plan then fixes. Throws SpecError
/// naming the config file and field when it sets a flag that fixes a parallel degree, the
/// batch or the pipeline partition.
MergedTrainerArgs merge_trainer_args(const std::vector<std::string>& plan_tokens, const TrainerConfig& config,
                                     const PlanFile& plan, const ModelSpec& model);

}  // namespace fasop
