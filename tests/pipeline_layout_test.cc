// Megatron's pipeline layout notation (src/specs/pipeline_layout.h), read as Megatron-LM reads it.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "specs/pipeline_layout.h"

using namespace fasop;

namespace {

PipelineLayout parsed(const std::string& text) {
  PipelineLayout layout;
  std::string error;
  REQUIRE(parse_pipeline_layout(text, &layout, &error));
  return layout;
}

/// The error of a layout that parses but does not fit pp x v ranks of `layers` layers.
std::string units_error(const std::string& text, int pp, int v, int layers) {
  std::string error;
  CHECK(layout_units_per_rank(parsed(text), pp, v, layers, 0, &error).empty());  // a model without MTP
  return error;
}

}  // namespace

TEST_CASE("Megatron's layout notation unrolls as its parser does", "[layout]") {
  // The example in Megatron-LM's parse_str_to_list: "Ettt|(tt|)*29,m|L" is
  // [[E,t,t,t]] + [[t,t]] * 29 + [[m], [L]].
  const PipelineLayout megatron = parsed("Ettt|(tt|)*29,m|L");
  REQUIRE(megatron.chunks.size() == 32);
  CHECK(megatron.chunks[0] == "Ettt");
  CHECK(megatron.chunks[1] == "tt");
  CHECK(megatron.chunks[29] == "tt");
  CHECK(megatron.chunks[30] == "m");
  CHECK(megatron.chunks[31] == "L");
  // Megatron-Bridge's DeepSeek-V3 layout for pp 16 (v0.3.0 perf configs): E and 4 layers, 14
  // stages of 4, then a layer, the MTP layer and the loss.
  const PipelineLayout deepseek = parsed("Et*4|(t*4|)*14tmL");
  REQUIRE(deepseek.chunks.size() == 16);
  CHECK(deepseek.chunks[0] == "Etttt");
  CHECK(deepseek.chunks[14] == "tttt");
  CHECK(deepseek.chunks[15] == "tmL");
  std::string error;
  PipelineLayout layout;
  CHECK_FALSE(parse_pipeline_layout("Et|tx|L", &layout, &error));
  CHECK(error.find("'x'") != std::string::npos);
  CHECK_FALSE(parse_pipeline_layout("(t*9999|)*9999", &layout, &error));
  CHECK(error.find("100000") != std::string::npos);
}

TEST_CASE("A layout's units per pipeline rank, its chunks gathered by rank", "[layout]") {
  std::string error;
  // Llama 3.1 405B as Megatron-Bridge places it (account_for_embedding/loss_in_pipeline_split):
  // 126 layers + E + L = 128 over pp 8 x v 8 = 64 chunks of 2. Rank 0 holds chunks 0, 8, ..., 56
  // (E t, then 7 x t t): 16 units; rank 7 holds chunks 7, ..., 63 (7 x t t, then t L): 16.
  std::vector<int> units = layout_units_per_rank(parsed("Et|(tt|)*62tL"), 8, 8, 126, 0, &error);
  CHECK(units == std::vector<int>(8, 16));
  // Two ranks of two chunks each: rank 0 holds chunks 0 and 2 (E t*5, t*6: 12 units), rank 1
  // chunks 1 and 3 (t*6, t*7 L: 14).
  units = layout_units_per_rank(parsed("Et*5|t*6|t*6|t*7L"), 2, 2, 24, 0, &error);
  CHECK(units == std::vector<int>{12, 14});
  CHECK_THAT(units_error("Et*5|t*6|t*6|t*7L", 4, 2, 24), Catch::Contains("4 chunks but pp x virtual_stages = 8"));
  // DeepSeek-V3 with one MTP module, as Megatron-Bridge lays it out at pp 16: the module stands
  // with the loss (the post-process unit carries it), so the last rank has a layer and the loss.
  std::vector<int> deepseek(16, 4);
  deepseek.front() = 5;
  deepseek.back() = 2;
  CHECK(layout_units_per_rank(parsed("Et*4|(t*4|)*14tmL"), 16, 1, 61, 1, &error) == deepseek);
  CHECK_THAT(units_error("Et*4|(t*4|)*14tmL", 16, 1, 61), Catch::Contains("1 multi-token-prediction layers (m) but the model has 0"));
  std::string misplaced;
  CHECK(layout_units_per_rank(parsed("Et*4|(t*4|)*14mtL"), 16, 1, 61, 1, &misplaced).empty());
  CHECK_THAT(misplaced, Catch::Contains("just before the loss"));
  CHECK_THAT(units_error("Et*5|t*6|t*6|t*6L", 2, 2, 24), Catch::Contains("23 transformer layers"));
  CHECK_THAT(units_error("t*5|Et*6|t*6|t*7L", 2, 2, 24), Catch::Contains("start with the embedding"));
  CHECK_THAT(units_error("Et*12||L", 3, 1, 12), Catch::Contains("rank 1 without layers"));
}
