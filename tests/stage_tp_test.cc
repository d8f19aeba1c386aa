// Per-stage tensor parallelism (PlanKey::stage_tp, Sailor-style): a plan priced by hand, uniform
// stage_tp against the plain plan, the one-line errors, emitters that refuse it and the search.
#include <catch2/catch.hpp>

#include "costmodel/analytic_policy.h"
#include "costmodel/estimate.h"
#include "costmodel/pipeline_1f1b.h"
#include "emit/deepspeed_config.h"
#include "emit/megatron_args.h"
#include "emit_fixtures.h"
#include "profiles/analytic_profile.h"
#include "search/cluster_shapes.h"
#include "search/search_space.h"
#include "specs/spec_error.h"
#include "search/partitioner.h"
#include "test_support.h"
#include "tiny_specs.h"

using fasop::testing::spec_error;
using namespace fasop;
using Catch::Matchers::Contains;
using fasop::testing::PresetSpecs;
using namespace fasop::testing::tiny;

TEST_CASE("per-stage tp: a plan priced by hand", "[analytic][stage-tp]") {
  const ModelSpec model = tiny_model();
  const ClusterSpec cluster = tiny_cluster();
  const ProfileSpec ga = tiny_profile("GA"), gb = tiny_profile("GB");
  AnalyticPolicy policy(without_overlap());
  // Sailor's shape: the fast node runs two stages of tp 1 x dp 2 (ranks 0-1 and 2-3), the slow
  // node one stage of tp 4 x dp 1 (ranks 4-7). dp is the largest (2): a pipeline micro-batch of
  // mbs x dp = 2 samples, 1 per replica on stages 0 and 1, both on stage 2; 8 / 2 = 4 of them.
  PlanKey key{.mbs = 1, .tp = 4, .dp = 2, .pp = 3, .node_order = {0, 1}};
  key.stage_tp = {1, 1, 4};
  key.stage_dp = {2, 2, 1};
  REQUIRE_NOTHROW(validate_plan_key(model, cluster, key));
  const PlanContext ctx = make_plan_context(model, cluster, {&ga, &gb}, policy, key);
  CHECK(ctx.num_microbatches == 4);
  CHECK(ctx.stage_first_rank(1) == 2);
  CHECK(ctx.stage_first_rank(2) == 4);
  CHECK(ctx.stage_rank(2, 0, 3) == 7);
  CHECK(ctx.stage_node_type == std::vector<int>{0, 0, 1});
  // Each type's layers at its own tp: GA at tp 1, 1 sample: 3 x 10 ms; GB at tp 4, 2 samples:
  // 3 x 12 ms (not tp 1's 3 x 40 ms).
  CHECK(ctx.unit_compute_s[0][0] == Approx(0.030).epsilon(1e-9));
  CHECK(ctx.unit_compute_s[1][0] == Approx(0.036).epsilon(1e-9));
  // Sends: one micro-batch's activation is mbs x dp / (fewer replicas) x s x h x 2 bytes, over
  // min(tp) lanes. 0 -> 1 (dp 2 and 2, tp 1 and 1), on the node: 1 x 512 x 1024 x 2 = 1,048,576
  // bytes, 1e-5 + 8 x 1,048,576 / 8e11 = 2.048576e-5 s. 1 -> 2 (dp 2 and 1, tp 1 and 4): the
  // 2-sample micro-batch, 2,097,152 bytes, over the network shared by stage 1's 2 GPUs on its
  // node (1e11 / 2): 1e-4 + 8 x 2,097,152 / 5e10 = 4.3554432e-4 s.
  REQUIRE(ctx.boundary_send_s.size() == 2);
  CHECK(boundary_send_bytes(ctx, 0, 1) == Approx(1048576).epsilon(1e-9));
  CHECK(boundary_send_bytes(ctx, 1, 2) == Approx(2097152).epsilon(1e-9));
  CHECK(ctx.boundary_send_s[0] == Approx(2.048576e-5).epsilon(1e-9));
  CHECK(ctx.boundary_send_s[1] == Approx(4.3554432e-4).epsilon(1e-9));

  const std::vector<int> partition{1, 1, 2};
  const PlanEstimate e = estimate_plan(ctx, policy, partition);
  REQUIRE(e.stages.size() == 3);
  // Compute per micro-batch: stages 0 and 1 one GA layer, 30 ms; stage 2 two GB layers, 72 ms.
  CHECK(e.stages[0].compute_s == Approx(0.030).epsilon(1e-9));
  CHECK(e.stages[1].compute_s == Approx(0.030).epsilon(1e-9));
  CHECK(e.stages[2].compute_s == Approx(0.072).epsilon(1e-9));
  // A layer's parameters on a GPU of tp t: 12 h^2 / t + two LayerNorms (2 x 2h) = 12,587,008 at
  // tp 1, 3,149,824 at tp 4. Stages 0 and 1 all-reduce their 4-byte gradients over their 2
  // replicas on the node: 2 x 1 x 1e-5 + 2 x 1/2 x 8 x 4 x 12,587,008 / 8e11 = 5.2348032e-4 s;
  // stage 2 has one replica: none.
  CHECK(e.stages[0].dp_allreduce_s == Approx(5.2348032e-4).epsilon(1e-9));
  CHECK(e.stages[1].dp_allreduce_s == Approx(5.2348032e-4).epsilon(1e-9));
  CHECK(e.stages[2].dp_allreduce_s == 0);
  // Memory: 18 bytes a parameter (no ZeRO) and one sample's activations x the samples in flight.
  // A sample's layer at tp t keeps 512 tokens x (10h + 16 + (8h + 4a + 4f) / t) bytes (the
  // norms' inputs and outputs, two dropout masks and the LayerNorms' fp32 statistics whole;
  // queries, keys, values, output, flash attention's log-sum-exp and the MLP's two 4h-wide
  // tensors split): 17,866,752 at tp 1, 8,404,992 at tp 4. Stage 0 holds 3 micro-batches of
  // 1 sample, stage 1 two, stage 2 one of 2 samples on its 2 layers.
  const auto persistent = [&](int stage) {
    const MemoryTerms& t = e.stages[stage].memory.breakdown->terms;
    return t.weights_bytes + t.gradients_bytes + t.master_weights_bytes + t.optimizer_states_bytes;
  };
  const auto activations = [&](int stage) { return e.stages[stage].memory.breakdown->terms.activations_bytes; };
  CHECK(persistent(0) == Approx(18 * 12587008.0).epsilon(1e-12));
  CHECK(persistent(2) == Approx(18 * 2 * 3149824.0).epsilon(1e-12));
  CHECK(activations(0) == Approx(3 * 17866752.0).epsilon(1e-12));
  CHECK(activations(1) == Approx(2 * 17866752.0).epsilon(1e-12));
  CHECK(activations(2) == Approx(2 * 2 * 8404992.0).epsilon(1e-12));
  // The step: 1F1B over these passes (forward a third of compute) and sends, then the latest
  // stage end plus its all-reduce (no embedding sync, no optimizer term here).
  const std::vector<StageTiming> hand{{0.010, 0.020, 2.048576e-5, 0},
                                      {0.010, 0.020, 4.3554432e-4, 2.048576e-5},
                                      {0.024, 0.048, 0, 4.3554432e-4}};
  const PipelineResult pipe = simulate_1f1b(hand, 4);
  const std::vector<double> reduce{5.2348032e-4, 5.2348032e-4, 0};
  double step = 0;
  for (int s = 0; s < 3; ++s) step = std::max(step, pipe.stage_end_s[s] + reduce[s]);
  CHECK(e.pipeline_time_s == Approx(pipe.pipeline_s).epsilon(1e-9));
  CHECK(e.step_time_s == Approx(step).epsilon(1e-9));
}

