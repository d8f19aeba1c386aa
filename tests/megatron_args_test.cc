// Megatron-LM arguments of saved plans: every token checked against numbers worked out by hand
// from the presets (configs/models/*.yaml) and the plans below.
#include <algorithm>

#include <catch2/catch.hpp>

#include "emit/deepspeed_config.h"
#include "emit/megatron_args.h"
#include "emit/slapo_schedule.h"
#include "specs/pipeline_layout.h"
#include "specs/spec_error.h"
#include "specs/spec_loader.h"
#include "emit_fixtures.h"
#include "test_support.h"

using namespace fasop;
using fasop::testing::layout_plan;
using fasop::testing::preset_model;
using fasop::testing::spec_error;
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

TEST_CASE("megatron upstream: ZeRO 2 and 3 are Megatron-FSDP's optim_grads and optim_grads_params", "[emit][megatron]") {
  ModelSpec model = preset_model("llama2-7b");
  PlanFile plan = layout_plan(1, 1, 16, 1, 1024, {34}, 0, false);  // tp 1, dp 16, pp 1: the recipes' FSDP layout
  auto tail = [&](int zero) {
    plan.key.zero_stage = zero;
    const std::vector<std::string> args = megatron_args(plan, model, MegatronFlavor::kUpstream);
    const auto at = std::find(args.begin(), args.end(), "--use-distributed-optimizer");
    return at == args.end() ? std::vector<std::string>{} : std::vector<std::string>(at, args.end());
  };
  CHECK(tail(0).empty());
  // pp 1: no layout follows.
  CHECK(tail(1) == std::vector<std::string>{"--use-distributed-optimizer"});
  CHECK(tail(2) == std::vector<std::string>{"--use-distributed-optimizer", "--use-megatron-fsdp",
                                            "--data-parallel-sharding-strategy", "optim_grads", "--ckpt-format",
                                            "fsdp_dtensor"});
  CHECK(tail(3) == std::vector<std::string>{"--use-distributed-optimizer", "--use-megatron-fsdp",
                                            "--data-parallel-sharding-strategy", "optim_grads_params",
                                            "--ckpt-format", "fsdp_dtensor"});
}

