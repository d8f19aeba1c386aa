// Uneven data parallelism (PlanKey::uneven_dp, Sailor-style): dp and mbs that do not divide the
// global batch, priced by the replica with the most micro-batches; allowed only when asked for.
#include <catch2/catch.hpp>

#include "costmodel/analytic_policy.h"
#include "costmodel/estimate.h"
#include "costmodel/pipeline_1f1b.h"
#include "emit/deepspeed_config.h"
#include "emit/megatron_args.h"
#include "emit_fixtures.h"
#include "search/search_space.h"
#include "specs/spec_error.h"
#include "test_support.h"
#include "tiny_specs.h"

using fasop::testing::spec_error;
using namespace fasop;
using namespace fasop::testing::tiny;
using Catch::Matchers::Contains;

TEST_CASE("uneven dp: the slowest replica's micro-batches, priced by hand", "[analytic][uneven-dp]") {
  ModelSpec model = tiny_model();
  model.global_batch = 7;  // over dp 2: replicas of 4 and 3 samples
  const ClusterSpec cluster = tiny_cluster();
  const ProfileSpec ga = tiny_profile("GA"), gb = tiny_profile("GB");
  AnalyticPolicy policy(without_overlap());
  PlanKey key{.mbs = 1, .tp = 2, .dp = 2, .pp = 2, .node_order = {0, 1}};  // stage 0: the fast node's 4 GPUs, stage 1 the slow node's
  // Not without the flag: one line, naming it.
  const std::string error = spec_error([&] { validate_plan_key(model, cluster, key); });  // 2 does not divide 7
  CHECK_THAT(error, Contains("--dp") && Contains("--uneven-dp"));
  CHECK(error.find('\n') == std::string::npos);
  key.uneven_dp = true;
  REQUIRE_NOTHROW(validate_plan_key(model, cluster, key));
  CHECK(splits_batch_unevenly(7, key));
  const PlanContext ctx = make_plan_context(model, cluster, {&ga, &gb}, policy, key);
  // ceil(7 / (1 x 2)) = 4 micro-batches: the replica of 4 samples sets the step.
  CHECK(ctx.num_microbatches == 4);
  // Stage 0: two GA layers at tp 2, 3 x 6 ms each = 36 ms; stage 1: two GB layers, 3 x 9 ms
  // = 54 ms. Send: 1 x 2 / 2 samples x 512 x 1024 x 2 bytes / 2 lanes = 524,288 bytes per rank,
  // across the network shared by the stage's 4 GPUs on the node (1e11 / 4): 1e-4 + 8 x 524,288
  // / 2.5e10 = 2.6777216e-4 s. All-reduce of each stage's 2 layers at tp 2 (2 x (12h^2 / 2 +
  // 4h) = 12,591,104 parameters, 4 bytes each) over 2 replicas on one node: 2e-5 + 8 x 4 x
  // 12,591,104 / 8e11 = 5.2364416e-4 s.
  const std::vector<int> partition{2, 2};
  const PlanEstimate e = estimate_plan(ctx, policy, partition);
  CHECK(e.stages[0].compute_s == Approx(0.036).epsilon(1e-9));
  CHECK(e.stages[1].compute_s == Approx(0.054).epsilon(1e-9));
  CHECK(ctx.boundary_send_s[0] == Approx(2.6777216e-4).epsilon(1e-9));
  CHECK(e.stages[0].dp_allreduce_s == Approx(5.2364416e-4).epsilon(1e-9));
  CHECK(e.stages[1].dp_allreduce_s == Approx(5.2364416e-4).epsilon(1e-9));
  const std::vector<StageTiming> hand{{0.012, 0.024, 2.6777216e-4, 0}, {0.018, 0.036, 0, 2.6777216e-4}};
  const PipelineResult pipe = simulate_1f1b(hand, 4);
  const double step = std::max(pipe.stage_end_s[0], pipe.stage_end_s[1]) + 5.2364416e-4;
  CHECK(e.step_time_s == Approx(step).epsilon(1e-9));
  // The same step as the even batch of 8 (4 micro-batches on every replica), exactly.
  ModelSpec even = model;
  even.global_batch = 8;
  PlanKey even_key = key;
  even_key.uneven_dp = false;
  const PlanContext even_ctx = make_plan_context(even, cluster, {&ga, &gb}, policy, even_key);
  CHECK(estimate_plan(even_ctx, policy, partition).step_time_s == e.step_time_s);
  // mbs 2: the replica of 4 samples runs 2 micro-batches, the one of 3 two as well (the last short).
  key.mbs = 2;
  CHECK(make_plan_context(model, cluster, {&ga, &gb}, policy, key).num_microbatches == 2);
}

