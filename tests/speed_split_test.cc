// Metis-style speed split (PlanKey::speed_split): a stage whose replicas sit on node types of
// different speeds splits its micro-batch by speed. The split alone on hand numbers, a plan
// priced by hand with and without it, its memory, the plain plan where no stage mixes types,
// the one-line errors, emitters that refuse it, the search's variants and plan files.
#include <catch2/catch.hpp>

#include "costmodel/analytic_policy.h"
#include "costmodel/estimate.h"
#include "costmodel/fasop_policy.h"
#include "costmodel/speed_split.h"
#include "costmodel/speed_split_checks.h"
#include "emit/atorch_strategy.h"
#include "emit/deepspeed_config.h"
#include "emit/megatron_args.h"
#include "emit/slapo_schedule.h"
#include "emit_fixtures.h"
#include "search/search_space.h"
#include "specs/spec_error.h"
#include "test_support.h"
#include "tiny_specs.h"

using fasop::testing::spec_error;
using namespace fasop;
using namespace fasop::testing::tiny;
using Catch::Matchers::Contains;

namespace {

/// Replica times from per-replica (overhead, per-sample) pairs: overhead + per-sample x n. Fails
/// the test if the split asks for a count outside 1..samples.
ReplicaTimeS linear_times(std::vector<std::pair<double, double>> lines, int samples) {
  return [lines, samples](int r, int n) {
    REQUIRE(n >= 1);
    REQUIRE(n <= samples);
    return lines[r].first + lines[r].second * n;
  };
}

}  // namespace

TEST_CASE("speed split: the split alone, on hand numbers", "[speed-split]") {
  // Per-sample times 1 and 3: 8 samples as 6 and 2 take max(6 x 1, 2 x 3) = 6; 7 and 1 take 7,
  // 5 and 3 take 9: 6 is least.
  SpeedSplit split = split_by_speed(2, 8, linear_times({{0, 1}, {0, 3}}, 8));
  CHECK(split.samples == std::vector<int>{6, 2});
  CHECK(split.time_s == 6);
  // A constant 4 per micro-batch on the second (same per-sample time 1): 6 and 2 take max(6,
  // 4 + 2) = 6, where an even 4 and 4 would take 4 + 4 = 8 and 7 and 1 take 7.
  split = split_by_speed(2, 8, linear_times({{0, 1}, {4, 1}}, 8));
  CHECK(split.samples == std::vector<int>{6, 2});
  CHECK(split.time_s == 6);
  // A replica so slow (100 a sample) that all 5 samples are faster on the other (5 < 100): it
  // gets none and takes no time.
  split = split_by_speed(2, 5, linear_times({{0, 1}, {0, 100}}, 5));
  CHECK(split.samples == std::vector<int>{5, 0});
  CHECK(split.time_s == 5);
  // Three equal replicas, 7 samples: 3, 2, 2 (ties to the lower replica), time 3.
  split = split_by_speed(3, 7, linear_times({{0, 1}, {0, 1}, {0, 1}}, 7));
  CHECK(split.samples == std::vector<int>{3, 2, 2});
  CHECK(split.time_s == 3);
}

namespace {

/// One stage of 8 replicas of tp 1 (pp 1, tp 1, dp 8, mbs 2) on the tiny cluster: replicas 0-3
/// on the fast node, 4-7 on the slow one; a global batch of 32 is 32 / (2 x 8) = 2 micro-batches
/// of 16 samples.
PlanKey mixed_key(bool speed_split) {
  PlanKey key{.mbs = 2, .tp = 1, .dp = 8, .pp = 1, .node_order = {0, 1}};
  key.speed_split = speed_split;
  return key;
}

ModelSpec batch_32_model() {
  ModelSpec model = tiny_model();
  model.global_batch = 32;
  return model;
}

}  // namespace

