// DeepSpeed configs of saved plans, byte for byte (the key order is fixed).
#include <catch2/catch.hpp>

#include "emit/deepspeed_config.h"
#include "specs/spec_error.h"
#include "emit_fixtures.h"
#include "test_support.h"

using namespace fasop;
using fasop::testing::layout_plan;
using fasop::testing::preset_model;
using Catch::Matchers::Contains;

TEST_CASE("deepspeed: gpt2xl tp2 pp3 dp2 mbs2, ZeRO-1, recompute, fp16", "[emit][deepspeed]") {
  // gradient_accumulation_steps = 64 / (2 x 2) = 16. The partition is not in the config (DeepSpeed
  // reads none from it): deepspeed_pipeline_test.cc checks it in the PipelineModule.
  PlanFile plan = layout_plan(2, 2, 2, 3, 64, {18, 15, 17}, 1, true);
  CHECK(deepspeed_config_json(plan, preset_model("gpt2xl")) ==
        "{\n"
        "  \"train_batch_size\": 64,\n"
        "  \"train_micro_batch_size_per_gpu\": 2,\n"
        "  \"gradient_accumulation_steps\": 16,\n"
        "  \"zero_optimization\": {\n    \"stage\": 1\n  },\n"
        "  \"fp16\": {\n    \"enabled\": true\n  },\n"
        "  \"activation_checkpointing\": {\n"
        "    \"partition_activations\": false,\n"
        "    \"cpu_checkpointing\": false,\n"
        "    \"contiguous_memory_optimization\": false,\n"
        "    \"synchronize_checkpoint_boundary\": false\n"
        "  },\n"
        "  \"pipeline\": {\n"
        "    \"activation_checkpoint_interval\": 1\n"
        "  }\n"
        "}\n");
}

TEST_CASE("deepspeed: llama2-7b tp4 pp2 dp1 mbs2, bf16, no recompute", "[emit][deepspeed]") {
  // gradient_accumulation_steps = 1024 / (2 x 1) = 512.
  PlanFile plan = layout_plan(2, 4, 1, 2, 1024, {17, 17}, 0, false);
  CHECK(deepspeed_config_json(plan, preset_model("llama2-7b")) ==
        "{\n"
        "  \"train_batch_size\": 1024,\n"
        "  \"train_micro_batch_size_per_gpu\": 2,\n"
        "  \"gradient_accumulation_steps\": 512,\n"
        "  \"zero_optimization\": {\n    \"stage\": 0\n  },\n"
        "  \"bf16\": {\n    \"enabled\": true\n  },\n"
        "  \"pipeline\": {\n"
        "    \"activation_checkpoint_interval\": 0\n"
        "  }\n"
        "}\n");
}

TEST_CASE("deepspeed: ZeRO-2/3 only without pipelining, as its pipeline engine asserts", "[emit][deepspeed]") {
  ModelSpec model = preset_model("gpt2xl");
  PlanFile piped = layout_plan(2, 2, 2, 3, 64, {18, 15, 17}, 2, true);
  CHECK_THROWS_WITH(deepspeed_config_json(piped, model),
                    Contains("ZeRO stage 2 with pp 3") && Contains("incompatible with pipeline parallelism"));
  // pp 1 on 8 GPUs (tp 2, dp 4): 64 / (2 x 4) = 8 steps, ZeRO-3 kept.
  PlanFile flat = layout_plan(2, 2, 4, 1, 64, {50}, 3, false);
  std::string json = deepspeed_config_json(flat, model);
  CHECK_THAT(json, Contains("\"gradient_accumulation_steps\": 8,"));
  CHECK_THAT(json, Contains("\"stage\": 3"));
  CHECK_THAT(json, !Contains("parts"));
}

TEST_CASE("deepspeed: plans it cannot run are SpecErrors", "[emit][deepspeed]") {
  ModelSpec model = preset_model("gpt2xl");
  PlanFile odd = layout_plan(3, 2, 2, 3, 64, {18, 15, 17}, 1, false);  // 64 % 6 = 4
  CHECK_THROWS_WITH(deepspeed_config_json(odd, model), Contains("not a multiple"));
  PlanFile metis = layout_plan(2, 2, 2, 3, 64, {18, 15, 17}, 1, false);
  metis.key.stage_dp = {2, 1, 2};
  CHECK_THROWS_WITH(deepspeed_config_json(metis, model), Contains("stage_dp"));
  PlanFile wrong = layout_plan(2, 2, 2, 2, 64, {18, 15, 17}, 1, false);
  CHECK_THROWS_WITH(deepspeed_config_json(wrong, model), Contains("3 stages but pp is 2"));
}
