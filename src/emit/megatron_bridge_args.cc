#include "emit/megatron_bridge_args.h"

#include <algorithm>
#include <map>
#include <set>

#include "emit/megatron_args.h"
#include "emit/plan_checks.h"
#include "emit/shell_quote.h"
#include "specs/spec_error.h"

namespace fasop {
namespace {

/// Megatron-LM arguments that describe the model, which the recipe's provider already holds.
const std::set<std::string>& architecture_flags() {
  static const std::set<std::string> flags = {
      "--num-layers", "--encoder-num-layers", "--decoder-num-layers", "--hidden-size", "--num-attention-heads",
      "--kv-channels", "--ffn-hidden-size", "--encoder-seq-length", "--decoder-seq-length",
      "--max-position-embeddings", "--mtp-num-layers", "--window-size", "--window-attn-skip-freq",
      "--multi-latent-attention", "--q-lora-rank", "--kv-lora-rank", "--qk-head-dim", "--qk-pos-emb-head-dim",
      "--v-head-dim", "--group-query-attention", "--num-query-groups", "--swiglu", "--quick-geglu",
      "--normalization", "--position-embedding-type", "--rotary-base", "--disable-bias-linear", "--hidden-dropout",
      "--attention-dropout", "--untie-embeddings-and-output-weights", "--num-experts", "--moe-router-topk",
      "--moe-ffn-hidden-size", "--moe-shared-expert-intermediate-size", "--moe-layer-freq",
      "--moe-router-load-balancing-type", "--moe-aux-loss-coeff", "--moe-grouped-gemm", "--moe-router-num-groups",
      "--moe-router-group-topk"};
  return flags;
}

/// The ConfigContainer fields each plan argument sets: a flag with a value copies it; a switch
/// sets "true". ConfigContainer's sections: megatron/bridge/training/config.py.
const std::map<std::string, std::vector<std::string>>& override_paths() {
  static const std::map<std::string, std::vector<std::string>> paths = {
      {"--tensor-model-parallel-size", {"model.tensor_model_parallel_size"}},
      {"--pipeline-model-parallel-size", {"model.pipeline_model_parallel_size"}},
      {"--context-parallel-size", {"model.context_parallel_size"}},
      {"--expert-model-parallel-size", {"model.expert_model_parallel_size"}},
      {"--expert-tensor-parallel-size", {"model.expert_tensor_parallel_size"}},
      {"--num-virtual-stages-per-pipeline-rank", {"model.virtual_pipeline_model_parallel_size"}},
      {"--pipeline-model-parallel-layout", {"model.pipeline_model_parallel_layout"}},
      {"--micro-batch-size", {"train.micro_batch_size"}},
      {"--global-batch-size", {"train.global_batch_size"}},
      // run_recipe.py: the dataset owns the sequence length and the model follows it.
      {"--seq-length", {"dataset.seq_length"}},
      {"--recompute-granularity", {"model.recompute_granularity"}},
      {"--recompute-method", {"model.recompute_method"}},
      {"--recompute-num-layers", {"model.recompute_num_layers"}},
      {"--recompute-modules", {"model.recompute_modules"}},
      {"--sequence-parallel", {"model.sequence_parallel"}},
      {"--use-distributed-optimizer", {"ddp.use_distributed_optimizer", "optimizer.use_distributed_optimizer"}},
      {"--use-megatron-fsdp", {"ddp.use_megatron_fsdp", "dist.use_megatron_fsdp"}},
      {"--data-parallel-sharding-strategy", {"ddp.data_parallel_sharding_strategy"}},
      {"--ckpt-format", {"checkpoint.ckpt_format"}},
      {"--overlap-grad-reduce", {"ddp.overlap_grad_reduce"}},
      {"--overlap-param-gather", {"ddp.overlap_param_gather"}},
      {"--tp-comm-overlap", {"model.tp_comm_overlap"}},
      {"--overlap-moe-expert-parallel-comm", {"model.overlap_moe_expert_parallel_comm"}},
      {"--delay-wgrad-compute", {"model.delay_wgrad_compute"}},
      {"--cuda-graph-impl", {"model.cuda_graph_impl"}},
      {"--moe-token-dispatcher-type", {"model.moe_token_dispatcher_type"}},
      {"--moe-flex-dispatcher-backend", {"model.moe_flex_dispatcher_backend"}},
      {"--moe-expert-capacity-factor", {"model.moe_expert_capacity_factor"}},
      {"--moe-router-force-load-balancing", {"model.moe_router_force_load_balancing"}},
  };
  return paths;
}

/// Megatron-Bridge's mixed-precision recipe (megatron/bridge/training/mixed_precision.py) for
/// the precision arguments: bf16 or fp16, then the fp8 or fp4 format and recipe if any.
std::string mixed_precision(const PlanFile& plan, const std::map<std::string, std::string>& precision) {
  auto has = [&](const std::string& flag) { return precision.count(flag) > 0; };
  auto value = [&](const std::string& flag) { return has(flag) ? precision.at(flag) : std::string(); };
  if (has("--fp4-recipe")) return "bf16_with_nvfp4_mixed";
  if (value("--fp8-recipe") == "mxfp8") return "bf16_with_mxfp8_mixed";
  if (value("--fp8-recipe") == "tensorwise") return "bf16_with_fp8_current_scaling_mixed";
  if (has("--fp8-recipe") || has("--fp8-format"))
    throw SpecError(plan_where(plan) + "fp8 recipe '" + value("--fp8-recipe") + "' has no Megatron-Bridge mixed-precision "
                    "recipe here; emit it for Megatron-LM (--format megatron)");
  if (has("--bf16")) return "bf16_mixed";
  if (has("--fp16")) return "fp16_mixed";
  throw SpecError(plan_where(plan) + "the model trains in fp32, and Megatron-Bridge's recipes train in mixed precision; "
                  "train the model in bf16, or emit it for Megatron-LM (--format megatron)");
}

/// What the plan fixes that a recipe may set otherwise, with the value of a plan whose Megatron-LM
/// arguments leave it out (their default): every field the plan was priced with is written, so
/// that no recipe's choice (Llama 3 8B's cp 2, Llama 3.1 70B's 5 virtual stages, Qwen3-30B-A3B's
/// CUDA graphs, Qwen3 32B's full recomputation) runs instead. `moe`: for a model with experts;
/// `layout`: beside a pipeline layout, which Megatron-Core refuses with the other split options.
struct PlanDefault {
  const char* path;
  const char* value;
  enum When { kAlways, kMoe, kLayout } when = kAlways;
};
const std::vector<PlanDefault>& plan_defaults() {
  static const std::vector<PlanDefault> defaults = {
      {"model.context_parallel_size", "1"},
      {"model.virtual_pipeline_model_parallel_size", "null"},
      {"model.pipeline_model_parallel_layout", "null"},
      {"model.sequence_parallel", "false"},
      {"model.recompute_granularity", "null"},
      {"model.cuda_graph_impl", "none"},
      {"ddp.use_distributed_optimizer", "false"},
      {"optimizer.use_distributed_optimizer", "false"},
      {"ddp.use_megatron_fsdp", "false"},
      {"dist.use_megatron_fsdp", "false"},
      {"ddp.overlap_grad_reduce", "false"},
      {"ddp.overlap_param_gather", "false"},
      {"model.expert_model_parallel_size", "1", PlanDefault::kMoe},
      {"model.moe_expert_capacity_factor", "null", PlanDefault::kMoe},
      {"model.moe_router_force_load_balancing", "false", PlanDefault::kMoe},
      {"model.overlap_moe_expert_parallel_comm", "false", PlanDefault::kMoe},
      {"model.delay_wgrad_compute", "false", PlanDefault::kMoe},
      {"model.account_for_embedding_in_pipeline_split", "false", PlanDefault::kLayout},
      {"model.account_for_loss_in_pipeline_split", "false", PlanDefault::kLayout},
      {"model.num_layers_in_first_pipeline_stage", "null", PlanDefault::kLayout},
      {"model.num_layers_in_last_pipeline_stage", "null", PlanDefault::kLayout},
  };
  return defaults;
}

/// A Hydra override's value: a list as [a,b], a layout (with '|' and '*') double-quoted.
std::string override_value(const std::string& flag, const std::vector<std::string>& values) {
  if (values.empty()) return "true";
  if (flag == "--recompute-modules") {
    std::string list = "[";
    for (size_t i = 0; i < values.size(); ++i) list += (i ? "," : "") + values[i];
    return list + "]";
  }
  if (flag == "--pipeline-model-parallel-layout") return "\"" + values[0] + "\"";
  return values[0];
}

}  // namespace

std::vector<std::string> megatron_bridge_args(const PlanFile& plan, const ModelSpec& model, const ClusterSpec& cluster) {
  if (model.megatron_bridge_recipe.empty())
    throw SpecError(model.source + ": stacks.megatron_bridge: model '" + model.name +
                    "' names no Megatron-Bridge recipe; add `stacks: {megatron_bridge: <recipe stem>}` "
                    "(run_recipe.py --model, e.g. llama3_8b), or emit for Megatron-LM (--format megatron)");
  const std::vector<std::string> tokens = megatron_args(plan, model, MegatronFlavor::kUpstream, FsdpImpl::kMegatron);
  require_one_gpu_per_stage(plan, cluster, "Megatron-Bridge");  // after Megatron-LM's checks: one tp and dp
  // The overrides in order, each path once.
  std::vector<std::pair<std::string, std::string>> overrides;
  auto has = [&](const std::string& path) {
    return std::any_of(overrides.begin(), overrides.end(), [&](const auto& o) { return o.first == path; });
  };
  std::map<std::string, std::string> precision;
  for (const auto& [flag, values] : split_flags(tokens)) {
    if (architecture_flags().count(flag)) continue;
    if (flag == "--bf16" || flag == "--fp16" || flag.rfind("--fp8-", 0) == 0 || flag.rfind("--fp4-", 0) == 0) {
      precision[flag] = values.empty() ? "" : values[0];
      continue;
    }
    if (flag == "--grad-reduce-in-bf16") {
      overrides.emplace_back("ddp.grad_reduce_in_fp32", "false");
      continue;
    }
    const auto path = override_paths().find(flag);
    if (path == override_paths().end())
      throw SpecError(plan_where(plan) + "Megatron-LM's " + flag + ", which the plan needs, has no Megatron-Bridge "
                      "override here; emit it for Megatron-LM (--format megatron)");
    for (const std::string& field : path->second) overrides.emplace_back(field, override_value(flag, values));
  }
  // Megatron-LM derives v from a layout; Megatron-Core wants the two to agree.
  if (has("model.pipeline_model_parallel_layout") && plan.key.virtual_stages > 1 &&
      !has("model.virtual_pipeline_model_parallel_size"))
    overrides.emplace_back("model.virtual_pipeline_model_parallel_size", std::to_string(plan.key.virtual_stages));
  const bool layout = has("model.pipeline_model_parallel_layout");
  for (const PlanDefault& d : plan_defaults())
    if (!has(d.path) && (d.when == PlanDefault::kAlways || (d.when == PlanDefault::kMoe && model.moe.enabled()) ||
                         (d.when == PlanDefault::kLayout && layout)))
      overrides.emplace_back(d.path, d.value);
  // Megatron-LM's default etp is tp, which its arguments leave unsaid.
  if (model.moe.enabled() && !has("model.expert_tensor_parallel_size"))
    overrides.emplace_back("model.expert_tensor_parallel_size", std::to_string(plan.key.tp));
  overrides.emplace_back("mixed_precision", mixed_precision(plan, precision));

  std::vector<std::string> args = {"--model", model.megatron_bridge_recipe, "--mode", "pretrain"};
  for (const auto& [path, value] : overrides) {
    // A recipe built with get_model_config() nests Megatron-Core's fields under model.transformer.
    const bool core = path.rfind("model.", 0) == 0;
    args.push_back((core ? model.megatron_bridge_transformer + path.substr(5) : path) + "=" + value);
  }
  return args;
}

std::string megatron_bridge_args_text(const PlanFile& plan, const ModelSpec& model, const ClusterSpec& cluster) {
  const std::vector<std::string> args = megatron_bridge_args(plan, model, cluster);
  const PlanKey& key = plan.key;
  std::string text = "# fasop-cpp plan for Megatron-Bridge: " + model.name + ", tp " + std::to_string(key.tp) + " cp " +
                     std::to_string(key.cp) + " dp " + std::to_string(key.dp) + " pp " + std::to_string(key.pp) +
                     " on " + std::to_string(1LL * key.tp * key.cp * key.dp * key.pp) + " GPUs.\n"
                     "# Paste after `torchrun ... scripts/training/run_recipe.py \\` (Megatron-Bridge's entry point).\n";
  for (size_t i = 0; i < args.size(); ++i) {
    // A flag and its value share a line; each override has its own.
    const bool value_of_flag = i > 0 && args[i - 1].rfind("--", 0) == 0;
    if (i > 0) text += value_of_flag ? " " : " \\\n";
    text += shell_quote(args[i]);
  }
  return text + "\n";
}

}  // namespace fasop