TEST_CASE("speed split: a stage of fast and slow replicas, priced by hand", "[analytic][speed-split]") {
  const ModelSpec model = batch_32_model();
  const ClusterSpec cluster = tiny_cluster();
  const ProfileSpec ga = tiny_profile("GA"), gb = tiny_profile("GB");
  AnalyticPolicy policy(without_overlap());
  const PlanKey key = mixed_key(true);
  REQUIRE_NOTHROW(validate_plan_key(model, cluster, key));
  CHECK(speed_split_applies(cluster, key));
  const PlanContext ctx = make_plan_context(model, cluster, {&ga, &gb}, policy, key);
  CHECK(ctx.num_microbatches == 2);
  CHECK(ctx.split_replica_types[0] == std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1});
  // A layer's forward + backward is 3 x its forward: on GA 30 ms a sample, on GB 60 ms (2
  // samples: the profile's point, twice 1; 3: past the last point, in proportion). The stage's
  // 4 layers: a fast replica 120 ms a sample, a slow one 240 ms. 16 samples: at 360 ms the fast
  // ones take 3 each and the slow ones 1 each (4 x 3 + 4 x 1 = 16); at 240 ms only 4 x 2 + 4 x 1
  // = 12. So 3, 3, 3, 3, 1, 1, 1, 1 and 360 ms, where the even split (2 each at the slow pace)
  // takes 480 ms.
  const std::vector<int> partition{4};
  const PlanEstimate e = estimate_plan(ctx, policy, partition);
  CHECK(e.stages[0].compute_s == Approx(0.360).epsilon(1e-9));
  CHECK(ctx.split_memory_samples[0] == 3);
  // The all-reduce, as for the plain plan: 4 layers of 12h^2 + 2 x 2h = 12,587,008 parameters,
  // 4 bytes each = 201,392,128 bytes, over the ring of 8 replicas from node 0 to node 1: a
  // network link (1e11 bit/s, shared by the 1 GPU of each tp ring on a node) for 2 x 2 nodes of
  // the 14 steps, 1e-4 s each, the other 10 on a node at 1e-5 s: 5e-4 s + 2 x 7/8 x 8 x
  // 201,392,128 / 1e11 = 0.02819489792 s; 0.02869489792 s in all.
  CHECK(e.stages[0].dp_allreduce_s == Approx(0.02869489792).epsilon(1e-9));
  // One stage: 2 micro-batches of 360 ms, then the all-reduce.
  CHECK(e.step_time_s == Approx(2 * 0.360 + 0.02869489792).epsilon(1e-9));

  // Without the split: every replica 2 samples at GB's pace, 4 x 2 x 60 ms = 480 ms.
  const PlanContext plain_ctx = make_plan_context(model, cluster, {&ga, &gb}, policy, mixed_key(false));
  const PlanEstimate plain = estimate_plan(plain_ctx, policy, partition);
  CHECK(plain.stages[0].compute_s == Approx(0.480).epsilon(1e-9));
  CHECK(plain.step_time_s == Approx(2 * 0.480 + 0.02869489792).epsilon(1e-9));
  CHECK(plain.stages[0].dp_allreduce_s == e.stages[0].dp_allreduce_s);
  // The slow type's pricing, exactly: the same plan on a cluster of two slow nodes.
  ClusterSpec slow = cluster;
  slow.nodes = {1, 1};
  PlanKey slow_key = mixed_key(false);
  slow_key.node_order = {1, 1};
  const PlanContext slow_ctx = make_plan_context(model, slow, {&ga, &gb}, policy, slow_key);
  CHECK(estimate_plan(slow_ctx, policy, partition).stages[0].compute_s == plain.stages[0].compute_s);
}