TEST_CASE("uneven dp: the checks that remain", "[analytic][uneven-dp]") {
  ModelSpec model = tiny_model();
  model.global_batch = 6;
  const ClusterSpec cluster = tiny_cluster();
  PlanKey key{.mbs = 4, .tp = 1, .dp = 4, .pp = 2, .node_order = {0, 1}};  // mbs 4 over shares of 2 samples (ceil(6 / 4))
  key.uneven_dp = true;
  CHECK_THROWS_WITH(validate_plan_key(model, cluster, key), Contains("--mbs") && Contains("largest replica's share 2"));
  model.global_batch = 3;  // 4 replicas, 3 samples
  key.mbs = 1;
  CHECK_THROWS_WITH(validate_plan_key(model, cluster, key), Contains("--dp") && Contains("gives some none"));
  // mbs that does not divide a replica's share, without the flag: the error names the flag.
  model.global_batch = 8;
  PlanKey odd{.mbs = 3, .tp = 1, .dp = 2, .pp = 4, .node_order = {0, 1}};
  CHECK_THROWS_WITH(validate_plan_key(model, cluster, odd), Contains("--mbs") && Contains("--uneven-dp"));
  // Per-stage dp: a stage of 2 replicas splits a micro-batch of 3 samples as 2 and 1.
  PlanContext ctx;
  ctx.key = PlanKey{.mbs = 1, .tp = 1, .dp = 3, .pp = 2, .node_order = {0, 1}};
  ctx.key.stage_dp = {3, 2};
  CHECK(ctx.stage_mbs(0) == 1);
  CHECK(ctx.stage_mbs(1) == 2);
  CHECK(splits_batch_unevenly(6, ctx.key));
}

TEST_CASE("uneven dp: the search tries it only with the flag, and marks only uneven layouts", "[search][uneven-dp]") {
  ModelSpec model = tiny_model();
  model.global_batch = 7;
  const ClusterSpec cluster = tiny_cluster();
  SearchSpaceOptions space;
  const std::vector<PlanKey> even = enumerate_plan_keys(model, cluster, space);
  for (const PlanKey& k : even) CHECK((k.dp == 1 && !k.uneven_dp));
  space.uneven_dp = true;
  size_t uneven = 0;
  for (const PlanKey& k : enumerate_plan_keys(model, cluster, space)) {
    CHECK(k.uneven_dp == splits_batch_unevenly(7, k));
    CHECK(k.mbs <= (7 + k.dp - 1) / k.dp);
    uneven += k.uneven_dp;
  }
  CHECK(uneven > 0);
}

TEST_CASE("uneven dp: Megatron-LM and DeepSpeed refuse it, naming themselves", "[emit][uneven-dp]") {
  ModelSpec model = fasop::testing::preset_model("gpt2xl");
  PlanFile plan = fasop::testing::layout_plan(1, 2, 3, 3, 64, {18, 15, 17}, 1, false);  // 64 over 3 replicas
  plan.key.uneven_dp = true;
  CHECK_THROWS_WITH(megatron_args(plan, model, MegatronFlavor::kUpstream), Contains("Megatron-LM") && Contains("uneven_dp"));
  CHECK_THROWS_WITH(deepspeed_config_json(plan, model), Contains("DeepSpeed") && Contains("uneven_dp"));
}