TEST_CASE("megatron upstream: ZeRO-3 as PyTorch FSDP2 where Megatron-LM runs it", "[emit][megatron]") {
  ModelSpec model = preset_model("llama2-7b");
  PlanFile plan = layout_plan(1, 1, 16, 1, 1024, {34}, 0, false);  // tp 1, dp 16, pp 1
  plan.key.zero_stage = 3;
  const std::vector<std::string> args = megatron_args(plan, model, MegatronFlavor::kUpstream, FsdpImpl::kTorch);
  // validate_args: no distributed optimizer, no gradient accumulation fusion, a torch_dist
  // checkpoint; FSDP2 prefetches itself, so no --overlap-param-gather (which wants the others).
  const auto at = std::find(args.begin(), args.end(), "--use-torch-fsdp2");
  REQUIRE(at != args.end());
  CHECK(std::vector<std::string>(at, args.end()) ==
        std::vector<std::string>{"--use-torch-fsdp2", "--no-gradient-accumulation-fusion", "--ckpt-format",
                                 "torch_dist"});
  for (const char* absent : {"--use-distributed-optimizer", "--overlap-param-gather", "--use-megatron-fsdp"})
    CHECK(std::find(args.begin(), args.end(), absent) == args.end());
  CHECK(std::find(args.begin(), args.end(), "--untie-embeddings-and-output-weights") != args.end());
  // ZeRO 0 and 1 shard nothing FSDP would: the choice changes nothing.
  plan.key.zero_stage = 1;
  CHECK(megatron_args(plan, model, MegatronFlavor::kUpstream, FsdpImpl::kTorch) ==
        megatron_args(plan, model, MegatronFlavor::kUpstream));
  // What validate_args refuses, refused with the reason and the fix.
  plan.key.zero_stage = 2;
  CHECK_THROWS_WITH(megatron_args(plan, model, MegatronFlavor::kUpstream, FsdpImpl::kTorch),
                    Contains("--fsdp torch") && Contains("ZeRO 2") && Contains("--fsdp megatron"));
  plan.key.zero_stage = 3;
  PlanFile pp2 = layout_plan(1, 1, 8, 2, 1024, {17, 17}, 0, false);
  pp2.key.zero_stage = 3;
  CHECK_THROWS_WITH(megatron_args(pp2, model, MegatronFlavor::kUpstream, FsdpImpl::kTorch),
                    Contains("without pipeline parallelism") && Contains("pp 2"));
  ModelSpec tied = preset_model("gpt2xl");
  PlanFile gpt = layout_plan(1, 1, 16, 1, 64, {50}, 0, false);
  gpt.key.zero_stage = 3;
  CHECK_THROWS_WITH(megatron_args(gpt, tied, MegatronFlavor::kUpstream, FsdpImpl::kTorch),
                    Contains("--untie-embeddings-and-output-weights") && Contains("'gpt2xl' ties them"));
  ModelSpec half = model;
  half.dtype = "fp16";
  CHECK_THROWS_WITH(megatron_args(plan, half, MegatronFlavor::kUpstream, FsdpImpl::kTorch),
                    Contains("without fp16") && Contains("bf16"));
  // FASOP's fork predates FSDP2 (GPT-2 XL: the fork takes the rest of its arguments).
  CHECK_THROWS_WITH(megatron_args(gpt, tied, MegatronFlavor::kFasop, FsdpImpl::kTorch),
                    Contains("fork") && Contains("--use-torch-fsdp2"));
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
      "--disable-bias-linear", "--hidden-dropout", "0", "--attention-dropout", "0",
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
                    Contains("--swiglu") && Contains("--megatron-flavor upstream"));

  // T5: upstream refuses pipelining it (the fork's T5 is in its own tests below).
  ModelSpec t5 = preset_model("t5");
  PlanFile even = layout_plan(1, 1, 4, 2, 128, {25, 25}, 0, false);
  CHECK_THROWS_WITH(megatron_args(even, t5, MegatronFlavor::kUpstream),
                    Contains("pp 2") && Contains("not supported for T5") && Contains("--megatron-flavor fasop"));
  CHECK_THROWS_WITH(megatron_pipeline_layout(even, t5), Contains("encoder"));

  ModelSpec gpt = preset_model("gpt2xl");
  PlanFile zero2 = gpt2xl_plan();
  zero2.key.zero_stage = 2;
  CHECK_THROWS_WITH(megatron_args(zero2, gpt, MegatronFlavor::kFasop),
                    Contains("--use-megatron-fsdp (Megatron-FSDP, ZeRO stage 2") && Contains("--zero 0 or 1"));
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
  // NVFP4: Megatron-Bridge's bf16_with_nvfp4_mixed (fp4 e2m1, recipe nvfp4, no fp8 flags).
  CHECK(tail("nvfp4") == std::vector<std::string>{"--bf16", "--fp4-format", "e2m1", "--fp4-recipe", "nvfp4"});
  CHECK(tail("tf32").empty());  // fp32 training: Megatron's default, TF32 GEMMs PyTorch's
}

