// torchtitan configuration modules of saved plans, byte for byte, and the plans torchtitan cannot
// run as priced. scripts/check-torchtitan-emit.py checks such modules against torchtitan's source.
#include <catch2/catch.hpp>

#include "emit/torchtitan_config.h"
#include "emit_fixtures.h"
#include "specs/spec_error.h"
#include "test_support.h"

using namespace fasop;
using fasop::testing::layout_plan;
using fasop::testing::PresetSpecs;
using Catch::Matchers::Contains;

namespace {

/// `plan` on `nodes` nodes of `type`, each named in its node order.
PlanFile on_nodes(PlanFile plan, const std::string& type, int nodes) {
  plan.node_order.assign(nodes, type);
  return plan;
}

}  // namespace

TEST_CASE("torchtitan: llama3-8b tp 2 dp 4 pp 4, FSDP2, full recomputation, the whole module", "[emit][torchtitan]") {
  // 32 GPUs on 4 nodes of 8 H100. 512 sequences / (mbs 1 x dp 4) = 128 micro-batches; tokens
  // 1 x 8192 a micro-batch and 512 x 8192 = 4,194,304 a step. Units: the embedding, 32 layers,
  // the post-process; stages of 9, 9, 9 and 7 units.
  PresetSpecs specs("llama3-8b", "aws-h100");
  const PlanFile plan = on_nodes(layout_plan(1, 2, 4, 4, 512, {9, 9, 9, 7}, 3, true), "p5.48xlarge", 4);
  CHECK(torchtitan_config_py(plan, specs.model, specs.cluster) ==
        "\"\"\"fasop-cpp plan for torchtitan: llama3-8b, tp 2 cp 1 dp 4 pp 4, micro-batch 1, ZeRO 3.\n"
        "\n"
        "Written by `fasop-cpp schedule --format torchtitan` from a plan; re-plan rather than edit.\n"
        "Run from torchtitan's root with this file's directory on PYTHONPATH:\n"
        "  --module <this file's name> --config fasop_plan, on 32 GPUs (torchrun's nnodes x nproc_per_node).\n"
        "\"\"\"\n"
        "from torchtitan.distributed.activation_checkpoint import FullAC\n"
        "from torchtitan.models.llama3.config_registry import llama3_8b\n"
        "from torchtitan.trainer import Trainer\n"
        "\n"
        "\n"
        "def fasop_plan() -> Trainer.Config:\n"
        "    config = llama3_8b()\n"
        "    config.parallelism.data_parallel_replicate_degree = 1\n"
        "    config.parallelism.data_parallel_shard_degree = 4\n"
        "    config.parallelism.tensor_parallel_degree = 2\n"
        "    config.parallelism.enable_sequence_parallel = False\n"
        "    config.parallelism.context_parallel_degree = 1\n"
        "    config.parallelism.expert_parallel_degree = 1\n"
        "    config.parallelism.pipeline_parallel_degree = 4\n"
        "    config.parallelism.pipeline_parallel_schedule = \"1F1B\"\n"
        "    config.parallelism.num_pp_microbatches = 128\n"
        "    config.parallelism.module_fqns_per_model_part = [\n"
        "        [\"tok_embeddings\", \"layers.0\", \"layers.1\", \"layers.2\", \"layers.3\", \"layers.4\", \"layers.5\",\n"
        "         \"layers.6\", \"layers.7\"],\n"
        "        [\"layers.8\", \"layers.9\", \"layers.10\", \"layers.11\", \"layers.12\", \"layers.13\", \"layers.14\",\n"
        "         \"layers.15\", \"layers.16\"],\n"
        "        [\"layers.17\", \"layers.18\", \"layers.19\", \"layers.20\", \"layers.21\", \"layers.22\", \"layers.23\",\n"
        "         \"layers.24\", \"layers.25\"],\n"
        "        [\"layers.26\", \"layers.27\", \"layers.28\", \"layers.29\", \"layers.30\", \"layers.31\", \"norm\",\n"
        "         \"lm_head\"],\n"
        "    ]\n"
        "    config.training.num_tokens_per_microbatch_per_dp_rank = 8192\n"
        "    config.training.num_tokens_per_train_step = 4194304\n"
        "    config.training.max_context_length = 8192\n"
        "    config.training.mixed_precision_param = \"bfloat16\"\n"
        "    config.training.disable_cuda_graphs = True\n"
        "    config.activation_checkpoint = FullAC.Config()\n"
        "    return config\n");
}

