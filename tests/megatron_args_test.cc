// Megatron-LM arguments of saved plans: every token checked against numbers worked out by hand
// from the presets (configs/models/*.yaml) and the plans below.
#include <algorithm>

#include <catch2/catch.hpp>

#include "emit/megatron_args.h"
#include "specs/spec_error.h"
#include "emit_fixtures.h"
#include "test_support.h"

using namespace fasop;
using fasop::testing::layout_plan;
using fasop::testing::preset_model;
using Catch::Matchers::Contains;

namespace {


// (a) gpt2xl: 50 units = embedding + 48 transformer layers + post_process; hidden 1600,
// 16 heads, ffn 4 x 1600 = 6400, sequence 1024, fp16, tied. Partition {18, 15, 17}:
//   stage 0: embedding + layers 0-16  (1 + 17 = 18 units)  -> "Et*17", 17 layers
//   stage 1: layers 17-31             (15 units)           -> "t*15",  15 layers
//   stage 2: layers 32-47 + post      (16 + 1 = 17 units)  -> "t*16L", 16 layers
// 17 + 15 + 16 = 48 = --num-layers, as validate_layer_layout demands.
PlanFile gpt2xl_plan() { return layout_plan(2, 2, 2, 3, 64, {18, 15, 17}, 1, true); }

// (b) llama2-7b: 34 units = embedding + 32 layers + post_process; hidden 4096, 32 heads and
// 32 kv heads (no GQA), ffn 11008, sequence 4096, bf16, SwiGLU, RMSNorm, untied. Partition {17, 17}:
//   stage 0: embedding + layers 0-15 -> "Et*16"; stage 1: layers 16-31 + post -> "t*16L".
PlanFile llama_plan() { return layout_plan(2, 4, 1, 2, 1024, {17, 17}, 0, false); }

}  // namespace

TEST_CASE("megatron upstream: gpt2xl tp2 pp3 dp2, uneven partition as a layout", "[emit]") {
  ModelSpec model = preset_model("gpt2xl");
  const std::vector<std::string> want = {
      "--tensor-model-parallel-size", "2", "--pipeline-model-parallel-size", "3",
      "--micro-batch-size", "2", "--global-batch-size", "64",
      "--num-layers", "48", "--hidden-size", "1600", "--num-attention-heads", "16",
      "--ffn-hidden-size", "6400", "--seq-length", "1024", "--max-position-embeddings", "1024",
      "--fp16",
      "--recompute-granularity", "full", "--recompute-method", "uniform", "--recompute-num-layers", "1",
      "--use-distributed-optimizer",
      "--pipeline-model-parallel-layout", "Et*17|t*15|t*16L"};
  CHECK(megatron_args(gpt2xl_plan(), model, MegatronFlavor::kUpstream) == want);
  CHECK(megatron_pipeline_layout(gpt2xl_plan(), model) == "Et*17|t*15|t*16L");
}

TEST_CASE("megatron FASOP fork: gpt2xl's partition as --balance, transformer layers per stage", "[emit]") {
  ModelSpec model = preset_model("gpt2xl");
  std::vector<std::string> args = megatron_args(gpt2xl_plan(), model, MegatronFlavor::kFasop);
  // Same as upstream up to the partition; the fork's --balance counts transformer layers only
  // (17, 15, 16), '-'-separated as its _get_num_layers splits it.
  REQUIRE(args.size() == 30);
  CHECK(args[28] == "--balance");
  CHECK(args[29] == "17-15-16");
  CHECK(fasop_balance(gpt2xl_plan(), model) == "17-15-16");
  std::vector<std::string> upstream = megatron_args(gpt2xl_plan(), model, MegatronFlavor::kUpstream);
  CHECK(std::vector<std::string>(args.begin(), args.begin() + 28) ==
        std::vector<std::string>(upstream.begin(), upstream.begin() + 28));
}

TEST_CASE("megatron text: one flag a line, layout quoted for the shell", "[emit]") {
  ModelSpec model = preset_model("gpt2xl");
  std::string text = megatron_args_text(gpt2xl_plan(), model, MegatronFlavor::kUpstream);
  CHECK(text.rfind("--tensor-model-parallel-size 2 \\\n--pipeline-model-parallel-size 3 \\\n", 0) == 0);
  CHECK_THAT(text, Contains(" \\\n--fp16 \\\n--recompute-granularity full \\\n"));
  // The last line has no backslash: '|' and '*' would be a pipe and a glob unquoted.
  const std::string tail = "\\\n--pipeline-model-parallel-layout 'Et*17|t*15|t*16L'";
  REQUIRE(text.size() > tail.size());
  CHECK(text.substr(text.size() - tail.size()) == tail);
}