TEST_CASE("megatron: bf16 gradients are --grad-reduce-in-bf16, upstream's alone", "[emit][megatron]") {
  ModelSpec model = preset_model("llama2-7b");  // bf16
  PlanFile plan = llama_plan();
  plan.execution.grad_reduce_in_bf16 = true;
  auto has = [](const std::vector<std::string>& args) {
    return std::find(args.begin(), args.end(), "--grad-reduce-in-bf16") != args.end();
  };
  CHECK(has(megatron_args(plan, model, MegatronFlavor::kUpstream)));
  CHECK_FALSE(has(megatron_args(llama_plan(), model, MegatronFlavor::kUpstream)));
  model.dtype = "mxfp8";  // fp8 training keeps bf16 parameters and gradients
  CHECK(has(megatron_args(plan, model, MegatronFlavor::kUpstream)));
  ModelSpec gpt2xl = preset_model("gpt2xl");  // what the fork builds, in bf16: the fork has no such flag
  gpt2xl.dtype = "bf16";
  PlanFile fork_plan = gpt2xl_plan();
  fork_plan.execution.grad_reduce_in_bf16 = true;
  CHECK_THROWS_WITH(megatron_args(fork_plan, gpt2xl, MegatronFlavor::kFasop), Contains("--grad-reduce-in-bf16"));
  gpt2xl.dtype = "fp16";  // fp16 gradients are fp16 already: nothing to write
  CHECK_FALSE(has(megatron_args(fork_plan, gpt2xl, MegatronFlavor::kUpstream)));
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

  // Uneven (embedding + 13 | 11 | 12 | 12 + post): the fork splits a rank only evenly into
  // chunks; upstream takes a layout of 4 x 2 chunks, each rank's units halved (larger first):
  // rank 0 E t*6 and t*7, rank 1 t*6 and t*5, rank 2 t*6 twice, rank 3 t*7 and t*5 L, model chunk
  // c x 4 + r holding rank r's chunk c.
  PlanFile uneven = layout_plan(1, 1, 2, 4, 64, {14, 11, 12, 13}, 0, false);
  uneven.key.virtual_stages = 2;
  CHECK_THROWS_WITH(megatron_args(uneven, model, MegatronFlavor::kFasop),
                    Contains("need 12 layers on every stage") && Contains("stage 0 has 13"));
  std::vector<std::string> layout = megatron_args(uneven, model, MegatronFlavor::kUpstream);
  REQUIRE(layout.size() >= 2);
  CHECK(std::vector<std::string>(layout.end() - 2, layout.end()) ==
        std::vector<std::string>{"--pipeline-model-parallel-layout", "Et*6|(t*6|)*2(t*7|)*2t*5|t*6|t*5L"});
  // Read back as Megatron reads it: the plan's units per rank.
  PipelineLayout read;
  std::string error;
  REQUIRE(parse_pipeline_layout(layout.back(), &read, &error));
  CHECK(layout_units_per_rank(read, 4, 2, 48, 0, &error) == std::vector<int>{14, 11, 12, 13});
  // v need not divide a stage's layers with a layout: 12 layers a stage, v = 5 (chunks of 3, 3, 2,
  // 2, 2 units; the first and last stages' first and last chunk hold the embedding and loss).
  PlanFile v5 = plan;
  v5.key.virtual_stages = 5;
  REQUIRE(parse_pipeline_layout(megatron_args(v5, model, MegatronFlavor::kUpstream).back(), &read, &error));
  CHECK(layout_units_per_rank(read, 4, 5, 48, 0, &error) == std::vector<int>{13, 12, 12, 13});
  CHECK(read.chunks[0] == "Ett");
  CHECK(read.chunks[19] == "tL");
  // Upstream's layout of a pp 4 partition at v 2, and the units per rank Megatron reads from it.
  auto v2_layout = [&](std::vector<int> partition) {
    PlanFile plan_v2 = layout_plan(1, 1, 2, 4, 64, std::move(partition), 0, false);
    plan_v2.key.virtual_stages = 2;
    return megatron_args(plan_v2, model, MegatronFlavor::kUpstream).back();
  };
  auto units_read = [&](const std::string& text) {
    REQUIRE(parse_pipeline_layout(text, &read, &error));
    return layout_units_per_rank(read, 4, 2, 48, 0, &error);
  };
  // A stage with fewer units than chunks leaves the rest empty, as Megatron's layout allows:
  // rank 0 holds the embedding alone in its first chunk and nothing in its second.
  const std::string thin = v2_layout({1, 23, 12, 14});
  CHECK(thin == "E|t*12|t*6|t*7||t*11|t*6|t*6L");
  CHECK(units_read(thin) == std::vector<int>{1, 23, 12, 14});
  // The last rank's empty chunks come first: the loss must close the last model chunk.
  const std::string thin_last = v2_layout({14, 23, 12, 1});
  CHECK(thin_last == "Et*6|t*12|t*6||t*7|t*11|t*6|L");
  CHECK(units_read(thin_last) == std::vector<int>{14, 23, 12, 1});
  // The fork asserts pp > 2 for its interleaved schedule: pp 2, 24 layers a stage, 12 a chunk.
  PlanFile pp2 = layout_plan(1, 1, 4, 2, 64, {25, 25}, 0, false);
  pp2.key.virtual_stages = 2;
  CHECK_THROWS_WITH(megatron_args(pp2, model, MegatronFlavor::kFasop),
                    Contains("pp 2") && Contains("greater than 2 with interleaved schedule"));
  std::vector<std::string> up2 = megatron_args(pp2, model, MegatronFlavor::kUpstream);
  CHECK(up2.back() == "2");
}

