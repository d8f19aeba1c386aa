// The ATorch strategy emitter: the load_strategy entries ATorch's parser turns into the plan
// (group sizes, the pipeline's split points and chunks, the tensor-parallel config, ZeRO and
// recomputation), and the plans it refuses because ATorch would drop part of them.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "emit/atorch_split_points.h"
#include "emit/atorch_strategy.h"
#include "emit_fixtures.h"
#include "specs/spec_error.h"
#include "test_support.h"

using fasop::atorch_split_points;
using fasop::atorch_strategy_py;
using fasop::AtorchSplit;
using fasop::testing::emit_plan;
using fasop::testing::PresetSpecs;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::vector<std::string> modules(const std::vector<AtorchSplit>& splits) {
  std::vector<std::string> names;
  for (const AtorchSplit& split : splits) names.push_back(split.module);
  return names;
}

}  // namespace

TEST_CASE("ATorch strategy of an uneven GPT-2 pipeline with ZeRO-1", "[emit][atorch]") {
  const PresetSpecs specs("gpt2xl", "fasop-8nodes");
  // 50 units: embedding, h.0-47, post-process. {18, 15, 17}: stages start at units 18 (h.17) and
  // 33 (h.32); GPT-2's first module in a block is its nn.LayerNorm ln_1.
  const fasop::PlanFile plan = emit_plan("gpt2xl", 1, 4, {18, 15, 17}, false, 1);
  const std::string py = atorch_strategy_py(plan, specs.model);
  CHECK(has(py, "parallel_mode = ([(\"data\", 4), (\"pipe\", 3)], None)\n"));
  CHECK(has(py, "pipeline_split_before = [\n    \"module.transformer.h.17.ln_1\",\n"
                "    \"module.transformer.h.32.ln_1\",\n]\n"));
  CHECK(has(py, "    (\"parallel_mode\", parallel_mode),\n    (\n        \"mixed_parallel\",\n"));
  CHECK(has(py, "\"nstages\": 3,"));
  CHECK(has(py, "\"chunks\": 16,"));  // 64 samples / (mbs 1 x dp 4)
  CHECK(has(py, "\"pipe_schedule\": \"1F1B\","));
  CHECK(has(py, "dataloader_args = {\"batch_size\": 64}\n"));
  CHECK_FALSE(has(py, "tensor_config"));  // tp 1: no "tensor" group, no sharding planner
  CHECK(has(py, "(\"amp_native\", {\"dtype\": \"fp16\"}),"));
  CHECK(has(py, "    \"zero1\",  # optimizer state sharded over dp\n"));
  CHECK_FALSE(has(py, "(\"checkpoint\""));
  CHECK_FALSE(has(py, "NOTE"));  // GPT-2's splits are exact
  CHECK(py == atorch_strategy_py(plan, specs.model));
}

TEST_CASE("ATorch strategy of a tp x pp x dp LLaMA plan with an embedding-only stage", "[emit][atorch]") {
  const PresetSpecs specs("llama2-7b", "aws-h100");
  // tp 2, dp 2, {1, 11, 11, 11}: 34 units (embedding, layers 0-31, post-process); stages start at
  // units 1, 12 and 23, i.e. layers 0, 11 and 22.
  const std::string py = atorch_strategy_py(fasop::testing::llama_embedding_stage_plan(), specs.model);
  CHECK(has(py, "parallel_mode = ([(\"tensor\", 2), (\"data\", 2), (\"pipe\", 4)], None)\n"));
  CHECK(has(py, "    \"module.model.layers.0.self_attn.q_proj\",\n    \"module.model.layers.11.self_attn.q_proj\",\n"
                "    \"module.model.layers.22.self_attn.q_proj\",\n]\n"));
  CHECK(has(py, "\"tensor_config\": {\"shard_planner\": \"mip\"},"));
  CHECK(has(py, "\"nstages\": 4,"));
  CHECK(has(py, "\"chunks\": 32,"));  // 64 / (1 x 2)
  CHECK(has(py, "(\"amp_native\", {\"dtype\": \"bf16\"}),"));
  CHECK(has(py, "# ZeRO 0:"));
  CHECK(has(py, "NOTE: LLaMA's RMS norms"));
}

