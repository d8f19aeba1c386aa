// The Slapo schedule emitter: exact primitive counts and cut targets for hand-made plans.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <vector>

#include "emit/slapo_schedule.h"
#include "specs/spec_error.h"
#include "emit_fixtures.h"
#include "test_support.h"

namespace {

using fasop::slapo_schedule_py;
using fasop::testing::emit_plan;
using fasop::testing::PresetSpecs;

/// Occurrences of `needle` in `text`.
int count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++n;
  return n;
}

/// The modules the script calls cut_pipeline_stage on, in order.
std::vector<std::string> cut_targets(const std::string& text) {
  std::vector<std::string> targets;
  const std::string call = "\"].cut_pipeline_stage()";
  for (size_t at = text.find(call); at != std::string::npos; at = text.find(call, at + call.size())) {
    const size_t open = text.rfind("sch[\"", at);
    targets.push_back(text.substr(open + 5, at - open - 5));
  }
  return targets;
}

}  // namespace

TEST_CASE("Slapo schedule of GPT-2 XL, tp=2 pp=3 uneven, recompute", "[emit]") {
  const PresetSpecs specs("gpt2xl", "fasop-8nodes");
  REQUIRE(specs.model.num_units() == 50);  // embedding, 48 layers, post_process
  const std::string py = slapo_schedule_py(fasop::testing::gpt2_uneven_plan(), specs.model);

  // Per layer: c_attn weight+bias, attn.c_proj weight, mlp.c_fc weight+bias, mlp.c_proj weight:
  // 6 shards; bwd all-reduce on c_attn and c_fc, fwd all-reduce on the two c_proj: 4 syncs;
  // one fork_rng (attn.attn_dropout). 48 layers.
  CHECK(count(py, ".shard(") == 6 * 48);
  CHECK(count(py, ".sync(mode=\"bwd_post\"") == 2 * 48);
  CHECK(count(py, ".sync(mode=\"fwd_post\"") == 2 * 48);
  CHECK(count(py, ".sync(") == 4 * 48);
  CHECK(count(py, ".fork_rng()") == 48);
  CHECK(count(py, "attn.attn_dropout\"].fork_rng()") == 48);
  CHECK(count(py, "_regroup_fused_qkv(sch[") == 48);
  CHECK(count(py, "_divide_heads(sch[") == 48);
  CHECK(count(py, ".checkpoint(") == 48);  // recompute: every transformer layer
  CHECK(count(py, "sch[\"transformer.h.47\"].checkpoint(") == 1);
  // Conv1D stores (in, out): column-parallel on weight axis 1, row-parallel on axis 0.
  CHECK(count(py, "sch[\"transformer.h.5.attn.c_attn\"].shard(\"weight\", axis=1)") == 1);
  CHECK(count(py, "sch[\"transformer.h.5.mlp.c_proj\"].shard(\"weight\", axis=0)") == 1);
  // Partition {18, 15, 17}: stage 0 = embedding + h.0..h.16 (17 layers), stage 1 = h.17..h.31
  // (15), stage 2 = h.32..h.47 (16) + post_process. Slapo cuts after the named module: h.16, h.31.
  CHECK(cut_targets(py) == std::vector<std::string>{"transformer.h.16", "transformer.h.31"});
  CHECK(count(py, "sch.trace_until(\"transformer\"") == 1);
  CHECK(count(py, "# NOTE:") == 0);  // no cut had to move
  CHECK(count(py, "slapo.build(sch") == 1);
  CHECK(count(py, "# Partition (units per stage): [18, 15, 17]") == 1);
  CHECK(count(py, "#   stage 0: units 0-17: embedding transformer.h.0..16\n") == 1);
  CHECK(count(py, "#   stage 2: units 33-49: transformer.h.32..47 post_process\n") == 1);
  CHECK(count(py, "# Node order: p4d, g5, g5") == 1);
  // Deterministic: the same plan gives the same bytes.
  CHECK(py == slapo_schedule_py(fasop::testing::gpt2_uneven_plan(), specs.model));
}

TEST_CASE("Slapo schedule without tp, recompute or pipeline has no primitives", "[emit]") {
  const PresetSpecs specs("gpt2xl", "fasop-8nodes");
  const std::string py = slapo_schedule_py(emit_plan("gpt2xl", 1, 8, {50}, false), specs.model);
  CHECK(count(py, ".shard(") == 0);
  CHECK(count(py, ".sync(") == 0);
  CHECK(count(py, ".fork_rng()") == 0);
  CHECK(count(py, ".checkpoint(") == 0);
  CHECK(cut_targets(py).empty());
  CHECK(count(py, "trace_until") == 0);
}