// Context and expert parallelism, mixtures of experts, fp8 on the GPUs a plan names.
namespace {

// A small DeepSeek-style mixture of experts: 16 layers, the first 3 dense (ffn 4096), 13 MoE
// layers of 16 experts of width 1408, top-2, a shared expert of 2816, token dropping; 16 heads
// of 128 (not hidden / heads = 64: --kv-channels), 4 key/value heads. 18 units: embedding +
// 16 layers + post_process.
ModelSpec moe_model(bool token_drop = true, int shared = 2816) {
  return parse_model("name: moe-test\nfamily: llama\nhidden: 1024\nheads: 16\nkv_heads: 4\nhead_dim: 128\n"
                     "ffn_hidden: 4096\nsequence: 2048\nvocab: 32000\nglobal_batch: 256\ndtype: bf16\n"
                     "activation: swiglu\nnorm: rmsnorm\ntied_embeddings: false\n"
                     "moe: {experts: 16, top_k: 2, expert_ffn_hidden: 1408, shared_expert_ffn_hidden: " +
                         std::to_string(shared) + ", dense_layers: 3, token_drop: " + (token_drop ? "true" : "false") +
                         "}\n"
                         "layers:\n"
                         "  - {type: embedding, role: embedding}\n"
                         "  - {type: transformer, role: transformer, repeat: 3}\n"
                         "  - {type: moe_layer, role: transformer, moe: true, repeat: 13}\n"
                         "  - {type: post_process, role: post_process}\n",
                     "moe-test.yaml");
}

// tp 2, dp 8, pp 2 (32 GPUs, 16 a stage), ep 8 with sequence parallelism; {9, 9}: embedding +
// layers 0-7 | layers 8-15 + post_process -> "Et*8|t*8L".
PlanFile moe_plan() {
  PlanFile plan = layout_plan(1, 2, 8, 2, 256, {9, 9}, 0, false);
  plan.key.ep = 8;
  plan.key.sequence_parallel = true;
  return plan;
}

std::vector<std::string> without(std::vector<std::string> args, const std::vector<std::string>& flags) {
  for (const std::string& flag : flags) {
    auto at = std::find(args.begin(), args.end(), flag);
    if (at == args.end()) continue;
    auto end = at + 1;
    if (end != args.end() && end->rfind("--", 0) != 0) ++end;
    args.erase(at, end);
  }
  return args;
}

bool has(const std::vector<std::string>& args, const std::string& flag) {
  return std::find(args.begin(), args.end(), flag) != args.end();
}

/// The value after `flag` ("" where it is absent or last).
std::string flag_value(const std::vector<std::string>& args, const std::string& flag) {
  auto at = std::find(args.begin(), args.end(), flag);
  return at == args.end() || at + 1 == args.end() ? "" : *(at + 1);
}

}  // namespace

TEST_CASE("megatron upstream: a run trains the model the cost model priced (no biases, no dropout, its rope base)",
          "[emit][megatron]") {
  // Megatron-LM's defaults are biases on, 10% dropout and rope base 10000: Llama 3 has none of
  // them (meta-llama/Meta-Llama-3-8B config.json: rope_theta 500000, no biases, no dropout).
  const std::vector<std::string> llama3 = megatron_args(llama_plan(), preset_model("llama3-8b"), MegatronFlavor::kUpstream);
  CHECK(flag_value(llama3, "--rotary-base") == "500000");
  CHECK(has(llama3, "--disable-bias-linear"));
  CHECK(flag_value(llama3, "--hidden-dropout") == "0");
  CHECK(flag_value(llama3, "--attention-dropout") == "0");
  // GPT-2's are Megatron's defaults: no flag.
  const std::vector<std::string> gpt2 = megatron_args(gpt2xl_plan(), preset_model("gpt2xl"), MegatronFlavor::kUpstream);
  CHECK(!has(gpt2, "--rotary-base"));
  CHECK(!has(gpt2, "--disable-bias-linear"));
  CHECK(!has(gpt2, "--hidden-dropout"));
  // A model file's own dropout is passed as written.
  ModelSpec dropped = preset_model("gpt2xl");
  dropped.attention_dropout = 0.05;
  CHECK(flag_value(megatron_args(gpt2xl_plan(), dropped, MegatronFlavor::kUpstream), "--attention-dropout") == "0.05");
}


TEST_CASE("megatron upstream: cp 2 is --context-parallel-size, Megatron's dp is world / (tp x cp x pp)",
          "[emit][megatron][cp]") {
  ModelSpec model = preset_model("llama2-7b");  // sequence 4096: 2 x cp = 4 chunks of 1024
  PlanFile plan = llama_plan();                 // mbs 2, tp 4, dp 1, pp 2: 16 GPUs with cp 2
  plan.key.cp = 2;
  const std::vector<std::string> want = {
      "--tensor-model-parallel-size", "4", "--pipeline-model-parallel-size", "2", "--context-parallel-size", "2",
      "--micro-batch-size", "2", "--global-batch-size", "1024",
      "--num-layers", "32", "--hidden-size", "4096", "--num-attention-heads", "32",
      "--ffn-hidden-size", "11008", "--seq-length", "4096", "--max-position-embeddings", "4096",
      "--swiglu", "--normalization", "RMSNorm", "--position-embedding-type", "rope",
      "--disable-bias-linear", "--hidden-dropout", "0", "--attention-dropout", "0",
      "--untie-embeddings-and-output-weights", "--bf16",
      "--pipeline-model-parallel-layout", "Et*16|t*16L"};
  CHECK(megatron_args(plan, model, MegatronFlavor::kUpstream) == want);
  // The batch splits over dp, not cp: 1024 / (2 x 1) micro-batches.
  plan.key.dp = 3;
  CHECK_THROWS_WITH(megatron_args(plan, model, MegatronFlavor::kUpstream), Contains("micro_batch x dp (6)"));
  plan.key.dp = 1;

  // 4096 tokens do not split into 2 x 3 chunks.
  plan.key.cp = 3;
  CHECK(spec_error([&] { megatron_args(plan, model, MegatronFlavor::kUpstream); }) ==
        "plan: cp 3 does not split model 'llama2-7b''s sequence of 4096 tokens into 2 x cp chunks (Megatron-LM "
        "asserts \"seq-length should be a multiple of 2 * context-parallel-size\"); set cp so that 2 x cp divides 4096");
  plan.key.cp = 0;
  CHECK_THROWS_WITH(megatron_args(plan, model, MegatronFlavor::kUpstream), Contains("cp is 0"));

  // FASOP's fork has no context parallelism (a GPT-2 plan, which the fork otherwise runs).
  ModelSpec gpt = preset_model("gpt2xl");
  PlanFile gpt_cp = layout_plan(2, 2, 1, 3, 64, {18, 15, 17}, 1, true);
  gpt_cp.key.cp = 2;
  CHECK(megatron_args(gpt_cp, gpt, MegatronFlavor::kUpstream)[5] == "2");
  CHECK_THROWS_WITH(megatron_args(gpt_cp, gpt, MegatronFlavor::kFasop),
                    Contains("has no context parallelism (--context-parallel-size)") && Contains("--megatron-flavor upstream"));
}