TEST_CASE("speed split: the fast replicas' extra samples show in the stage's memory", "[analytic][speed-split]") {
  const ModelSpec model = batch_32_model();
  const ClusterSpec cluster = tiny_cluster();
  const ProfileSpec ga = tiny_profile("GA"), gb = tiny_profile("GB");
  AnalyticPolicy policy(without_overlap());
  const std::vector<int> partition{4};
  const PlanEstimate split =
      estimate_plan(make_plan_context(model, cluster, {&ga, &gb}, policy, mixed_key(true)), policy, partition);
  const PlanEstimate plain =
      estimate_plan(make_plan_context(model, cluster, {&ga, &gb}, policy, mixed_key(false)), policy, partition);
  // 18 bytes a parameter x 4 x 12,587,008 = 906,264,576 either way; a sample's layer at tp 1
  // keeps 512 x (10h + 16 + 8h + 4a + 4f) = 17,866,752 bytes, 4 layers 71,467,008; one
  // micro-batch in flight (pp 1). The busiest replica (a fast one) holds 3 samples, the even
  // split 2.
  const auto terms = [](const PlanEstimate& e) { return e.stages[0].memory.breakdown->terms; };
  for (const PlanEstimate* e : {&split, &plain})
    CHECK(terms(*e).weights_bytes + terms(*e).gradients_bytes + terms(*e).master_weights_bytes +
              terms(*e).optimizer_states_bytes ==
          Approx(906264576.0).epsilon(1e-12));
  CHECK(terms(split).activations_bytes == Approx(3 * 71467008.0).epsilon(1e-12));
  CHECK(terms(plain).activations_bytes == Approx(2 * 71467008.0).epsilon(1e-12));
  CHECK(split.stages[0].memory.gib > plain.stages[0].memory.gib);
}

TEST_CASE("speed split: stages on one node type are the plain plan, exactly", "[analytic][speed-split]") {
  const ModelSpec model = tiny_model();
  const ClusterSpec cluster = tiny_cluster();
  const ProfileSpec ga = tiny_profile("GA"), gb = tiny_profile("GB");
  AnalyticPolicy policy;
  // pp 2, tp 1, dp 4: stage 0 on the fast node, stage 1 on the slow one; neither mixes.
  PlanKey plain{.mbs = 1, .tp = 1, .dp = 4, .pp = 2, .node_order = {0, 1}};
  plain.zero_stage = 1;
  PlanKey split = plain;
  split.speed_split = true;
  CHECK_FALSE(speed_split_applies(cluster, split));
  const PlanContext a = make_plan_context(model, cluster, {&ga, &gb}, policy, plain);
  const PlanContext b = make_plan_context(model, cluster, {&ga, &gb}, policy, split);
  CHECK_FALSE(b.splits_stage(0));
  CHECK_FALSE(b.splits_stage(1));
  for (const std::vector<int>& partition : {std::vector<int>{2, 2}, std::vector<int>{1, 3}}) {
    const PlanEstimate x = estimate_plan(a, policy, partition), y = estimate_plan(b, policy, partition);
    check_same_estimate(x, y);
  }
}

TEST_CASE("speed split: where it cannot apply, one-line errors", "[analytic][speed-split]") {
  const ModelSpec model = tiny_model();
  const ClusterSpec cluster = tiny_cluster();
  const ProfileSpec ga = tiny_profile("GA"), gb = tiny_profile("GB");
  // The fasop policy runs a stage at one speed.
  FasopPolicy fasop;
  PlanKey key{.mbs = 1, .tp = 1, .dp = 8, .pp = 1, .node_order = {0, 1}};
  key.speed_split = true;
  std::string error = spec_error([&] { make_plan_context(model, cluster, {&ga, &gb}, fasop, key); });
  CHECK_THAT(error, Contains("--speed-split") && Contains("--policy analytic"));
  CHECK(error.find('\n') == std::string::npos);
  // tp 8 on nodes of 4 GPUs: the one replica spans a fast and a slow node, so it has no one speed.
  PlanKey wide{.mbs = 1, .tp = 8, .dp = 1, .pp = 1, .node_order = {0, 1}};
  wide.speed_split = true;
  CHECK_FALSE(speed_split_applies(cluster, wide));
  // A replica on two node types has no one speed.
  error = spec_error([&] { validate_plan_key(model, cluster, wide); });
  CHECK_THAT(error, Contains("--speed-split") && Contains("replica 0 of stage 0"));
  CHECK(error.find('\n') == std::string::npos);
  wide.speed_split = false;
  CHECK_NOTHROW(validate_plan_key(model, cluster, wide));
}