TEST_CASE("per-stage tp: uniform stage_tp is the plain plan, exactly", "[analytic][stage-tp]") {
  PresetSpecs l("llama2-13b", "mixed-h100-a100-l4");
  ProfileSpec h100 = analytic_profile(l.model, l.cluster.node_types[0], {2}, {1, 2});
  ProfileSpec a100 = analytic_profile(l.model, l.cluster.node_types[1], {2}, {1, 2});
  ProfileSpec l4 = analytic_profile(l.model, l.cluster.node_types[2], {2}, {1, 2});
  AnalyticPolicy policy;
  for (bool per_stage_dp : {false, true}) {
    PlanKey plain{.mbs = 1, .tp = 2, .dp = per_stage_dp ? 16 : 8, .pp = per_stage_dp ? 5 : 6, .node_order = type_block_placements(l.cluster)[5]};
    if (per_stage_dp) plain.stage_dp = {16, 8, 8, 8, 8};
    plain.zero_stage = 1;
    PlanKey uniform = plain;
    uniform.stage_tp.assign(plain.pp, 2);
    const PlanContext a = make_plan_context(l.model, l.cluster, {&h100, &a100, &l4}, policy, plain);
    const PlanContext b = make_plan_context(l.model, l.cluster, {&h100, &a100, &l4}, policy, uniform);
    const std::vector<int> partition = exact_fitting_partition(a).partition;
    const PlanEstimate x = estimate_plan(a, policy, partition), y = estimate_plan(b, policy, partition);
    check_same_estimate(x, y);
    CHECK(b.boundary_send_s == a.boundary_send_s);
    CHECK(exact_fitting_partition(b).partition == partition);
  }
}