TEST_CASE("megatron upstream: a mixture of experts at ep 8, its flags and the dense layers first",
          "[emit][megatron][moe]") {
  ModelSpec model = moe_model();
  const std::vector<std::string> want = {
      "--tensor-model-parallel-size", "2", "--pipeline-model-parallel-size", "2",
      // etp 1: written, as Megatron-LM's default is tp (2).
      "--expert-model-parallel-size", "8", "--expert-tensor-parallel-size", "1",
      "--micro-batch-size", "1", "--global-batch-size", "256",
      "--num-layers", "16", "--hidden-size", "1024", "--num-attention-heads", "16", "--kv-channels", "128",
      "--ffn-hidden-size", "4096", "--seq-length", "2048", "--max-position-embeddings", "2048",
      "--group-query-attention", "--num-query-groups", "4",
      "--swiglu", "--normalization", "RMSNorm", "--position-embedding-type", "rope",
      "--disable-bias-linear", "--hidden-dropout", "0", "--attention-dropout", "0",
      "--untie-embeddings-and-output-weights",
      "--num-experts", "16", "--moe-router-topk", "2", "--moe-ffn-hidden-size", "1408",
      "--moe-shared-expert-intermediate-size", "2816", "--moe-layer-freq", "([0]*3+[1]*13)",
      "--moe-router-load-balancing-type", "aux_loss", "--moe-aux-loss-coeff", "1e-2", "--moe-grouped-gemm",
      "--moe-token-dispatcher-type", "alltoall", "--moe-expert-capacity-factor", "1.0",
      "--bf16", "--sequence-parallel",
      "--pipeline-model-parallel-layout", "Et*8|t*8L"};
  CHECK(megatron_args(moe_plan(), model, MegatronFlavor::kUpstream) == want);
  // The pattern is shell-quoted: '(', '[' and '*' are the shell's.
  CHECK_THAT(megatron_args_text(moe_plan(), model, MegatronFlavor::kUpstream),
             Contains("\n--moe-layer-freq '([0]*3+[1]*13)' \\\n"));

  // Dropless and without a shared expert: neither flag. etp 2: written as it is.
  ModelSpec dropless = moe_model(false, 0);
  PlanFile etp2 = moe_plan();
  etp2.key.etp = 2;
  std::vector<std::string> args = megatron_args(etp2, dropless, MegatronFlavor::kUpstream);
  CHECK(!has(args, "--moe-expert-capacity-factor"));
  CHECK(!has(args, "--moe-shared-expert-intermediate-size"));
  CHECK(!has(args, "--moe-router-force-load-balancing"));
  // Forced balancing (random router scores, as NVIDIA's benchmarks ran): Megatron-Core's flag.
  ModelSpec forced = dropless;
  forced.moe.force_balance = true;
  CHECK(has(megatron_args(etp2, forced, MegatronFlavor::kUpstream), "--moe-router-force-load-balancing"));
  CHECK(std::vector<std::string>(args.begin() + 4, args.begin() + 8) ==
        std::vector<std::string>{"--expert-model-parallel-size", "8", "--expert-tensor-parallel-size", "2"});
  // tp 1, ep 1, etp 1: Megatron's defaults; no parallel flag but tp's and pp's.
  PlanFile tp1 = layout_plan(1, 1, 16, 2, 256, {9, 9}, 0, false);
  args = megatron_args(tp1, model, MegatronFlavor::kUpstream);
  CHECK(!has(args, "--expert-model-parallel-size"));
  CHECK(!has(args, "--expert-tensor-parallel-size"));
  CHECK(has(args, "--num-experts"));
  // A DeepSeek-V3-like pattern: 3 dense layers, then 58 MoE layers.
  ModelSpec deep = model;
  deep.units.clear();
  deep.units.push_back({"embedding", LayerRole::kEmbedding});
  for (int i = 0; i < 61; ++i) {
    deep.units.push_back({i < 3 ? "transformer" : "moe_layer", LayerRole::kTransformer});
    deep.units.back().moe = i >= 3;
  }
  deep.units.push_back({"post_process", LayerRole::kPostProcess});
  PlanFile deep_plan = layout_plan(1, 1, 16, 1, 256, {63}, 0, false);
  args = megatron_args(deep_plan, deep, MegatronFlavor::kUpstream);
  auto freq = std::find(args.begin(), args.end(), "--moe-layer-freq");
  REQUIRE(freq + 1 < args.end());
  CHECK(freq[1] == "([0]*3+[1]*58)");
}

