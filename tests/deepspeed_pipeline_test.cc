// The DeepSpeed PipelineModule module of saved plans: the plan's stage boundaries, units,
// topology and checkpoint interval as the Python constants PlanPipelineModule reads.
// scripts/check-deepspeed-emit.py runs such modules with DeepSpeed's own PipelineModule.
#include <catch2/catch.hpp>

#include "emit/deepspeed_pipeline.h"
#include "emit_fixtures.h"
#include "specs/spec_error.h"
#include "test_support.h"

using namespace fasop;
using fasop::testing::emit_plan;
using fasop::testing::layout_plan;
using fasop::testing::preset_model;
using Catch::Matchers::Contains;

TEST_CASE("deepspeed pipeline: gpt2xl's uneven tp2 pp3 dp2 plan, ZeRO-1, recompute", "[emit][deepspeed]") {
  // gpt2xl's 50 units: embedding (0), transformer 0-47 (1-48), post_process (49). The partition
  // {18, 15, 17} starts stages at units 0, 18 and 18 + 15 = 33, and ends at 33 + 17 = 50:
  // stage 0 is the embedding and transformer 0-16, stage 1 transformer 17-31, stage 2
  // transformer 32-47 and the post-process.
  PlanFile plan = layout_plan(2, 2, 2, 3, 64, {18, 15, 17}, 1, true);
  const std::string py = deepspeed_pipeline_py(plan, preset_model("gpt2xl"));
  CHECK_THAT(py, Contains("Layout: tp 2, pp 3, dp 2 (12 ranks), micro-batch 2,\n"
                          "global batch 64, ZeRO 1, full recomputation. Stages:\n"
                          "  stage 0: units 0-17 (embedding to transformer 16)\n"
                          "  stage 1: units 18-32 (transformer 17 to transformer 31)\n"
                          "  stage 2: units 33-49 (transformer 32 to post_process)\n"));
  CHECK_THAT(py, Contains("TP, PP, DP = 2, 3, 2\n"
                          "# Stage s runs UNITS[UNIT_PARTS[s]:UNIT_PARTS[s + 1]].\n"
                          "UNIT_PARTS = [0, 18, 33, 50]\n"));
  CHECK_THAT(py, Contains("ACTIVATION_CHECKPOINT_INTERVAL = 1\n"));
  CHECK_THAT(py, Contains("UNITS = [\n"
                          "    \"embedding\",\n"
                          "    *(\"transformer \" + str(i) for i in range(0, 48)),\n"
                          "    \"post_process\",\n"
                          "]\n"));
  // tp > 1: the model axis, and the hint that the layers split their own weights.
  CHECK_THAT(py, Contains("    return PipeModelDataParallelTopology(num_pp=PP, num_mp=TP, num_dp=DP)\n"));
  CHECK_THAT(py, Contains("With tp 2 the layers split their own weights"));
  // DeepSpeed is imported only inside functions: the module loads without it.
  CHECK_THAT(py, !Contains("\nimport deepspeed") && !Contains("\nfrom deepspeed"));
  CHECK(py == deepspeed_pipeline_py(plan, preset_model("gpt2xl")));  // the same plan, the same bytes
}

TEST_CASE("deepspeed pipeline: a stage of the embedding alone, tp 1 without recomputation", "[emit][deepspeed]") {
  // llama2-7b's 34 units split {1, 11, 11, 11}: boundaries 0, 1, 12, 23, 34.
  PlanFile plan = emit_plan("llama2-7b", 1, 2, {1, 11, 11, 11}, false);
  const std::string py = deepspeed_pipeline_py(plan, preset_model("llama2-7b"));
  CHECK_THAT(py, Contains("  stage 0: units 0-0 (embedding)\n"
                          "  stage 1: units 1-11 (transformer 0 to transformer 10)\n"));
  CHECK_THAT(py, Contains("TP, PP, DP = 1, 4, 2\n"));
  CHECK_THAT(py, Contains("UNIT_PARTS = [0, 1, 12, 23, 34]\n"));
  CHECK_THAT(py, Contains("ACTIVATION_CHECKPOINT_INTERVAL = 0\n"));
  CHECK_THAT(py, Contains("    return PipeDataParallelTopology(num_pp=PP, num_dp=DP)\n"));
  CHECK_THAT(py, !Contains("PipeModelDataParallelTopology") && !Contains("split their own weights"));
}

TEST_CASE("deepspeed pipeline: T5's units numbered within each stack", "[emit][deepspeed]") {
  // encoder_embedding (0), encoder 0-22 (1-23), encoder_last 23 (24), decoder_embedding (25),
  // decoder 0-22 (26-48), decoder_last 23 (49); {13, 12, 13, 12}: boundaries 0, 13, 25, 38, 50.
  const std::string py = deepspeed_pipeline_py(fasop::testing::t5_plan(), preset_model("t5"));
  CHECK_THAT(py, Contains("UNIT_PARTS = [0, 13, 25, 38, 50]\n"));
  CHECK_THAT(py, Contains("UNITS = [\n"
                          "    \"encoder_embedding\",\n"
                          "    *(\"encoder \" + str(i) for i in range(0, 23)),\n"
                          "    \"encoder_last 23\",\n"
                          "    \"decoder_embedding\",\n"
                          "    *(\"decoder \" + str(i) for i in range(0, 23)),\n"
                          "    \"decoder_last 23\",\n"
                          "]\n"));
  CHECK_THAT(py, Contains("  stage 2: units 25-37 (decoder_embedding to decoder 11)\n"));
}

TEST_CASE("deepspeed pipeline: names from specs stay inside their Python strings", "[emit][deepspeed]") {
  ModelSpec model = preset_model("gpt2xl");
  model.name = "my \"gpt\"\\2";
  model.units.front().type = "embed\"ding";
  PlanFile plan = layout_plan(2, 2, 2, 3, 64, {18, 15, 17}, 1, true);
  const std::string py = deepspeed_pipeline_py(plan, model);
  CHECK_THAT(py, Contains("plan of my \\\"gpt\\\"\\\\2: its stages"));
  CHECK_THAT(py, Contains("    \"embed\\\"ding\",\n"));
}

TEST_CASE("deepspeed pipeline: ZeRO 2 or 3 is refused even with pp 1, other refusals as the config's",
          "[emit][deepspeed]") {
  ModelSpec model = preset_model("gpt2xl");
  PlanFile flat = layout_plan(2, 2, 4, 1, 64, {50}, 3, false);
  CHECK_THROWS_WITH(deepspeed_pipeline_py(flat, model),
                    Contains("ZeRO stage 3") && Contains("allows ZeRO 0 or 1") && Contains("--format deepspeed"));
  flat.key.zero_stage = 1;
  CHECK_THAT(deepspeed_pipeline_py(flat, model), Contains("UNIT_PARTS = [0, 50]\n"));
  PlanFile piped = layout_plan(2, 2, 2, 3, 64, {18, 15, 17}, 2, true);
  CHECK_THROWS_WITH(deepspeed_pipeline_py(piped, model), Contains("ZeRO stage 2 with pp 3"));
  PlanFile wrong = layout_plan(2, 2, 2, 2, 64, {18, 15, 17}, 1, false);
  CHECK_THROWS_WITH(deepspeed_pipeline_py(wrong, model), Contains("3 stages but pp is 2"));
  PlanFile odd = layout_plan(3, 2, 2, 3, 64, {18, 15, 17}, 1, false);  // 64 % (3 x 2) = 4
  CHECK_THROWS_WITH(deepspeed_pipeline_py(odd, model), Contains("not a multiple"));
}
