// Megatron-Bridge run_recipe.py arguments of saved plans, and the plans refused.
// scripts/check-megatron-bridge-emit.py checks them against Megatron-Bridge's source.
#include <catch2/catch.hpp>

#include <algorithm>

#include "emit/megatron_bridge_args.h"
#include "emit_fixtures.h"
#include "specs/spec_error.h"
#include "test_support.h"

using namespace fasop;
using fasop::testing::layout_plan;
using fasop::testing::PresetSpecs;
using Catch::Matchers::Contains;

TEST_CASE("megatron-bridge: llama3-8b tp 2 dp 4 pp 4, distributed optimizer, full recomputation", "[emit][bridge]") {
  PresetSpecs specs("llama3-8b", "aws-h100");
  PlanFile plan = layout_plan(1, 2, 4, 4, 512, {9, 9, 9, 7}, 1, true);
  plan.key.sequence_parallel = true;
  plan.node_order.assign(4, "p5.48xlarge");
  // The layout: the embedding and 8 layers, 9, 9, then 6 layers and the loss. Llama 3's recipe
  // keeps Megatron-Core's fields under model.transformer (megatron_bridge_transformer). What the
  // plan leaves at Megatron's defaults is written too: the recipe sets cp 2.
  CHECK(megatron_bridge_args_text(plan, specs.model, specs.cluster) ==
        "# fasop-cpp plan for Megatron-Bridge: llama3-8b, tp 2 cp 1 dp 4 pp 4 on 32 GPUs.\n"
        "# Paste after `torchrun ... scripts/training/run_recipe.py \\` (Megatron-Bridge's entry point).\n"
        "--model llama3_8b \\\n"
        "--mode pretrain \\\n"
        "'model.transformer.tensor_model_parallel_size=2' \\\n"
        "'model.transformer.pipeline_model_parallel_size=4' \\\n"
        "'train.micro_batch_size=1' \\\n"
        "'train.global_batch_size=512' \\\n"
        "'dataset.seq_length=8192' \\\n"
        "'model.transformer.recompute_granularity=full' \\\n"
        "'model.transformer.recompute_method=uniform' \\\n"
        "'model.transformer.recompute_num_layers=1' \\\n"
        "'model.transformer.sequence_parallel=true' \\\n"
        "'ddp.use_distributed_optimizer=true' \\\n"
        "'optimizer.use_distributed_optimizer=true' \\\n"
        "'model.transformer.pipeline_model_parallel_layout=\"Et*8|t*9|t*9|t*6L\"' \\\n"
        "'model.transformer.context_parallel_size=1' \\\n"
        "'model.transformer.virtual_pipeline_model_parallel_size=null' \\\n"
        "'model.transformer.cuda_graph_impl=none' \\\n"
        "'ddp.use_megatron_fsdp=false' \\\n"
        "'dist.use_megatron_fsdp=false' \\\n"
        "'ddp.overlap_grad_reduce=false' \\\n"
        "'ddp.overlap_param_gather=false' \\\n"
        "'model.transformer.account_for_embedding_in_pipeline_split=false' \\\n"
        "'model.transformer.account_for_loss_in_pipeline_split=false' \\\n"
        "'model.transformer.num_layers_in_first_pipeline_stage=null' \\\n"
        "'model.transformer.num_layers_in_last_pipeline_stage=null' \\\n"
        "'mixed_precision=bf16_mixed'\n");
}

TEST_CASE("megatron-bridge: a MoE plan's expert degrees and dispatcher, Megatron-FSDP for ZeRO 3", "[emit][bridge]") {
  PresetSpecs specs("qwen3-30b-a3b", "dgx-h100");
  PlanFile plan = layout_plan(1, 1, 16, 2, 512, {25, 25}, 3, false);
  plan.key.ep = 8;
  plan.node_order.assign(4, specs.cluster.node_types[0].name);
  const std::vector<std::string> args = megatron_bridge_args(plan, specs.model, specs.cluster);
  auto has = [&](const std::string& arg) { return std::find(args.begin(), args.end(), arg) != args.end(); };
  CHECK(args[1] == "qwen3_30b_a3b");
  CHECK(has("model.expert_model_parallel_size=8"));
  CHECK(has("model.moe_token_dispatcher_type=alltoall"));
  CHECK(has("ddp.use_megatron_fsdp=true"));
  CHECK(has("dist.use_megatron_fsdp=true"));
  CHECK(has("ddp.data_parallel_sharding_strategy=optim_grads_params"));
  CHECK(has("model.pipeline_model_parallel_layout=\"Et*24|t*24L\""));
  // Qwen3's recipes are GPTModelProviders: Megatron-Core's fields directly under model. The
  // recipe's own choices for what the plan leaves at Megatron's defaults are overridden: etp is tp,
  // no capacity factor, no CUDA graphs (Qwen3-30B-A3B's recipe sets transformer_engine).
  CHECK(has("model.expert_tensor_parallel_size=1"));
  CHECK(has("model.moe_expert_capacity_factor=null"));
  CHECK(has("model.cuda_graph_impl=none"));
  CHECK(has("model.context_parallel_size=1"));
  // The architecture is the recipe's: no hidden size, heads or expert count among the overrides.
  for (const std::string& arg : args) {
    CHECK(arg.find("hidden") == std::string::npos);
    CHECK(arg.find("num_moe_experts") == std::string::npos);
  }
}

TEST_CASE("megatron-bridge: a model without a recipe and fp32 training are refused", "[emit][bridge]") {
  PresetSpecs gpt2("gpt2xl", "aws-h100");
  const PlanFile plan = layout_plan(1, 2, 4, 1, 512, {50}, 0, false);
  CHECK_THROWS_WITH(megatron_bridge_args(plan, gpt2.model, gpt2.cluster),
                    Contains("stacks.megatron_bridge") && Contains("names no Megatron-Bridge recipe"));
  PresetSpecs llama("llama3-8b", "aws-h100");
  llama.model.dtype = "fp32";
  CHECK_THROWS_WITH(megatron_bridge_args(layout_plan(1, 2, 4, 1, 512, {34}, 0, false), llama.model, llama.cluster),
                    Contains("Megatron-Bridge's recipes train in mixed precision"));
}