TEST_CASE("megatron: what Megatron-LM refuses of cp, ep, etp and experts names the field and the fix",
          "[emit][megatron][moe]") {
  ModelSpec model = moe_model();
  auto refusal = [&](const PlanFile& plan) { return spec_error([&] { megatron_args(plan, model, MegatronFlavor::kUpstream); }); };
  PlanFile ep3 = moe_plan();
  ep3.key.ep = 3;
  CHECK(refusal(ep3) == "plan: ep 3 does not divide model 'moe-test''s 16 experts (Megatron-LM asserts \"Number of "
                        "experts should be a multiple of expert model parallel_size\"); set ep to a divisor of 16");
  PlanFile etp4 = moe_plan();  // ep 8 x etp 4 = 32 GPUs of a stage's 16
  etp4.key.etp = 4;
  CHECK(refusal(etp4) == "plan: ep x etp = 32 does not divide a stage's tp x cp x dp = 16 GPUs, over which "
                         "Megatron-LM lays out its expert groups; set ep and etp so that ep x etp divides 16");
  PlanFile etp3 = layout_plan(1, 2, 24, 2, 240, {9, 9}, 0, false);  // 48 GPUs a stage, 1408 % 3 = 1
  etp3.key.ep = 8;
  etp3.key.etp = 3;
  etp3.key.sequence_parallel = true;
  CHECK(refusal(etp3) == "plan: etp 3 does not divide model 'moe-test''s expert width 1408 (moe.expert_ffn_hidden); "
                         "set etp to a divisor of it");
  PlanFile no_sp = moe_plan();
  no_sp.key.sequence_parallel = false;
  CHECK(refusal(no_sp) == "plan: tp 2 with model 'moe-test''s experts needs sequence_parallel (Megatron-LM's "
                          "MoELayer raises in training when tensor parallelism runs without it); re-plan with --fix "
                          "sp=on, or tp 1");
  // A family with linear biases (GPT-2's) cannot split its experts: Megatron-Core asserts it.
  ModelSpec biased = model;
  biased.family = ModelFamily::kGpt2;
  PlanFile etp2 = moe_plan();
  etp2.key.etp = 2;
  CHECK(spec_error([&] { megatron_args(etp2, biased, MegatronFlavor::kUpstream); }) ==
        "plan: etp 2 with model 'moe-test''s gpt2 layers, which have biases: Megatron-Core asserts \"Bias in Moe is only "
        "supported when ETP==1\"; set etp to 1");
  etp2.key.etp = 1;
  CHECK(!has(megatron_args(etp2, biased, MegatronFlavor::kUpstream), "--disable-bias-linear"));
  // A LLaMA-style model whose experts carry biases (GPT-OSS) keeps Megatron's linear biases on,
  // and so cannot split its experts either; its quick-GELU GLU is --quick-geglu, not --swiglu,
  // which the FASOP fork lacks.
  ModelSpec expert_bias = model;
  expert_bias.moe.expert_bias = true;
  expert_bias.activation = Activation::kQuickGeglu;
  const std::vector<std::string> oss_args = megatron_args(moe_plan(), expert_bias, MegatronFlavor::kUpstream);
  CHECK(has(oss_args, "--quick-geglu"));
  CHECK(!has(oss_args, "--swiglu"));
  CHECK_THAT(spec_error([&] { megatron_args(moe_plan(), expert_bias, MegatronFlavor::kFasop); }),
             Catch::Contains("has no"));
  CHECK(has(megatron_args(moe_plan(), model, MegatronFlavor::kUpstream), "--disable-bias-linear"));
  CHECK(!has(megatron_args(etp2, expert_bias, MegatronFlavor::kUpstream), "--disable-bias-linear"));
  etp2.key.etp = 2;
  CHECK_THAT(spec_error([&] { megatron_args(etp2, expert_bias, MegatronFlavor::kUpstream); }),
             Catch::Contains("which have biases"));
  etp2.key.etp = 1;
  // ep and etp on a dense model.
  ModelSpec dense = preset_model("llama2-7b");
  PlanFile dense_ep = llama_plan();
  dense_ep.key.ep = 2;
  CHECK(spec_error([&] { megatron_args(dense_ep, dense, MegatronFlavor::kUpstream); }) ==
        "plan: ep 2 on model 'llama2-7b', which has no experts (no 'moe' block); set ep and etp to 1");
  // FASOP's fork has no top-k experts (its --num-experts is a Switch MLP in every layer).
  CHECK_THROWS_WITH(megatron_args(moe_plan(), model, MegatronFlavor::kFasop),
                    Contains("has no mixture-of-experts layers as model 'moe-test' has them (--moe-router-topk"));
  // Nor do the other emitters run experts or cp: they would build a dense model on tp x dp x pp GPUs.
  PlanFile dense_tp1 = layout_plan(1, 1, 16, 2, 256, {9, 9}, 0, false);
  CHECK(spec_error([&] { deepspeed_config_json(dense_tp1, model); }) ==
        "plan: the plan uses model 'moe-test''s mixture of experts, which DeepSpeed does not run as the plan was "
        "priced; emit it for Megatron-LM (--format megatron), or re-plan without it");
  PlanFile cp2 = layout_plan(1, 1, 2, 2, 64, {25, 25}, 0, false);
  cp2.key.cp = 2;
  ModelSpec gpt = preset_model("gpt2xl");
  CHECK_THROWS_WITH(deepspeed_config_json(cp2, gpt), Contains("context parallelism (cp 2), which DeepSpeed"));
  CHECK_THROWS_WITH(slapo_schedule_py(cp2, gpt), Contains("context parallelism (cp 2), which this Slapo schedule"));
}

