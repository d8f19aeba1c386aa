// FASOP's communication and memory formulas against numbers worked out by hand.
#include <catch2/catch.hpp>

#include "costmodel/estimate.h"
#include "test_support.h"

using namespace fasop;
using fasop::testing::Presets;

TEST_CASE("point-to-point sends: intra-node /3.5, inter-node /dp/tp/1.05", "[fasop][p2p]") {
  Presets p("gpt2xl", "fasop-8nodes");
  // tp 1, dp 2, pp 16: a stage is 2 GPUs, so stages 0 and 1 share node 0, stage 2 is on node 1.
  PlanContext ctx = p.context(1, 1, 2, 16);
  const double bits = 1.0 * 1024 * 1600 * 16;  // mbs x sequence x hidden x fp16
  REQUIRE(ctx.boundary_send_s.size() == 15);
  CHECK(ctx.boundary_send_s[0] == Approx(bits / (128e9 / 3.5)));             // 7.168e-4 s
  CHECK(ctx.boundary_send_s[1] == Approx(bits / (40e9 / 2 / 1 / 1.05)));     // 1.376256e-3 s
  CHECK(ctx.boundary_send_s[1] == Approx(1.376256e-3));
}

TEST_CASE("DP all-reduce moves stage 0's parameters: 2(dp-1)/dp x bits / bandwidth", "[fasop][allreduce]") {
  Presets p("gpt2xl", "fasop-8nodes");
  PlanContext ctx = p.context(1, 1, 2, 16);
  std::vector<int> partition = {4, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 4};
  // Stage 0: embedding (h x v, not divided by tp) + 3 layers of 12h^2 + 20800.
  double params = 1600.0 * 50257 + 3 * (12.0 * 1600 * 1600 + 20800);
  CHECK(params == 172633600.0);
  // Replicas 0 and 1 of stage 0 share node 0: the intra-node 128 Gbit/s, no sharing divisor.
  double expected = 2.0 * (2 - 1) * params * 16 / (2 * 128e9);
  std::vector<double> costs = p.policy.dp_allreduce_s(ctx, partition);
  REQUIRE(costs.size() == 16);
  for (double c : costs) CHECK(c == Approx(expected));
  CHECK(expected == Approx(0.0215792004019022));  // FASOP's gpt2.csv, same layout
}

TEST_CASE("embedding all-reduce between the first and last stage", "[fasop][allreduce]") {
  Presets p("gpt2xl", "fasop-8nodes");
  // Last replica: rank 1 (node 0) and rank 31 (node 7): 40 Gbit/s shared by min(dp, 4) = 2.
  CHECK(p.policy.embedding_allreduce_s(p.context(1, 1, 2, 16)) == Approx(1600.0 * 50257 * 16 / 20e9));
  // No pipeline, nothing to tie; T5 has no tied output head.
  CHECK(p.policy.embedding_allreduce_s(p.context(1, 1, 32, 1)) == 0.0);
  Presets t5("t5", "fasop-8nodes");
  CHECK(t5.policy.embedding_allreduce_s(t5.context(1, 1, 2, 16)) == 0.0);
}

TEST_CASE("stage memory: 18 bytes a parameter, activations for min(pp, m) micro-batches", "[fasop][memory]") {
  Presets p("bert", "fasop-bert");
  // mbs 4, dp 4, pp 4: m = 256 / 16 = 16 micro-batches, 4 in flight.
  PlanContext ctx = p.context(4, 1, 4, 4);
  std::vector<StageMemory> mem = p.policy.stage_memory(ctx, {7, 6, 6, 7});
  const double gib = 1024.0 * 1024 * 1024;
  // Stage 0: embedding (h v params; s b h pp p activations) + 6 layers
  // (12 h^2 params; s b p h (10 + 24/tp + 5 a s / (h tp)) activations).
  double params = 1024.0 * 30522 + 6 * 12.0 * 1024 * 1024;
  double act = 512.0 * 4 * 1024 * 4 * 4 + 6 * (512.0 * 4 * 4 * 1024 * (10 + 24 + 5.0 * 16 * 512 / 1024));
  CHECK(params == 106752000.0);
  CHECK(act == 3758096384.0);
  CHECK(mem[0].gib == Approx((18 * params + act) / gib));           // 5.2896 GiB
  CHECK(mem[0].zero_gib == Approx(((6 + 12 / 4) * params + act) / gib));
  // Stage 3: 6 layers + LM head (h v params; 4 s b h + 4 s b v activations).
  double act3 = 6 * (512.0 * 4 * 4 * 1024 * 74) + 4 * 512.0 * 4 * 1024 + 4 * 512.0 * 4 * 30522;
  CHECK(mem[3].gib == Approx((18 * params + act3) / gib));
  CHECK(mem[3].gib == Approx(5.4990).epsilon(1e-4));  // FASOP's bert.csv, same plan
  CHECK(mem[0].limit_gib == 22.20);
}

TEST_CASE("OOM verdict: 1.10 margin without ZeRO, none with it", "[fasop][memory]") {
  FasopPolicy policy;
  // 21 GiB fits 22.2 with ZeRO but not with the margin (23.1 > 22.2).
  MemoryVerdict v = policy.memory_verdict({{10, 8, 22.2}, {21, 20.5, 22.2}});
  CHECK(v.is_oom);
  CHECK(v.oom_gpumem_gib == Approx(21 * 1.10));
  CHECK_FALSE(v.is_zero_oom);
  CHECK(v.zero_oom_gpumem_gib == Approx(20.5));
  MemoryVerdict fits = policy.memory_verdict({{10, 8, 22.2}, {12, 9, 22.2}});
  CHECK_FALSE(fits.is_oom);
  CHECK(fits.oom_gpumem_gib == 12);
}

TEST_CASE("a stage runs at the pace of its slowest node type", "[fasop][placement]") {
  Presets p("gpt2xl", "fasop-8nodes-heterogeneous");  // node 0 is A100, nodes 1-7 A10
  PlanContext pp8 = p.context(1, 1, 4, 8);             // one node a stage
  CHECK(p.cluster.node_types[pp8.stage_node_type[0]].gpu == "A100");
  CHECK(p.cluster.node_types[pp8.stage_node_type[1]].gpu == "A10");
  PlanContext pp2 = p.context(1, 1, 16, 2);            // four nodes a stage: stage 0 holds an A10
  CHECK(p.cluster.node_types[pp2.stage_node_type[0]].gpu == "A10");
  PlanContext pp16 = p.context(1, 1, 2, 16);           // two stages a node
  CHECK(p.cluster.node_types[pp16.stage_node_type[1]].gpu == "A100");
  CHECK(p.cluster.node_types[pp16.stage_node_type[2]].gpu == "A10");
}

TEST_CASE("price: node-hours of the whole cluster", "[fasop][price]") {
  Presets p("gpt2xl", "fasop-8nodes-heterogeneous");
  PlanContext ctx = p.context(1, 1, 2, 16);
  CHECK(price_per_second_usd(ctx) == Approx((32.7726 + 7 * 8.144) / 3600));
}