TEST_CASE("speed split: every emitter refuses it, naming itself", "[emit][speed-split]") {
  ModelSpec model = fasop::testing::preset_model("gpt2xl");
  PlanFile plan = fasop::testing::layout_plan(2, 2, 2, 3, 64, {18, 15, 17}, 1, false);
  plan.key.speed_split = true;
  auto refuses = [](const std::function<void()>& emit, const std::string& framework) {
    const std::string what = spec_error(emit);
    CHECK_THAT(what, Contains(framework) && Contains("speed_split"));
    CHECK(what.find('\n') == std::string::npos);
  };
  refuses([&] { megatron_args(plan, model, MegatronFlavor::kUpstream); }, "Megatron-LM");
  refuses([&] { deepspeed_config_json(plan, model); }, "DeepSpeed");
  refuses([&] { slapo_schedule_py(plan, model); }, "Slapo");
  refuses([&] { atorch_strategy_py(plan, model); }, "ATorch");
  plan.key.speed_split = false;
  CHECK_NOTHROW(deepspeed_config_json(plan, model));
}

TEST_CASE("speed split: the search adds the variant only where a stage mixes node types", "[search][speed-split]") {
  const ModelSpec model = tiny_model();
  const ClusterSpec cluster = tiny_cluster();
  SearchSpaceOptions space;
  const std::vector<PlanKey> plain = enumerate_plan_keys(model, cluster, space);
  for (const PlanKey& k : plain) CHECK_FALSE(k.speed_split);
  space.speed_split = true;
  const std::vector<PlanKey> keys = enumerate_plan_keys(model, cluster, space);
  size_t variants = 0, mixing = 0;
  for (const PlanKey& k : plain) mixing += speed_split_applies(cluster, k);
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!keys[i].speed_split) continue;
    ++variants;
    CHECK(speed_split_applies(cluster, keys[i]));
    // Right after the plain layout it varies.
    REQUIRE(i > 0);
    PlanKey plain_twin = keys[i];
    plain_twin.speed_split = false;
    CHECK(keys[i - 1].mbs == plain_twin.mbs);
    CHECK(keys[i - 1].dp == plain_twin.dp);
    CHECK(keys[i - 1].node_order == plain_twin.node_order);
    CHECK_FALSE(keys[i - 1].speed_split);
  }
  // pp 1 x dp 8 or dp 4 x tp 2 (and dp 2 x tp 4) put a fast and a slow replica in one stage.
  CHECK(mixing > 0);
  CHECK(variants == mixing);
  CHECK(keys.size() == plain.size() + mixing);
}

TEST_CASE("speed split: plan files write and read it", "[plan][speed-split]") {
  PlanFile plan = fasop::testing::layout_plan(2, 1, 8, 1, 32, {4}, 0, false);
  plan.model = "tiny";
  plan.cluster = "tiny-two-types";
  plan.policy = "analytic";
  plan.nodes = {{"fast", 1}, {"slow", 1}};
  plan.key.speed_split = true;
  plan.node_order = {"fast", "slow"};
  plan.stages = {{0, 4, "slow", "GB", 8, 0.36, 2.04}};
  plan.estimate.iterations = 1000;
  const std::string yaml = plan_file_yaml(plan);
  CHECK_THAT(yaml, Contains("speed_split: true"));
  CHECK(parse_plan_file(yaml, "p.yaml").key.speed_split);
  plan.key.speed_split = false;
  CHECK(plan_file_yaml(plan).find("speed_split") == std::string::npos);
  CHECK_FALSE(parse_plan_file(plan_file_yaml(plan), "p.yaml").key.speed_split);
}