TEST_CASE("megatron: fp8 needs fp8 in the data of the GPUs the plan names, mxfp8 Blackwell", "[emit][megatron]") {
  ModelSpec model = preset_model("llama2-7b");
  auto on = [&](const std::string& dtype, const std::string& gpu) {
    model.dtype = dtype;
    PlanFile plan = llama_plan();
    for (int s = 0; s < 2; ++s) plan.stages.push_back({s * 17, 17, "node", gpu, 1, 0, 0});
    return spec_error([&] { megatron_args(plan, model, MegatronFlavor::kUpstream); });
  };
  CHECK(on("fp8", "H100") == "no error");
  CHECK(on("fp8", "L4") == "no error");
  CHECK(on("mxfp8", "B200") == "no error");
  CHECK(on("bf16", "V100") == "no error");
  CHECK(on("fp8", "my-own-gpu") == "no error");  // no shipped data: not checked
  const std::string v100 = on("fp8", "V100");
  CHECK_THAT(v100, Contains("plan: dtype fp8 of model 'llama2-7b' on stage 0's GPU 'V100', whose data (") &&
                       Contains("v100.yaml) has no fp8 peak") && Contains("set the model's dtype to bf16"));
  CHECK_THAT(on("mxfp8", "H100"), Contains("dtype mxfp8 of model 'llama2-7b' on stage 0's GPU 'H100'") &&
                                      Contains("has no mxfp8 entry: MXFP8 block scaling runs on Blackwell GPUs only"));
  CHECK(on("nvfp4", "GB200") == "no error");
  CHECK_THAT(on("nvfp4", "H100"), Contains("dtype nvfp4 of model 'llama2-7b' on stage 0's GPU 'H100'") &&
                                      Contains("NVFP4 block scaling runs on Blackwell GPUs only"));
  // FASOP's fork: its fp8 (--fp8-hybrid) is not the recipe priced.
  ModelSpec gpt = preset_model("gpt2xl");
  gpt.dtype = "fp8";
  CHECK_THROWS_WITH(megatron_args(gpt2xl_plan(), gpt, MegatronFlavor::kFasop), Contains("has no --fp8-format/--fp8-recipe"));
  CHECK(without(megatron_args(gpt2xl_plan(), gpt, MegatronFlavor::kUpstream), {"--fp8-format", "--fp8-recipe", "--bf16"}) ==
        without(megatron_args(gpt2xl_plan(), preset_model("gpt2xl"), MegatronFlavor::kUpstream), {"--fp16"}));
}