TEST_CASE("per-stage tp: bad degrees are one-line errors", "[analytic][stage-tp]") {
  const ModelSpec model = tiny_model();
  const ClusterSpec cluster = tiny_cluster();
  auto error_of = [&](const PlanKey& key) { return spec_error([&] { validate_plan_key(model, cluster, key); }); };
  PlanKey key{.mbs = 1, .tp = 4, .dp = 2, .pp = 3, .node_order = {0, 1}};
  key.stage_dp = {2, 2, 1};
  key.stage_tp = {1, 4};  // two entries, three stages
  std::string error = error_of(key);
  CHECK_THAT(error, Contains("--stage-tp") && Contains("pp is 3"));
  CHECK(error.find('\n') == std::string::npos);
  // tp 8 on a node of 4 GPUs (8 GPUs in all, 8 divides the 16 heads).
  PlanKey wide{.mbs = 1, .tp = 8, .dp = 1, .pp = 1, .node_order = {0, 1}};
  wide.stage_tp = {8};
  error = error_of(wide);
  CHECK_THAT(error, Contains("--stage-tp") && Contains("does not divide the 4 GPUs"));
  CHECK(error.find('\n') == std::string::npos);
  // Too few GPUs: 1 x 2 + 1 x 2 + 2 x 1 = 6 of 8.
  key.stage_tp = {1, 1, 2};
  key.tp = 2;
  CHECK_THAT(error_of(key), Contains("--stage-tp") && Contains("6 GPUs"));
  // tp not the largest.
  key.stage_tp = {1, 1, 4};
  key.tp = 2;
  CHECK_THAT(error_of(key), Contains("--tp") && Contains("largest"));
  // One node type, two tps: stages 0 (tp 1 x 2) and 1 (tp 2 x 1) both on the fast node.
  PlanKey mixed{.mbs = 1, .tp = 4, .dp = 2, .pp = 3, .node_order = {0, 1}};
  mixed.stage_dp = {2, 1, 1};
  mixed.stage_tp = {1, 2, 4};
  CHECK_THAT(error_of(mixed), Contains("both run on 'fast' nodes") && Contains("one tp"));
  // A tp group of 2 starting at GPU 1 of a node.
  PlanKey straddle{.mbs = 1, .tp = 4, .dp = 1, .pp = 4, .node_order = {0, 1}};
  straddle.stage_tp = {1, 2, 1, 4};
  CHECK_THAT(error_of(straddle), Contains("straddle"));
  // The fasop policy prices one tp.
  key.tp = 4;
  FasopPolicy fasop;
  const ProfileSpec ga = tiny_profile("GA"), gb = tiny_profile("GB");
  CHECK_THROWS_WITH(make_plan_context(model, cluster, {&ga, &gb}, fasop, key), Contains("--policy analytic"));
}

TEST_CASE("per-stage tp: Megatron-LM and DeepSpeed refuse it, naming themselves", "[emit][stage-tp]") {
  ModelSpec model = fasop::testing::preset_model("gpt2xl");
  PlanFile plan = fasop::testing::layout_plan(2, 2, 2, 3, 64, {18, 15, 17}, 1, false);
  plan.key.stage_tp = {1, 2, 2};
  CHECK_THROWS_WITH(megatron_args(plan, model, MegatronFlavor::kUpstream), Contains("Megatron-LM") && Contains("stage_tp"));
  CHECK_THROWS_WITH(deepspeed_config_json(plan, model), Contains("DeepSpeed") && Contains("stage_tp"));
  plan.key.stage_tp = {2, 2, 2};  // uniform: runs as the plain plan
  CHECK_NOTHROW(deepspeed_config_json(plan, model));
}

