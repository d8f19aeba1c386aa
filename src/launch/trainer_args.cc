#include "launch/trainer_args.h"

#include <algorithm>
#include <regex>
#include <set>

#include "emit/megatron_args.h"
#include "specs/plan_degrees.h"
#include "specs/spec_error.h"

namespace fasop {
namespace {

/// Flags that fix the plan's parallel degrees, batch or partition: a trainer config that set
/// them would run another plan than the one estimated.
const std::set<std::string>& plan_fixed_flags() {
  static const std::set<std::string> flags = {
      "--tensor-model-parallel-size", "--pipeline-model-parallel-size", "--context-parallel-size",
      "--expert-model-parallel-size", "--expert-tensor-parallel-size", "--num-virtual-stages-per-pipeline-rank",
      "--num-layers-per-virtual-pipeline-stage", "--virtual-pipeline-model-parallel-size", "--micro-batch-size",
      "--global-batch-size", "--rampup-batch-size", "--pipeline-model-parallel-layout",
      "--pipeline-model-parallel-split-rank", "--decoder-first-pipeline-num-layers",
      "--decoder-last-pipeline-num-layers", "--account-for-embedding-in-pipeline-split",
      "--account-for-loss-in-pipeline-split", "--balance", "--use-distributed-optimizer"};
  return flags;
}

std::string joined(const std::vector<std::string>& values) {
  if (values.empty()) return "(a switch)";
  std::string text;
  for (const std::string& v : values) text += (text.empty() ? "" : " ") + v;
  return text;
}

/// What the plan's degrees say, for the refusal's message.
std::string plan_degrees(const PlanFile& plan) {
  return "tp " + std::to_string(plan.key.tp) + ", pp " + std::to_string(plan.key.pp) + ", dp " +
         std::to_string(plan.key.dp) + context_expert_text(plan.key, ", ") + ", micro-batch " + std::to_string(plan.key.mbs) + ", global batch " +
         std::to_string(plan.global_batch);
}

const TrainerArg* find_flag(const std::vector<TrainerArg>& args, const std::string& flag) {
  auto it = std::find_if(args.begin(), args.end(), [&](const TrainerArg& a) { return a.flag == flag; });
  return it == args.end() ? nullptr : &*it;
}

}  // namespace

MergedTrainerArgs merge_trainer_args(const std::vector<std::string>& plan_tokens, const TrainerConfig& config,
                                     const PlanFile& plan, const ModelSpec& model) {
  std::vector<TrainerArg> args = split_flags(plan_tokens);
  const TrainerArg* tokenizer = find_flag(config.args, "--tokenizer-type");
  if (tokenizer && tokenizer->values == std::vector<std::string>{"NullTokenizer"} && !find_flag(args, "--vocab-size"))
    args.push_back({"--vocab-size", {std::to_string(model.vocab)}});
  const size_t from_plan = args.size();

  MergedTrainerArgs merged;
  const std::string config_name = "trainer config " + config.source;
  std::vector<std::string> kept;
  for (const TrainerArg& arg : config.args) {
    if (arg.flag.find_first_of("_.") != std::string::npos)
      throw SpecError(config.source + ": field 'args." + arg.flag.substr(2) + "': Megatron-LM's flags use dashes; write '" +
                      std::regex_replace(arg.flag.substr(2), std::regex("[_.]"), "-") + "'");
    if (plan_fixed_flags().count(arg.flag))
      throw SpecError(config.source + ": field 'args." + arg.flag.substr(2) + "': the plan " + plan.source +
                      " fixes the parallel degrees, batch and partition (" + plan_degrees(plan) +
                      "); remove it, or plan again with the layout you want (search --fix)");
    const TrainerArg* planned = find_flag(args, arg.flag);
    if (!planned) {
      args.push_back(arg);
    } else if (planned->values != arg.values) {
      kept.push_back(arg.flag + ": the plan's " + joined(planned->values) + " kept (" + config_name + " gives " +
                     joined(arg.values) + ")");
    }
  }
  for (const TrainerArg& arg : args) {
    merged.tokens.push_back(arg.flag);
    merged.tokens.insert(merged.tokens.end(), arg.values.begin(), arg.values.end());
  }
  merged.notes.push_back(std::to_string(from_plan) + " flags from the plan, " + std::to_string(args.size() - from_plan) +
                         " added from " + config_name);
  merged.notes.insert(merged.notes.end(), kept.begin(), kept.end());
  return merged;
}

}  // namespace fasop
