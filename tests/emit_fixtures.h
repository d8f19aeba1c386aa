#pragma once
// Hand-made plans for the emitter tests and emit_fixture (the Python check's driver).
#include <stdexcept>
#include <string>
#include <vector>

#include "specs/plan_file.h"

namespace fasop::testing {

/// A plan file in memory with the given layout and partition (units per stage).
inline PlanFile emit_plan(const std::string& model, int tp, int dp, const std::vector<int>& partition,
                          bool recompute, int zero_stage = 0, int mbs = 1) {
  PlanFile plan;
  plan.model = model;
  plan.cluster = "fixture";
  plan.global_batch = 64;
  plan.key.mbs = mbs;
  plan.key.tp = tp;
  plan.key.dp = dp;
  plan.key.pp = static_cast<int>(partition.size());
  plan.key.zero_stage = zero_stage;
  plan.key.recompute = recompute;
  plan.partition = partition;
  for (size_t s = 0; s < partition.size(); ++s) plan.node_order.push_back(s == 0 ? "p4d" : "g5");
  return plan;
}

/// A plan file in memory with every degree and the global batch given.
inline PlanFile layout_plan(int mbs, int tp, int dp, int pp, int global_batch, std::vector<int> partition, int zero,
                            bool recompute) {
  PlanFile plan;
  plan.global_batch = global_batch;
  plan.key.mbs = mbs;
  plan.key.tp = tp;
  plan.key.dp = dp;
  plan.key.pp = pp;
  plan.key.zero_stage = zero;
  plan.key.recompute = recompute;
  plan.partition = std::move(partition);
  return plan;
}

/// GPT-2 XL, tp=2 pp=3 with the uneven partition {18, 15, 17} and full recomputation:
/// embedding + h.0-16 | h.17-31 | h.32-47 + post_process, so Slapo cuts after h.16 and h.31.
inline PlanFile gpt2_uneven_plan() { return emit_plan("gpt2xl", 2, 1, {18, 15, 17}, true); }

/// LLaMA 2 7B, tp=2 pp=4 {1, 11, 11, 11}: the first stage is the embedding alone, which Slapo
/// cannot cut (the cut moves after model.layers.0); then cuts after layers.10 and layers.21.
inline PlanFile llama_embedding_stage_plan() { return emit_plan("llama2-7b", 2, 2, {1, 11, 11, 11}, false); }

/// T5, tp=2 pp=4 {13, 12, 13, 12} with recomputation: encoder_embedding + encoder.block.0-11 |
/// encoder.block.12-23 | decoder_embedding + decoder.block.0-11 | decoder.block.12-23; cuts after
/// encoder.block.11, encoder (the stacks' boundary) and decoder.block.11.
inline PlanFile t5_plan() { return emit_plan("t5", 2, 1, {13, 12, 13, 12}, true); }

/// T5 for FASOP's Megatron fork, tp=2 dp=2 pp=4 {12, 13, 11, 14} with recomputation, uneven in
/// both segments: encoder_embedding + encoder layers 0-10 (11) | encoder 11-23 (13) |
/// decoder_embedding + decoder 0-9 (10) | decoder 10-23 (14): split rank 2, --balance 11-13-10-14.
inline PlanFile t5_uneven_plan() { return emit_plan("t5", 2, 2, {12, 13, 11, 14}, true); }

/// A fixture by name, with its model preset's name.
inline PlanFile emit_fixture_plan(const std::string& name) {
  if (name == "gpt2-tp2-pp3-uneven") return gpt2_uneven_plan();
  if (name == "llama-tp2-pp4-embedding-stage") return llama_embedding_stage_plan();
  if (name == "t5-tp2-pp4") return t5_plan();
  if (name == "t5-tp2-dp2-pp4-uneven") return t5_uneven_plan();
  throw std::invalid_argument("unknown fixture " + name);
}

}  // namespace fasop::testing