TEST_CASE("torchtitan: DDP without recomputation, sequence parallelism, one stage", "[emit][torchtitan]") {
  PresetSpecs specs("llama3-8b", "aws-h100");
  PlanFile plan = on_nodes(layout_plan(2, 4, 8, 1, 512, {34}, 0, false), "p5.48xlarge", 4);
  plan.key.sequence_parallel = true;
  const std::string text = torchtitan_config_py(plan, specs.model, specs.cluster);
  // ZeRO 0 replicates: dp 8 as replicate 8, shard 1. No pipeline lines with pp 1; tokens
  // 2 x 8192 a micro-batch (torchtitan accumulates 512 / (2 x 8) = 32 of them).
  CHECK_THAT(text, Contains("    config.parallelism.data_parallel_replicate_degree = 8\n"
                            "    config.parallelism.data_parallel_shard_degree = 1\n"
                            "    config.parallelism.tensor_parallel_degree = 4\n"
                            "    config.parallelism.enable_sequence_parallel = True\n"));
  CHECK_THAT(text, Contains("    config.parallelism.pipeline_parallel_degree = 1\n"
                            "    config.training.num_tokens_per_microbatch_per_dp_rank = 16384\n"));
  CHECK_THAT(text, Contains("    config.training.disable_cuda_graphs = True\n    config.activation_checkpoint = None\n"));
  // Priced with CUDA graphs, which torchtitan captures without pipelines: kept on here.
  plan.execution.cuda_graphs = true;
  CHECK_THAT(torchtitan_config_py(plan, specs.model, specs.cluster), Contains("disable_cuda_graphs = False\n"));
  CHECK(text.find("FullAC") == std::string::npos);
  CHECK(text.find("module_fqns_per_model_part") == std::string::npos);
}

TEST_CASE("torchtitan: virtual stages as Megatron's model chunks, chunk c of rank r is part c x pp + r",
          "[emit][torchtitan]") {
  // pp 2, v 2, 17 units a rank: chunks of 9 then 8 on each rank, so the parts in model order
  // hold 9 (rank 0), 9 (rank 1), 8 (rank 0), 8 (rank 1) units.
  PresetSpecs specs("llama3-8b", "aws-h100");
  PlanFile plan = on_nodes(layout_plan(1, 8, 2, 2, 512, {17, 17}, 3, false), "p5.48xlarge", 4);
  plan.key.virtual_stages = 2;
  const auto stages = torchtitan_stage_modules(plan, specs.model);
  REQUIRE(stages.size() == 4);
  CHECK(stages[0].front() == "tok_embeddings");
  CHECK(stages[0].back() == "layers.7");
  CHECK(stages[1] == std::vector<std::string>{"layers.8", "layers.9", "layers.10", "layers.11", "layers.12", "layers.13",
                                              "layers.14", "layers.15", "layers.16"});
  CHECK(stages[2].front() == "layers.17");
  CHECK(stages[2].back() == "layers.24");
  CHECK(stages[3] == std::vector<std::string>{"layers.25", "layers.26", "layers.27", "layers.28", "layers.29",
                                              "layers.30", "layers.31", "norm", "lm_head"});
  CHECK_THAT(torchtitan_config_py(plan, specs.model, specs.cluster),
             Contains("pipeline_parallel_schedule = \"Interleaved1F1B\"\n    config.parallelism.num_pp_microbatches = 256\n"));
}

