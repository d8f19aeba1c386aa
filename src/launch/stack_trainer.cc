#include "launch/stack_trainer.h"

#include "emit/shell_quote.h"
#include "launch/trainer_command.h"
#include "specs/spec_error.h"

namespace fasop {
namespace {

/// Whether `flag` (without its --) sets what the plan fixes for `stack`.
bool fixed_by_plan(const std::string& flag, const std::string& stack) {
  if (stack == "torchtitan")
    return flag.rfind("parallelism.", 0) == 0 || flag.rfind("training.num_tokens", 0) == 0 ||
           flag == "training.max_context_length" || flag == "activation_checkpoint" ||
           flag.rfind("activation_checkpoint.", 0) == 0;
  for (const char* fixed : {"tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size",
                            "virtual_pipeline_model_parallel_size", "expert_model_parallel_size",
                            "expert_tensor_parallel_size", "global_batch_size", "micro_batch_size", "seq_length",
                            "model", "recipe", "mode"})
    if (flag == fixed) return true;
  return false;
}

}  // namespace

std::vector<std::string> stack_config_args(const TrainerConfig& config, const std::string& stack) {
  if (!config.megatron_script.empty())
    throw SpecError(config.source + ": field 'megatron_script' is Megatron-LM's; launch --stack " + stack +
                    " runs its own entry point: remove it");
  std::vector<std::string> tokens;
  for (const TrainerArg& arg : config.args) {
    const std::string name = arg.flag.substr(2);  // without its --
    if (fixed_by_plan(name, stack))
      throw SpecError(config.source + ": field 'args." + name + "': it sets what the plan fixes for " + stack +
                      " (its degrees, batch, tokens, recipe or recomputation); remove it, or re-plan");
    tokens.push_back(arg.flag);
    tokens.insert(tokens.end(), arg.values.begin(), arg.values.end());
  }
  return tokens;
}

std::string torchtitan_trainer_command(const std::string& config_py, const std::vector<std::string>& args) {
  // Each node its own folder, the module renamed into place: no node reads another's half-written file.
  std::string command =
      "dir=\"$FASOP_RUN_DIR/torchtitan-$NODE_RANK\" && mkdir -p \"$dir\" && cat > \"$dir/fasop_plan.py.tmp\" <<'FASOP_PLAN_PY'\n" +
      config_py +
      "FASOP_PLAN_PY\n"
      "mv \"$dir/fasop_plan.py.tmp\" \"$dir/fasop_plan.py\" && PYTHONPATH=\"$dir${PYTHONPATH:+:$PYTHONPATH}\" " +
      torchrun_prefix() + " -m torchtitan.train --module fasop_plan --config fasop_plan";
  for (const std::string& token : args) command += " " + shell_quote(token);
  return command;
}

}  // namespace fasop