TEST_CASE("megatron upstream: llama2-7b tp4 pp2, bf16 SwiGLU RMSNorm rotary untied", "[emit]") {
  ModelSpec model = preset_model("llama2-7b");
  const std::vector<std::string> want = {
      "--tensor-model-parallel-size", "4", "--pipeline-model-parallel-size", "2",
      "--micro-batch-size", "2", "--global-batch-size", "1024",
      "--num-layers", "32", "--hidden-size", "4096", "--num-attention-heads", "32",
      "--ffn-hidden-size", "11008", "--seq-length", "4096", "--max-position-embeddings", "4096",
      "--swiglu", "--normalization", "RMSNorm", "--position-embedding-type", "rope",
      "--untie-embeddings-and-output-weights", "--bf16",
      "--pipeline-model-parallel-layout", "Et*16|t*16L"};
  CHECK(megatron_args(llama_plan(), model, MegatronFlavor::kUpstream) == want);
}

TEST_CASE("megatron: grouped-query attention names its groups", "[emit]") {
  ModelSpec model = preset_model("llama3-8b");  // 32 heads, 8 kv heads, 32 layers
  PlanFile plan = layout_plan(1, 8, 1, 1, 1024, {34}, 0, false);
  std::vector<std::string> args = megatron_args(plan, model, MegatronFlavor::kUpstream);
  auto at = std::find(args.begin(), args.end(), "--group-query-attention");
  REQUIRE(at != args.end());
  REQUIRE(at + 2 < args.end());
  CHECK(at[1] == "--num-query-groups");
  CHECK(at[2] == "8");
  // pp 1: nothing to place, no layout.
  CHECK(std::find(args.begin(), args.end(), "--pipeline-model-parallel-layout") == args.end());
}

TEST_CASE("megatron: what a flavour cannot express is a SpecError naming the fix", "[emit]") {
  ModelSpec llama = preset_model("llama2-7b");
  CHECK_THROWS_WITH(megatron_args(llama_plan(), llama, MegatronFlavor::kFasop),
                    Contains("--swiglu") && Contains("kUpstream"));

  // T5: upstream refuses pipelining it; the fork takes an even split per segment as a split rank.
  ModelSpec t5 = preset_model("t5");  // 25 encoder units (embedding + 24), then 25 decoder units
  PlanFile even = layout_plan(1, 1, 4, 2, 128, {25, 25}, 0, false);
  CHECK_THROWS_WITH(megatron_args(even, t5, MegatronFlavor::kUpstream), Contains("not supported for T5"));
  std::vector<std::string> args = megatron_args(even, t5, MegatronFlavor::kFasop);
  CHECK(args[8] == "--encoder-num-layers");
  CHECK(args[9] == "24");
  CHECK(args[10] == "--decoder-num-layers");
  CHECK(args[11] == "24");
  REQUIRE(args.size() >= 2);
  CHECK(args[args.size() - 2] == "--pipeline-model-parallel-split-rank");
  CHECK(args.back() == "1");
  // {14, 11, 25}: encoder stages hold 13 and 11 layers; Megatron splits 24 as 12 + 12.
  PlanFile uneven = layout_plan(1, 1, 4, 3, 128, {14, 11, 25}, 0, false);
  CHECK_THROWS_WITH(megatron_args(uneven, t5, MegatronFlavor::kFasop),
                    Contains("stage 0 holds 13 encoder layers") && Contains("cannot be expressed"));
  CHECK_THROWS_WITH(megatron_pipeline_layout(even, t5), Contains("encoder"));

  ModelSpec gpt = preset_model("gpt2xl");
  PlanFile zero2 = gpt2xl_plan();
  zero2.key.zero_stage = 2;
  CHECK_THROWS_WITH(megatron_args(zero2, gpt, MegatronFlavor::kUpstream), Contains("ZeRO stage 2"));
  PlanFile short_partition = layout_plan(2, 2, 2, 3, 64, {18, 15, 16}, 1, true);
  CHECK_THROWS_WITH(megatron_args(short_partition, gpt, MegatronFlavor::kUpstream),
                    Contains("covers 49 units") && Contains("has 50"));
  PlanFile odd_batch = layout_plan(3, 2, 2, 3, 64, {18, 15, 17}, 1, true);  // 64 % (3 x 2) = 4
  CHECK_THROWS_WITH(megatron_args(odd_batch, gpt, MegatronFlavor::kUpstream), Contains("not a multiple"));
}

TEST_CASE("megatron: fp8 training is bf16 with Transformer Engine's fp8 recipe", "[emit]") {
  ModelSpec model = preset_model("llama2-7b");
  auto tail = [&](const std::string& dtype) {
    model.dtype = dtype;
    std::vector<std::string> args = megatron_args(llama_plan(), model, MegatronFlavor::kUpstream);
    auto at = std::find(args.begin(), args.end(), "--untie-embeddings-and-output-weights");
    REQUIRE(at != args.end());
    return std::vector<std::string>(at + 1, args.end() - 2);  // before the layout
  };
  CHECK(tail("fp8") == std::vector<std::string>{"--bf16", "--fp8-format", "hybrid", "--fp8-recipe", "tensorwise"});
  CHECK(tail("mxfp8") == std::vector<std::string>{"--bf16", "--fp8-format", "e4m3", "--fp8-recipe", "mxfp8"});
  CHECK(tail("tf32").empty());  // fp32 training: Megatron's default, TF32 GEMMs PyTorch's
}