TEST_CASE("torchtitan: a MoE plan's expert parallelism borrows the FSDP ranks", "[emit][torchtitan]") {
  // qwen3-30b-a3b: 48 MoE layers; ep 8 divides dp_shard x cp x tp = 16.
  PresetSpecs specs("qwen3-30b-a3b", "dgx-h100");
  PlanFile plan = on_nodes(layout_plan(1, 1, 16, 2, 512, {25, 25}, 3, true), specs.cluster.node_types[0].name, 4);
  plan.key.ep = 8;
  const std::string text = torchtitan_config_py(plan, specs.model, specs.cluster);
  CHECK_THAT(text, Contains("from torchtitan.models.qwen3.config_registry import qwen3_30b_a3b\n"));
  CHECK_THAT(text, Contains("    config.parallelism.expert_parallel_degree = 8\n"));
  CHECK_THAT(text, Contains("\"layers.47\", \"norm\", \"lm_head\"]"));
  // With ZeRO 0 nothing is sharded: dp_shard x cp x tp = 1, which ep 8 does not divide.
  plan.key.zero_stage = 0;
  CHECK_THROWS_WITH(torchtitan_config_py(plan, specs.model, specs.cluster),
                    Contains("ep 8 does not divide dp_shard x cp x tp = 1") && Contains("ParallelDims"));
}

TEST_CASE("torchtitan: plans it cannot run as priced are refused with the reason", "[emit][torchtitan]") {
  PresetSpecs specs("llama3-8b", "aws-h100");
  const PlanFile fsdp = on_nodes(layout_plan(1, 2, 4, 4, 512, {9, 9, 9, 7}, 3, false), "p5.48xlarge", 4);
  auto refused = [&](const PlanFile& plan, const ModelSpec& model, const ClusterSpec& cluster) {
    try {
      torchtitan_config_py(plan, model, cluster);
    } catch (const SpecError& e) {
      return std::string(e.what());
    }
    return std::string("emitted");
  };
  PlanFile zero1 = fsdp;
  zero1.key.zero_stage = 1;
  CHECK_THAT(refused(zero1, specs.model, specs.cluster), Contains("ZeRO 1 and 2 have no torchtitan form"));
  PlanFile selective = fsdp;
  selective.key.selective_recompute = true;
  CHECK_THAT(refused(selective, specs.model, specs.cluster), Contains("SelectiveAC saves chosen ops"));
  PlanFile graphs = fsdp;
  graphs.execution.cuda_graphs = true;
  CHECK_THAT(refused(graphs, specs.model, specs.cluster), Contains("without pipeline or expert parallelism only"));
  PlanFile per_stage_tp = fsdp;
  per_stage_tp.key.stage_tp = {2, 2, 4, 4};
  CHECK_THAT(refused(per_stage_tp, specs.model, specs.cluster), Contains("stage_tp"));
  // A model torchtitan does not ship.
  PresetSpecs llama2("llama2-7b", "aws-h100");
  CHECK_THAT(refused(layout_plan(1, 2, 4, 4, 512, {9, 9, 9, 7}, 3, false), llama2.model, llama2.cluster),
             Contains("stacks.torchtitan") && Contains("names no torchtitan configuration"));
  // Stage 1 of 16 GPUs starts on the H100 node and ends on the A100 one (8 GPUs a node, stages of
  // tp 2 x dp 8).
  PresetSpecs mixed("llama3-8b", "mixed-h100-a100-l4");
  PlanFile straddling = layout_plan(1, 2, 8, 2, 512, {17, 17}, 3, false);
  straddling.node_order = {"p5.48xlarge", "p5.48xlarge", "p5.48xlarge", "p4de.24xlarge"};
  CHECK_THAT(refused(straddling, mixed.model, mixed.cluster), Contains("pipeline stage 1 runs on H100 and A100-80G GPUs"));
  straddling.node_order = {"p5.48xlarge", "p5.48xlarge", "p4de.24xlarge", "p4de.24xlarge"};
  CHECK_NOTHROW(torchtitan_config_py(straddling, mixed.model, mixed.cluster));
}