TEST_CASE("ATorch split points: a post-process stage and T5's decoder embedding", "[emit][atorch]") {
  const PresetSpecs llama("llama2-7b", "aws-h100");
  CHECK(modules(atorch_split_points(emit_plan("llama2-7b", 1, 1, {33, 1}, false), llama.model)) ==
        std::vector<std::string>{"module.lm_head"});
  const PresetSpecs gpt2("gpt2xl", "fasop-8nodes");
  CHECK(modules(atorch_split_points(emit_plan("gpt2xl", 1, 1, {49, 1}, false), gpt2.model)) ==
        std::vector<std::string>{"module.transformer.ln_f"});
  const PresetSpecs bert("bert", "fasop-bert");
  CHECK(modules(atorch_split_points(emit_plan("bert", 1, 1, {9, 17}, false), bert.model)) ==
        std::vector<std::string>{"module.bert.encoder.layer.8.attention"});

  // T5, {13, 12, 13, 12}: 50 units (encoder embedding, encoder 0-23, decoder embedding, decoder
  // 0-23). Unit 13 is encoder block 12; unit 25, the decoder embedding, moves to decoder block 0;
  // unit 38 is decoder block 12.
  const PresetSpecs t5("t5", "fasop-8nodes");
  const std::vector<AtorchSplit> splits = atorch_split_points(fasop::testing::t5_plan(), t5.model);
  CHECK(modules(splits) == std::vector<std::string>{"module.encoder.block.12.layer.0.SelfAttention.q",
                                                    "module.decoder.block.0.layer.0.SelfAttention.q",
                                                    "module.decoder.block.12.layer.0.SelfAttention.q"});
  CHECK(splits[0].note.empty());
  CHECK(has(splits[1].note, "decoder_embedding (unit 25)"));
  const std::string py = atorch_strategy_py(fasop::testing::t5_plan(), t5.model);
  CHECK(has(py, "(\"checkpoint\", (\"T5Block\",)),  # full recomputation, of each stage in ATorch's pipeline\n"));
  // A stage of the decoder embedding alone would start where the next one does.
  CHECK_THROWS_WITH(atorch_split_points(emit_plan("t5", 1, 1, {25, 1, 24}, false), t5.model),
                    Catch::Contains("stage 1 holds only an embedding"));
}

TEST_CASE("ATorch strategy without a pipeline", "[emit][atorch]") {
  // ZeRO-3 and recomputation with dp alone: per-layer FSDP units, checkpointed layers, DDP's
  // parallel_mode; 64 samples in micro-batches of 1 over dp 16: 4 accumulated a step.
  const PresetSpecs llama("llama2-7b", "aws-h100");
  const std::string py = atorch_strategy_py(emit_plan("llama2-7b", 1, 16, {34}, true, 3), llama.model);
  CHECK(has(py, "\"\"\"\n\nparallel_mode = ([(\"data\", 16)], None)\n"));  // no rank order to explain
  CHECK_FALSE(has(py, "pipeline_split_before"));
  CHECK_FALSE(has(py, "_parallel\""));  // neither mixed_parallel nor tensor_parallel
  CHECK(has(py, "accumulate the gradients of 4 such batches a step"));
  CHECK(has(py, "dataloader_args = {\"batch_size\": 16}\n"));
  CHECK(has(py, "(\"fsdp\", {\"atorch_wrap_cls\": (\"LlamaDecoderLayer\",)}),"));
  CHECK(has(py, "(\"checkpoint\", (\"LlamaDecoderLayer\",)),  # full recomputation of every layer"));

  // Tensor parallelism alone: tensor_parallel, which keeps ZeRO (zero2 as per-layer FSDP units).
  const PresetSpecs bert("bert", "fasop-bert");
  const std::string tp = atorch_strategy_py(emit_plan("bert", 2, 4, {26}, false, 1), bert.model);
  CHECK(has(tp, "parallel_mode = ([(\"tensor\", 2), (\"data\", 4)], None)\n"));
  CHECK(has(tp, "    (\"tensor_parallel\", {\"shard_planner\": \"mip\"}),\n"));
  const std::string zero2 = atorch_strategy_py(emit_plan("bert", 1, 8, {26}, false, 2), bert.model);
  CHECK(has(zero2, "(\"zero2\", {\"atorch_wrap_cls\": (\"BertLayer\",)}),"));
}

TEST_CASE("ATorch strategy refuses what ATorch would drop", "[emit][atorch]") {
  const PresetSpecs llama("llama2-7b", "aws-h100");
  const PresetSpecs gpt2("gpt2xl", "fasop-8nodes");
  using Catch::Contains;
  // mixed_parallel drops zero2/fsdp.
  CHECK_THROWS_AS(atorch_strategy_py(emit_plan("llama2-7b", 1, 4, {17, 17}, false, 2), llama.model), fasop::SpecError);
  CHECK_THROWS_WITH(atorch_strategy_py(emit_plan("llama2-7b", 1, 4, {17, 17}, false, 3), llama.model),
                    Contains("zero_stage 3 with pp 2") && Contains("--fix zero=1"));
  // Tensor parallelism removes FSDP's per-layer units and the checkpoint wrapper.
  CHECK_THROWS_WITH(atorch_strategy_py(emit_plan("llama2-7b", 2, 4, {34}, false, 3), llama.model),
                    Contains("zero_stage 3 with tp 2"));
  CHECK_THROWS_WITH(atorch_strategy_py(emit_plan("llama2-7b", 2, 4, {34}, true, 1), llama.model),
                    Contains("recompute full with tp 2 and pp 1") && Contains("--fix recompute=none"));
  // GPT-2's Conv1D layers are not what ATorch shards.
  CHECK_THROWS_WITH(atorch_strategy_py(emit_plan("gpt2xl", 2, 1, {18, 15, 17}, false), gpt2.model),
                    Contains("Conv1D") && Contains("--fix tp=1"));
  // 64 samples are not micro-batches of 3 over dp 4.
  CHECK_THROWS_WITH(atorch_strategy_py(emit_plan("llama2-7b", 1, 4, {17, 17}, false, 0, 3), llama.model),
                    Contains("global_batch 64 is not a multiple of micro_batch x dp (12)"));
  CHECK_THROWS_WITH(atorch_strategy_py(emit_plan("llama2-7b", 1, 4, {17, 16}, false), llama.model),
                    Contains("partition covers 33 units"));
}