TEST_CASE("megatron upstream: multi-head latent attention writes its widths", "[emit][megatron][mla]") {
  ModelSpec model = moe_model();
  model.kv_heads = model.heads;  // MLA has no key/value head groups
  model.head_dim = 0;
  model.mla.q_lora_rank = 1536;
  model.mla.kv_lora_rank = 512;
  model.mla.qk_head_dim = 128;
  model.mla.qk_rope_head_dim = 64;
  model.mla.v_head_dim = 128;
  const std::vector<std::string> args = megatron_args(moe_plan(), model, MegatronFlavor::kUpstream);
  auto mla = std::find(args.begin(), args.end(), "--multi-latent-attention");
  REQUIRE(mla + 10 < args.end());
  CHECK(std::vector<std::string>(mla, mla + 11) ==
        std::vector<std::string>{"--multi-latent-attention", "--q-lora-rank", "1536", "--kv-lora-rank", "512",
                                 "--qk-head-dim", "128", "--qk-pos-emb-head-dim", "64", "--v-head-dim", "128"});
  CHECK(!has(args, "--group-query-attention"));
  // Without a query latent (q_lora_rank 0) the queries are projected directly: no --q-lora-rank.
  model.mla.q_lora_rank = 0;
  CHECK(!has(megatron_args(moe_plan(), model, MegatronFlavor::kUpstream), "--q-lora-rank"));
}

TEST_CASE("megatron upstream: the EP all-to-all overlap is --overlap-moe-expert-parallel-comm with delayed wgrad",
          "[emit][megatron][moe]") {
  ModelSpec model = moe_model();
  PlanFile plan = moe_plan();  // pp 2: the overlap needs the interleaved schedule
  plan.execution.overlap_moe_expert_parallel_comm = true;
  CHECK_THAT(spec_error([&] { megatron_args(plan, model, MegatronFlavor::kUpstream); }),
             Contains("overlap_ep_comm needs virtual stages where pp > 1"));
  // 16 layers on 2 ranks of 2 chunks: Megatron's even split, 4 layers a chunk.
  plan.key.virtual_stages = 2;
  plan.global_batch = 512;
  std::vector<std::string> args = megatron_args(plan, model, MegatronFlavor::kUpstream);
  auto at = std::find(args.begin(), args.end(), "--overlap-moe-expert-parallel-comm");
  REQUIRE(at + 1 < args.end());
  CHECK(at[1] == "--delay-wgrad-compute");
  // Not written where the plan has no all-to-alls, nor with full recomputation.
  plan.key.ep = 1;
  CHECK(!has(megatron_args(plan, model, MegatronFlavor::kUpstream), "--overlap-moe-expert-parallel-comm"));
  plan.key.ep = 8;
  plan.key.recompute = true;
  CHECK_THAT(spec_error([&] { megatron_args(plan, model, MegatronFlavor::kUpstream); }),
             Contains("no full recomputation"));
}

TEST_CASE("megatron upstream: multi-token prediction is --mtp-num-layers, its 'm' just before the loss",
          "[emit][megatron][mtp]") {
  ModelSpec model = moe_model();
  model.mtp_layers = 1;
  std::vector<std::string> args = megatron_args(moe_plan(), model, MegatronFlavor::kUpstream);
  auto at = std::find(args.begin(), args.end(), "--mtp-num-layers");
  REQUIRE(at + 1 < args.end());
  CHECK(at[1] == "1");
  CHECK(args.back() == "Et*8|t*8mL");  // {9, 9}: the module rides with the loss on the last stage
  PlanFile interleaved = layout_plan(1, 2, 8, 2, 256, {10, 8}, 0, false);
  interleaved.key.ep = 8;
  interleaved.key.sequence_parallel = true;
  interleaved.key.virtual_stages = 2;
  CHECK(megatron_args(interleaved, model, MegatronFlavor::kUpstream).back() == "Et*4|t*4|t*5|t*3mL");
  ModelSpec gpt = preset_model("gpt2xl");  // a model FASOP's fork builds, but for its MTP module
  gpt.mtp_layers = 1;
  CHECK_THROWS_WITH(megatron_args(layout_plan(1, 1, 2, 4, 64, {13, 12, 12, 13}, 0, false), gpt, MegatronFlavor::kFasop),
                    Contains("--mtp-num-layers"));
  // DeepSpeed runs no MTP module: refused, named.
  ModelSpec dense = preset_model("llama2-7b");
  dense.mtp_layers = 1;
  CHECK_THROWS_WITH(deepspeed_config_json(llama_plan(), dense), Contains("multi-token prediction"));
}
