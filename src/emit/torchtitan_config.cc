#include "emit/torchtitan_config.h"

#include <sstream>
#include <utility>

#include "emit/interleaved_chunks.h"
#include "emit/plan_checks.h"
#include "emit/python_literal.h"
#include "specs/moe_dispatcher.h"
#include "specs/precision.h"
#include "specs/spec_error.h"

namespace fasop {
namespace {

constexpr const char* kTorchtitan = "torchtitan";

std::string num(long long n) { return std::to_string(n); }

/// The model's base configuration, split at its colon: {module, function}.
std::pair<std::string, std::string> base_config(const ModelSpec& model) {
  const size_t colon = model.torchtitan_config.find(':');
  if (model.torchtitan_config.empty() || colon == std::string::npos)
    throw SpecError(model.source + ": stacks.torchtitan: model '" + model.name +
                    "' names no torchtitan configuration; add `stacks: {torchtitan: module:function}` with a "
                    "config_registry function returning Trainer.Config (torchtitan ships llama3, qwen3, deepseek_v3, "
                    "gpt_oss and others), or emit for Megatron-LM (--format megatron)");
  return {model.torchtitan_config.substr(0, colon), model.torchtitan_config.substr(colon + 1)};
}

/// torchtitan's data-parallel form of the plan's ZeRO stage: {replicate, shard}.
std::pair<int, int> data_parallel_degrees(const PlanFile& plan) {
  const PlanKey& key = plan.key;
  if (key.zero_stage == 0) return {key.dp, 1};  // DDP: replicate() of the whole model
  if (key.zero_stage == 3) return {1, key.dp};  // FSDP2: fully_shard() per layer
  throw SpecError(plan_where(plan) + "ZeRO stage " + num(key.zero_stage) +
                  ": torchtitan replicates (DDP, ZeRO 0) or shards parameters, gradients and optimizer state "
                  "(FSDP2, ZeRO 3); ZeRO 1 and 2 have no torchtitan form; re-plan with --zero 0,3");
}

/// torchtitan's mixed_precision_param for the model's dtype.
std::string param_precision(const PlanFile& plan, const ModelSpec& model) {
  if (model.dtype == "bf16") return "bfloat16";
  if (model.dtype == "fp32") return "float32";
  throw SpecError(plan_where(plan) + "model '" + model.name + "' trains in " + model.dtype +
                  ": torchtitan keeps parameters in bfloat16 or float32 (TrainingConfig.mixed_precision_param), "
                  "and fasop-cpp prices its float8 (torchao) linear layers not yet; train the model in bf16 or fp32");
}

/// What torchtitan cannot run as the plan was priced, each with its plan field and fix.
void require_torchtitan_plan(const PlanFile& plan, const ModelSpec& model, const ClusterSpec& cluster) {
  const PlanKey& key = plan.key;
  require_uniform_tp(plan, kTorchtitan);
  require_uniform_dp(plan, kTorchtitan);
  require_even_batch(plan, kTorchtitan);
  require_no_speed_split(plan, kTorchtitan);
  require_one_gpu_per_stage(plan, cluster, kTorchtitan);
  if (key.selective_recompute && !key.recompute)
    throw SpecError(plan_where(plan) + "selective recomputation of Megatron's modules has no torchtitan form (its "
                    "SelectiveAC saves chosen ops, not modules); re-plan with --fix recompute=none or recompute=full");
  if (key.etp > 1)
    throw SpecError(plan_where(plan) + "etp " + num(key.etp) + ": torchtitan's experts take no tensor parallelism of "
                    "their own (expert parallelism borrows the FSDP and TP ranks, ParallelDims); re-plan with etp 1");
  const long long sparse = 1LL * data_parallel_degrees(plan).second * key.cp * key.tp;
  if (key.ep > 1 && sparse % key.ep != 0)
    throw SpecError(plan_where(plan) + "ep " + num(key.ep) + " does not divide dp_shard x cp x tp = " + num(sparse) +
                    ", which torchtitan's ParallelDims requires; re-plan with --zero 3 or an ep that divides it");
  if (model.moe.enabled() && key.moe_dispatcher != MoeDispatcher::kAlltoall)
    throw SpecError(plan_where(plan) + "the MoE dispatcher " + moe_dispatcher_name(key.moe_dispatcher) +
                    " is set in torchtitan by the model's own config, not by this module; re-plan with "
                    "--moe-dispatcher alltoall");
  // torchtitan captures the forward and backward as CUDA graphs unless told not to
  // (Trainer.Config._validate_cuda_graphs), with neither pipelines nor a synchronising dispatcher.
  if (plan.execution.cuda_graphs && (key.pp > 1 || key.ep > 1))
    throw SpecError(plan_where(plan) + "the plan is priced with CUDA graphs, which torchtitan captures without pipeline "
                    "or expert parallelism only (Trainer.Config._validate_cuda_graphs); re-plan without --cuda-graphs");
  if (model.mtp_layers > 0)
    throw SpecError(plan_where(plan) + "model '" + model.name + "' trains " + num(model.mtp_layers) +
                    " multi-token-prediction layer(s), which torchtitan's base configurations leave out; remove "
                    "mtp_layers from the model file to plan without them");
}

/// `names` as a Python list of string literals, indented by 8 and wrapped at 100 columns.
std::string python_list(const std::vector<std::string>& names) {
  const std::string indent(8, ' ');
  std::string text = indent + "[", line;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string item = python_string(names[i]) + (i + 1 < names.size() ? "," : "");
    if (!line.empty() && indent.size() + 1 + line.size() + 1 + item.size() > 100) {
      text += line + "\n" + indent + " ";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + item;
  }
  return text + line + "]";
}

/// The units of each stage torchtitan builds: the plan's stages, or with virtual stages its
/// model chunks (interleaved_chunk_units), none empty.
std::vector<int> torchtitan_stage_units(const PlanFile& plan) {
  if (plan.key.virtual_stages <= 1) return plan.partition;
  std::vector<int> chunks = interleaved_chunk_units(plan);
  for (size_t k = 0; k < chunks.size(); ++k)
    if (chunks[k] == 0)
      throw SpecError(plan_where(plan) + "virtual_stages " + num(plan.key.virtual_stages) + ": model chunk " + num(k) +
                      " would hold no unit, and torchtitan builds a stage from its modules; re-plan with fewer "
                      "virtual stages");
  return chunks;
}

}  // namespace

std::vector<std::vector<std::string>> torchtitan_stage_modules(const PlanFile& plan, const ModelSpec& model) {
  stage_boundaries(plan, model);  // the partition covers the model's units exactly
  const int units = static_cast<int>(model.units.size());
  for (int u = 0; u < units; ++u) {
    const LayerRole want = u == 0 ? LayerRole::kEmbedding : u + 1 == units ? LayerRole::kPostProcess : LayerRole::kTransformer;
    if (model.units[u].role != want || !model.units[u].segment.empty())
      throw SpecError(model.source + ": layers: torchtitan's decoders are an embedding, transformer layers and a "
                      "post-process (norm and head), in that order; unit " + num(u) + " ('" + model.units[u].type +
                      "') is not");
  }
  std::vector<std::vector<std::string>> stages;
  int unit = 0;
  for (int count : torchtitan_stage_units(plan)) {
    std::vector<std::string>& modules = stages.emplace_back();
    for (int end = unit + count; unit < end; ++unit) {
      if (unit == 0) modules.push_back("tok_embeddings");
      else if (unit + 1 == units) modules.insert(modules.end(), {"norm", "lm_head"});
      else modules.push_back("layers." + num(unit - 1));
    }
  }
  return stages;
}

std::string torchtitan_config_py(const PlanFile& plan, const ModelSpec& model, const ClusterSpec& cluster) {
  const PlanKey& key = plan.key;
  const auto [module, function] = base_config(model);
  require_torchtitan_plan(plan, model, cluster);
  const auto [replicate, shard] = data_parallel_degrees(plan);
  const int microbatches = micro_batches_per_step(plan, "torchtitan's num_pp_microbatches needs");
  const std::string precision = param_precision(plan, model);
  const auto stages = torchtitan_stage_modules(plan, model);

  std::ostringstream out;
  out << "\"\"\"fasop-cpp plan for torchtitan: " << python_docstring_text(model.name) << ", tp " << key.tp << " cp "
      << key.cp << " dp " << key.dp << " pp " << key.pp;
  if (key.virtual_stages > 1) out << " (" << key.virtual_stages << " virtual stages)";
  if (key.ep > 1) out << " ep " << key.ep;
  out << ", micro-batch " << key.mbs << ", ZeRO " << key.zero_stage << ".\n\n"
      << "Written by `fasop-cpp schedule --format torchtitan` from "
      << python_docstring_text(plan.source.empty() ? "a plan" : plan.source)
      << "; re-plan rather than edit.\nRun from torchtitan's root with this file's directory on PYTHONPATH:\n"
      << "  --module <this file's name> --config fasop_plan, on " << 1LL * key.tp * key.cp * key.dp * key.pp
      << " GPUs (torchrun's nnodes x nproc_per_node).\n\"\"\"\n";
  if (key.recompute) out << "from torchtitan.distributed.activation_checkpoint import FullAC\n";
  out << "from " << module << " import " << function << "\n"
      << "from torchtitan.trainer import Trainer\n\n\n"
      << "def fasop_plan() -> Trainer.Config:\n"
      << "    config = " << function << "()\n";
  auto set = [&](const std::string& field, const std::string& value) { out << "    config." << field << " = " << value << "\n"; };
  set("parallelism.data_parallel_replicate_degree", num(replicate));
  set("parallelism.data_parallel_shard_degree", num(shard));
  set("parallelism.tensor_parallel_degree", num(key.tp));
  set("parallelism.enable_sequence_parallel", key.sequence_parallel && key.tp > 1 ? "True" : "False");
  set("parallelism.context_parallel_degree", num(key.cp));
  set("parallelism.expert_parallel_degree", num(key.ep));
  set("parallelism.pipeline_parallel_degree", num(key.pp));
  if (key.pp > 1) {
    set("parallelism.pipeline_parallel_schedule", key.virtual_stages > 1 ? "\"Interleaved1F1B\"" : "\"1F1B\"");
    set("parallelism.num_pp_microbatches", num(microbatches));
    out << "    config.parallelism.module_fqns_per_model_part = [\n";
    for (const std::vector<std::string>& stage : stages) out << python_list(stage) << ",\n";
    out << "    ]\n";
  }
  // Tokens per micro-batch and per step: torchtitan derives gradient accumulation from them
  // (trainer.py), one pass over the pipeline's micro-batches, or m steps of one with pp 1.
  set("training.num_tokens_per_microbatch_per_dp_rank", num(1LL * key.mbs * model.sequence));
  set("training.num_tokens_per_train_step", num(1LL * plan.global_batch * model.sequence));
  set("training.max_context_length", num(model.sequence));
  set("training.mixed_precision_param", python_string(precision));
  set("training.disable_cuda_graphs", plan.execution.cuda_graphs ? "False" : "True");
  set("activation_checkpoint", key.recompute ? "FullAC.Config()" : "None");
  out << "    return config\n";
  return out.str();
}

}  // namespace fasop
