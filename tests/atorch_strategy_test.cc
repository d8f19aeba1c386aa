// The ATorch strategy emitter: the strategy list's entries for two plans.
#include <catch2/catch.hpp>

#include <string>

#include "emit/atorch_strategy.h"
#include "emit_fixtures.h"
#include "test_support.h"

using fasop::atorch_strategy_py;
using fasop::testing::emit_plan;
using fasop::testing::PresetSpecs;

TEST_CASE("ATorch strategy of a ZeRO-1 GPT-2 plan", "[emit]") {
  const PresetSpecs specs("gpt2xl", "fasop-8nodes");
  const std::string py = atorch_strategy_py(emit_plan("gpt2xl", 2, 4, {18, 15, 17}, false, 1), specs.model);
  CHECK(py.find("(\"parallel_mode\", ([(\"tensor\", 2), (\"pipeline\", 3), (\"data\", 4)], None)),\n") !=
        std::string::npos);
  CHECK(py.find("(\"amp_native\", {\"dtype\": \"fp16\"}),") != std::string::npos);
  CHECK(py.find("    \"zero1\",") != std::string::npos);
  CHECK(py.find("zero2") == std::string::npos);
  CHECK(py.find("\"fsdp\"") == std::string::npos);
  CHECK(py.find("(\"checkpoint\"") == std::string::npos);
  // Stages start at unit 18 (h.17) and 33 (h.32).
  CHECK(py.find("pipeline_split_before = [\"transformer.h.17\", \"transformer.h.32\"]\n") != std::string::npos);
  CHECK(py == atorch_strategy_py(emit_plan("gpt2xl", 2, 4, {18, 15, 17}, false, 1), specs.model));
}

TEST_CASE("ATorch strategy of a ZeRO-3 recomputing LLaMA plan", "[emit]") {
  const PresetSpecs specs("llama2-7b", "aws-h100");
  const std::string py = atorch_strategy_py(emit_plan("llama2-7b", 1, 16, {34}, true, 3), specs.model);
  CHECK(py.find("(\"parallel_mode\", ([(\"tensor\", 1), (\"pipeline\", 1), (\"data\", 16)], None)),\n") !=
        std::string::npos);
  CHECK(py.find("(\"amp_native\", {\"dtype\": \"bf16\"}),") != std::string::npos);
  CHECK(py.find("(\"fsdp\", {\"atorch_wrap_cls\": (\"LlamaDecoderLayer\",)}),") != std::string::npos);
  CHECK(py.find("zero1") == std::string::npos);
  CHECK(py.find("(\"checkpoint\", [\"LlamaDecoderLayer\"]),") != std::string::npos);
  CHECK(py.find("pipeline_split_before = []\n") != std::string::npos);
}
