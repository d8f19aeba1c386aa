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
using fasop::testing::t5_uneven_plan;
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

TEST_CASE("megatron upstream: gpt2xl tp2 pp3 dp2, uneven partition as a layout", "[emit][megatron]") {
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

TEST_CASE("megatron FASOP fork: gpt2xl's partition as --balance, transformer layers per stage", "[emit][megatron]") {
  ModelSpec model = preset_model("gpt2xl");
  std::vector<std::string> args = megatron_args(gpt2xl_plan(), model, MegatronFlavor::kFasop);
  // Upstream's tokens up to the partition, with the fork's async all-reduce turned off as
  // FASOP's runs do (else its validate_args wants CUDA_DEVICE_MAX_CONNECTIONS=1) before ZeRO's
  // flag; the fork's --balance counts transformer layers only (17, 15, 16), '-'-separated as
  // its _get_num_layers splits it.
  REQUIRE(args.size() == 31);
  CHECK(args[27] == "--no-async-tensor-model-parallel-allreduce");
  CHECK(args[29] == "--balance");
  CHECK(args[30] == "17-15-16");
  CHECK(fasop_balance(gpt2xl_plan(), model) == "17-15-16");
  std::vector<std::string> upstream = megatron_args(gpt2xl_plan(), model, MegatronFlavor::kUpstream);
  std::vector<std::string> fork_as_upstream = args;
  fork_as_upstream.erase(fork_as_upstream.begin() + 27);
  CHECK(std::vector<std::string>(fork_as_upstream.begin(), fork_as_upstream.begin() + 28) ==
        std::vector<std::string>(upstream.begin(), upstream.begin() + 28));
}

TEST_CASE("megatron text: one flag a line, layout quoted for the shell", "[emit][megatron]") {
  ModelSpec model = preset_model("gpt2xl");
  std::string text = megatron_args_text(gpt2xl_plan(), model, MegatronFlavor::kUpstream);
  CHECK(text.rfind("--tensor-model-parallel-size 2 \\\n--pipeline-model-parallel-size 3 \\\n", 0) == 0);
  CHECK_THAT(text, Contains(" \\\n--fp16 \\\n--recompute-granularity full \\\n"));
  // The last line has no backslash: '|' and '*' would be a pipe and a glob unquoted.
  const std::string tail = "\\\n--pipeline-model-parallel-layout 'Et*17|t*15|t*16L'";
  REQUIRE(text.size() > tail.size());
  CHECK(text.substr(text.size() - tail.size()) == tail);
}

TEST_CASE("megatron upstream: llama2-7b tp4 pp2, bf16 SwiGLU RMSNorm rotary untied", "[emit][megatron]") {
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

TEST_CASE("megatron: grouped-query attention names its groups", "[emit][megatron]") {
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

TEST_CASE("megatron: what a flavour cannot express is a SpecError naming the fix", "[emit][megatron]") {
  ModelSpec llama = preset_model("llama2-7b");
  CHECK_THROWS_WITH(megatron_args(llama_plan(), llama, MegatronFlavor::kFasop),
                    Contains("--swiglu") && Contains("kUpstream"));

  // T5: upstream refuses pipelining it (the fork's T5 is in its own tests below).
  ModelSpec t5 = preset_model("t5");
  PlanFile even = layout_plan(1, 1, 4, 2, 128, {25, 25}, 0, false);
  CHECK_THROWS_WITH(megatron_args(even, t5, MegatronFlavor::kUpstream),
                    Contains("pp 2") && Contains("not supported for T5") && Contains("--megatron-flavor fasop"));
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

TEST_CASE("megatron: fp8 training is bf16 with Transformer Engine's fp8 recipe", "[emit][megatron]") {
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

// T5 in FASOP's fork (Megatron-LM-2): ranks below --pipeline-model-parallel-split-rank build the
// encoder, the others the decoder, and every rank builds balance[its pipeline rank] layers
// (transformer.py _get_num_layers; FASOP's _00_conf.sh runs "11-13-11-13" with split rank 2).
// The t5 preset: 25 encoder units (encoder_embedding + 24 layers), then 25 decoder units
// (decoder_embedding + 24 layers); hidden 1024, 32 heads, ffn 4 x 1024, sequence 512, fp16.
TEST_CASE("megatron FASOP fork: uneven T5 as the split rank and --balance per pipeline rank", "[emit][megatron]") {
  ModelSpec t5 = preset_model("t5");
  // {12, 13, 11, 14} units: embedding + 11 layers | 13 | embedding + 10 | 14; encoder 11 + 13 =
  // 24, decoder 10 + 14 = 24; two encoder stages, so the decoder starts at rank 2.
  const std::vector<std::string> want = {
      "--tensor-model-parallel-size", "2", "--pipeline-model-parallel-size", "4",
      "--micro-batch-size", "1", "--global-batch-size", "64",
      "--encoder-num-layers", "24", "--decoder-num-layers", "24",
      "--hidden-size", "1024", "--num-attention-heads", "32", "--ffn-hidden-size", "4096",
      "--encoder-seq-length", "512", "--decoder-seq-length", "512", "--max-position-embeddings", "512",
      "--fp16",
      "--recompute-granularity", "full", "--recompute-method", "uniform", "--recompute-num-layers", "1",
      "--no-async-tensor-model-parallel-allreduce",
      "--pipeline-model-parallel-split-rank", "2", "--balance", "11-13-10-14"};
  CHECK(megatron_args(t5_uneven_plan(), t5, MegatronFlavor::kFasop) == want);
  CHECK(t5_split_rank(t5_uneven_plan(), t5) == 2);
  CHECK(fasop_balance(t5_uneven_plan(), t5) == "11-13-10-14");

  // Three stages, {14, 11, 25}: embedding + 13 | 11 | embedding + 24: one decoder rank.
  PlanFile three = layout_plan(1, 1, 4, 3, 128, {14, 11, 25}, 0, false);
  std::vector<std::string> args = megatron_args(three, t5, MegatronFlavor::kFasop);
  REQUIRE(args.size() >= 4);
  CHECK(std::vector<std::string>(args.end() - 4, args.end()) ==
        std::vector<std::string>{"--pipeline-model-parallel-split-rank", "2", "--balance", "13-11-24"});
  // A stage of the embedding alone builds no layer: the fork gives it its no-op layer.
  PlanFile lone = layout_plan(1, 1, 4, 3, 128, {1, 24, 25}, 0, false);
  CHECK(fasop_balance(lone, t5) == "0-24-24");
  // One stage: no split rank, no --balance.
  PlanFile single = layout_plan(1, 1, 4, 1, 128, {50}, 0, false);
  args = megatron_args(single, t5, MegatronFlavor::kFasop);
  CHECK(std::find(args.begin(), args.end(), "--balance") == args.end());
  CHECK(std::find(args.begin(), args.end(), "--pipeline-model-parallel-split-rank") == args.end());
}

TEST_CASE("megatron FASOP fork: what its T5 cannot run names the plan field and the fix", "[emit][megatron]") {
  ModelSpec t5 = preset_model("t5");
  // {20, 30}: stage 1 holds encoder layers 19-23 and the whole decoder.
  PlanFile mixed = layout_plan(1, 1, 4, 2, 128, {20, 30}, 0, false);
  CHECK_THROWS_WITH(megatron_args(mixed, t5, MegatronFlavor::kFasop),
                    Contains("partition stage 1 holds both encoder and decoder units") &&
                        Contains("exactly the encoder's 25 units"));
  PlanFile interleaved = t5_uneven_plan();
  interleaved.key.virtual_stages = 2;
  CHECK_THROWS_WITH(megatron_args(interleaved, t5, MegatronFlavor::kFasop),
                    Contains("virtual_stages 2") && Contains("Interleaved schedule not supported") &&
                        Contains("--fix vpp=1"));
  // Without a pipeline the fork builds --encoder-num-layers decoder layers: 24 encoder layers
  // and 12 decoder layers cannot run there.
  ModelSpec short_decoder = t5;
  short_decoder.units.erase(short_decoder.units.end() - 12, short_decoder.units.end());
  PlanFile single = layout_plan(1, 1, 4, 1, 128, {38}, 0, false);
  CHECK_THROWS_WITH(megatron_args(single, short_decoder, MegatronFlavor::kFasop),
                    Contains("builds --encoder-num-layers (24) decoder layers with pp 1") && Contains("--fix pp=2"));
  CHECK(megatron_args(single, short_decoder, MegatronFlavor::kUpstream).size() > 0);
  // A decoder without its embedding: the split rank's pre_process would build one the plan lacks.
  ModelSpec no_embedding = t5;
  no_embedding.units.erase(no_embedding.units.begin() + 25);
  PlanFile plan49 = layout_plan(1, 1, 4, 2, 128, {25, 24}, 0, false);
  CHECK_THROWS_WITH(megatron_args(plan49, no_embedding, MegatronFlavor::kFasop),
                    Contains("each segment starting with its one embedding unit"));
}

// gpt2xl, tp 1 pp 4 dp 2, two virtual stages a rank, the even partition {13, 12, 12, 13}:
// 12 transformer layers a stage (embedding + 12 | 12 | 12 | 12 + post), 48 / (4 x 2) = 6 a chunk.
// Interleaved, chunk c of rank r is model chunk 4c + r: rank 0 builds layers 1-6 and 25-30,
// rank 3 layers 19-24 and 43-48 (as both Megatrons' own offsets give, scripts/check-megatron-emit.py).
TEST_CASE("megatron: interleaved gpt2xl, upstream's v and the fork's layers a chunk with --balance", "[emit][megatron]") {
  ModelSpec model = preset_model("gpt2xl");
  PlanFile plan = layout_plan(1, 1, 2, 4, 64, {13, 12, 12, 13}, 0, false);
  plan.key.virtual_stages = 2;
  std::vector<std::string> up = megatron_args(plan, model, MegatronFlavor::kUpstream);
  REQUIRE(up.size() >= 2);
  CHECK(std::vector<std::string>(up.end() - 2, up.end()) ==
        std::vector<std::string>{"--num-virtual-stages-per-pipeline-rank", "2"});
  CHECK(std::find(up.begin(), up.end(), "--pipeline-model-parallel-layout") == up.end());
  // The fork: --num-layers-per-virtual-pipeline-stage 6 (its arguments.py derives v = 48 / 4 / 6 = 2)
  // and the even --balance, whose per-rank count its chunks divide by v.
  std::vector<std::string> fork = megatron_args(plan, model, MegatronFlavor::kFasop);
  REQUIRE(fork.size() >= 4);
  CHECK(std::vector<std::string>(fork.end() - 4, fork.end()) ==
        std::vector<std::string>{"--num-layers-per-virtual-pipeline-stage", "6", "--balance", "12-12-12-12"});

  // Uneven (embedding + 13 | 11 | 12 | 12 + post): neither Megatron splits a rank unevenly into chunks.
  PlanFile uneven = layout_plan(1, 1, 2, 4, 64, {14, 11, 12, 13}, 0, false);
  uneven.key.virtual_stages = 2;
  for (MegatronFlavor flavor : {MegatronFlavor::kUpstream, MegatronFlavor::kFasop})
    CHECK_THROWS_WITH(megatron_args(uneven, model, flavor),
                      Contains("need 12 layers on every stage") && Contains("stage 0 has 13"));
  // v must divide a stage's layers: 12 layers a stage, v = 5.
  PlanFile v5 = plan;
  v5.key.virtual_stages = 5;
  CHECK_THROWS_WITH(megatron_args(v5, model, MegatronFlavor::kUpstream), Contains("do not divide the 12 layers"));
  // The fork asserts pp > 2 for its interleaved schedule: pp 2, 24 layers a stage, 12 a chunk.
  PlanFile pp2 = layout_plan(1, 1, 4, 2, 64, {25, 25}, 0, false);
  pp2.key.virtual_stages = 2;
  CHECK_THROWS_WITH(megatron_args(pp2, model, MegatronFlavor::kFasop),
                    Contains("pp 2") && Contains("greater than 2 with interleaved schedule"));
  std::vector<std::string> up2 = megatron_args(pp2, model, MegatronFlavor::kUpstream);
  CHECK(up2.back() == "2");
}