TEST_CASE("per-stage tp: the search tries a tp per node type and does at least as well", "[analytic][stage-tp][search]") {
  // One A100-40GB and one V100-16GB node of Sailor's cluster (4 GPUs each), OPT-350M.
  PresetSpecs l("opt-350m", "sailor-budget");
  const ClusterSpec cluster = shape_cluster(l.cluster, {1, 0, 1, 0});
  std::vector<ProfileSpec> profiles;
  profiles.reserve(cluster.node_types.size());
  SearchInput input;
  for (const NodeType& type : cluster.node_types) {
    profiles.push_back(analytic_profile(l.model, type, {1, 2, 4}, {1, 2, 4, 8, 16}));
    input.profiles.push_back(&profiles.back());
  }
  AnalyticPolicy policy;
  input.model = &l.model;
  input.cluster = &cluster;
  input.policy = &policy;
  input.space = SearchSpaceOptions::beyond_fasop();
  input.space.zero_stages = {0};
  input.space.recompute = {RecomputeMode::kNone};
  input.memory_aware = true;
  input.refine_top = 3;
  const std::vector<CandidateResult> plain = run_search(input);
  input.space.per_stage_tp = true;
  const std::vector<CandidateResult> per_type = run_search(input);
  REQUIRE_FALSE(plain.empty());
  REQUIRE(per_type.size() > plain.size());
  size_t with_stage_tp = 0;
  for (const CandidateResult& r : per_type) {
    if (r.plan.key.stage_tp.empty()) continue;
    ++with_stage_tp;
    // Every block's stages share its tp; all 8 GPUs are used.
    int gpus = 0;
    for (int s = 0; s < r.plan.key.pp; ++s) gpus += r.plan.key.stage_tp[s] * r.plan.key.dp;
    CHECK(gpus == 8);
  }
  CHECK(with_stage_tp > 0);
  CHECK_FALSE(per_type.front().estimate.memory.is_oom);
  CHECK(per_type.front().estimate.step_time_s <= plain.front().estimate.step_time_s);
}

TEST_CASE("per-stage tp and uneven dp: plan files write and read them", "[plan][stage-tp][uneven-dp]") {
  PlanFile plan = fasop::testing::layout_plan(1, 4, 2, 3, 7, {1, 1, 2}, 0, false);
  plan.model = "tiny";
  plan.cluster = "tiny-two-types";
  plan.policy = "analytic";
  plan.nodes = {{"fast", 1}, {"slow", 1}};
  plan.key.stage_dp = {2, 2, 1};
  plan.key.stage_tp = {1, 1, 4};
  plan.key.uneven_dp = true;
  plan.node_order = {"fast", "slow"};
  plan.stages = {{0, 1, "fast", "GA", 2, 0.03, 1.26}, {1, 1, "fast", "GA", 2, 0.03, 1.24},
                 {2, 2, "slow", "GB", 1, 0.072, 1.14}};
  plan.estimate.iterations = 1000;
  const std::string yaml = plan_file_yaml(plan);
  CHECK_THAT(yaml, Contains("stage_tp: [1, 1, 4]\n") && Contains("uneven_dp: true"));
  const PlanFile back = parse_plan_file(yaml, "p.yaml");
  CHECK(back.key.stage_tp == std::vector<int>{1, 1, 4});
  CHECK(back.key.uneven_dp);
  // Without them, the file has neither line (plans without them stay as they were).
  plan.key.stage_tp.clear();
  plan.key.uneven_dp = false;
  CHECK(plan_file_yaml(plan).find("stage_tp") == std::string::npos);
  CHECK(plan_file_yaml(plan).find("uneven_dp") == std::string::npos);
  std::string wrong = yaml;
  wrong.replace(wrong.find("stage_tp: [1, 1, 4]"), 19, "stage_tp: [1, 4]");
  CHECK_THROWS_WITH(parse_plan_file(wrong, "p.yaml"), Contains("stage_tp") && Contains("pp is 3"));
}