TEST_CASE("Slapo schedule of LLaMA with an embedding-only first stage", "[emit]") {
  const PresetSpecs specs("llama2-7b", "aws-h100");
  const std::string py = slapo_schedule_py(fasop::testing::llama_embedding_stage_plan(), specs.model);
  // Per layer: q/k/v/gate/up column-parallel (5 shards, 5 bwd syncs), o/down row-parallel
  // (2 shards, 2 fwd syncs), no biases; fork_rng on self_attn. 32 layers, grouped heads split.
  CHECK(count(py, ".shard(") == 7 * 32);
  CHECK(count(py, ".sync(mode=\"bwd_post\"") == 5 * 32);
  CHECK(count(py, ".sync(mode=\"fwd_post\"") == 2 * 32);
  CHECK(count(py, "self_attn\"].fork_rng()") == 32);
  CHECK(count(py, ".fork_rng()") == 32);
  CHECK(count(py, "[\"num_heads\", \"num_key_value_heads\", \"hidden_size\"]") == 32);
  CHECK(count(py, ".checkpoint(") == 0);
  CHECK(count(py, "_regroup_fused_qkv") == 0);
  // {1, 11, 11, 11}: the boundary before layers.0 cannot be cut: moved after layers.0. Then
  // stage 1 starts at unit 12 = layers.11 (cut after layers.10) and stage 2 at unit 23 = layers.22.
  CHECK(cut_targets(py) == std::vector<std::string>{"model.layers.0", "model.layers.10", "model.layers.21"});
  CHECK(count(py, "# NOTE: the plan cuts before model.layers.0") == 1);
  CHECK(count(py, "sch.trace_until(\"model\"") == 1);
  // Two stages that both would end after layers.0 cannot be realized.
  CHECK_THROWS_AS(slapo_schedule_py(emit_plan("llama2-7b", 1, 1, {1, 1, 32}, false), specs.model),
                  fasop::SpecError);
  // A boundary right before the head is exact: the last stage holds model.norm and lm_head.
  const std::string head = slapo_schedule_py(emit_plan("llama2-7b", 1, 1, {33, 1}, false), specs.model);
  CHECK(cut_targets(head) == std::vector<std::string>{"model.layers.31"});
  CHECK(count(head, "# NOTE:") == 0);
}

TEST_CASE("Slapo schedule of T5 cuts in both stacks and between them", "[emit]") {
  const PresetSpecs specs("t5", "fasop-8nodes");
  REQUIRE(specs.model.num_units() == 50);
  const std::string py = slapo_schedule_py(fasop::testing::t5_plan(), specs.model);
  // Encoder block: SelfAttention q/k/v/o + wi/wo = 6 shards, 6 syncs, forks on SelfAttention and
  // DenseReluDense.dropout. Decoder block: + EncDecAttention q/k/v/o = 10 shards, 10 syncs,
  // 3 forks. Block 0 of each stack also splits relative_attention_bias by heads (+2 shards).
  CHECK(count(py, ".shard(") == 24 * 6 + 24 * 10 + 2);
  CHECK(count(py, "relative_attention_bias\"].shard(\"weight\", axis=1)") == 2);
  CHECK(count(py, ".sync(") == 24 * 6 + 24 * 10);
  CHECK(count(py, ".fork_rng()") == 24 * 2 + 24 * 3);
  CHECK(count(py, "decoder.block.7.layer.1.EncDecAttention\"].fork_rng()") == 1);
  CHECK(count(py, "decoder.block.7.layer.2.DenseReluDense.wo\"].shard(\"weight\", axis=1)") == 1);
  CHECK(count(py, "encoder.block.7.layer.1.DenseReluDense.wi\"].shard(\"weight\", axis=0)") == 1);
  CHECK(count(py, ".checkpoint(") == 48);
  // {13, 12, 13, 12}: stage 1 starts at encoder.block.12, stage 2 at the decoder embedding (the
  // stacks' boundary: cut after `encoder`), stage 3 at decoder.block.12.
  CHECK(cut_targets(py) == std::vector<std::string>{"encoder.block.11", "encoder", "decoder.block.11"});
  CHECK(count(py, "sch.trace_until([\"encoder\", \"decoder\"]") == 1);
}

TEST_CASE("Slapo schedule rejects plans that do not fit the model", "[emit]") {
  const PresetSpecs specs("gpt2xl", "fasop-8nodes");
  CHECK_THROWS_AS(slapo_schedule_py(emit_plan("gpt2xl", 2, 1, {18, 15, 16}, false), specs.model),
                  fasop::SpecError);  // 49 of 50 units
  CHECK_THROWS_AS(slapo_schedule_py(emit_plan("gpt2xl", 3, 1, {25, 25}, false), specs.model),
                  fasop::SpecError);  // 3 does not divide 16 heads
}
