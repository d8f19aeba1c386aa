// NVLink domains (GB200 / GB300 NVL72 racks): the segments a job's nodes fill, the links inside
// and between domains, and the loader's and the Slurm script's part, against numbers by hand.
#include <catch2/catch.hpp>

#include <string>

#include "costmodel/analytic_policy.h"
#include "costmodel/make_context.h"
#include "emit_fixtures.h"
#include "launch/launch_layout.h"
#include "launch/slurm_script.h"
#include "profiles/analytic_profile.h"
#include "specs/nvlink_domain.h"
#include "specs/spec_loader.h"
#include "test_support.h"

using namespace fasop;
using Catch::Matchers::Contains;
using fasop::testing::layout_plan;
using fasop::testing::made_up_node;
using fasop::testing::spec_error;
using fasop::testing::tiny_model;

namespace {

// The model: tiny_model (test_support.h), 4 layers, 48,016,000 parameters, 1e6 bytes of
// activations a sample at a stage boundary.

/// Four one-GPU trays: NVLink 1e12 bit/s at 5 us, the network 1e11 bit/s a tray at 10 us, both
/// at their full bandwidth; `domain` trays to an NVLink domain ("" for none).
ClusterSpec trays(const std::string& domain) {
  return parse_cluster(
      "name: trays\nnode_types:\n"
      "  - {name: tray, gpu: TestGPU, gpus_per_node: 1, gpu_memory_gib: 80, peak_tflops: {bf16: 100},\n"
      "     memory_bandwidth_bytes_per_s: 1.0e12, intra_node_bandwidth_bits_per_s: 1.0e12,\n"
      "     inter_node_bandwidth_bits_per_s: 100.0e9, intra_node_latency_s: 5.0e-6, inter_node_latency_s: 1.0e-5,\n"
      "     intra_node_collective_efficiency: 1.0, inter_node_collective_efficiency: 1.0, price_usd_per_hour: 1" +
          (domain.empty() ? "" : ", nvlink_domain_nodes: " + domain) +
          ", slurm: {partition: nvl72}}\n"
          "nodes:\n  - {type: tray, count: 4}\n",
      "trays.yaml");
}

PlanContext context(const ClusterSpec& cluster, const CostPolicy& policy, PlanKey key) {
  static const ModelSpec model = tiny_model();
  return make_plan_context(model, cluster, NodeTypeProfiles(cluster.node_types.size(), nullptr), policy, key);
}

}  // namespace

TEST_CASE("nvlink domains: a job's nodes fill equal segments of a domain", "[nvlink]") {
  // Megatron-Bridge's GB200 launcher: 32 trays of 18-tray racks -> --segment 16; 64 -> 16.
  CHECK(nvlink_segment_nodes(18, 32) == 16);
  CHECK(nvlink_segment_nodes(18, 64) == 16);
  CHECK(nvlink_segment_nodes(18, 16) == 16);  // fits in one rack
  CHECK(nvlink_segment_nodes(18, 18) == 18);
  CHECK(nvlink_segment_nodes(18, 20) == 10);
  CHECK(nvlink_segment_nodes(18, 19) == 1);  // a prime: no equal split, every tray alone
  CHECK(nvlink_segment_nodes(1, 64) == 1);   // no domain

  // Two types: a (domains of 4) and b (none). 6 nodes of a -> segments of 3; b's node its own.
  const ClusterSpec cluster = parse_cluster(
      "name: two\nnode_types:\n"
      "  - {name: a, gpu: A100, gpus_per_node: 4, gpu_memory_gib: 80, intra_node_bandwidth_bits_per_s: 1e12,\n"
      "     inter_node_bandwidth_bits_per_s: 1e11, price_usd_per_hour: 1, nvlink_domain_nodes: 4}\n"
      "  - {name: b, gpu: A100, gpus_per_node: 4, gpu_memory_gib: 80, intra_node_bandwidth_bits_per_s: 1e12,\n"
      "     inter_node_bandwidth_bits_per_s: 1e11, price_usd_per_hour: 1}\n"
      "nodes: [{type: a, count: 6}, {type: b, count: 1}]\n",
      "two.yaml");
  CHECK(nvlink_domains(cluster, {0, 0, 1, 0, 0, 0, 0}) == std::vector<int>{0, 0, 2, 0, 1, 1, 1});
  CHECK(nvlink_domains(cluster, {1}).empty());  // no node of a type with domains: no domains
}

TEST_CASE("nvlink domains: a pipeline send inside a domain runs on NVLink, between domains on the network", "[nvlink]") {
  AnalyticPolicy policy;
  const PlanKey key{.mbs = 1, .tp = 1, .dp = 1, .pp = 4, .node_order = {0, 0, 0, 0}};  // mbs 1, tp 1, dp 1, pp 4 over the 4 trays
  // One sample's activations, 1e6 bytes. NVLink: 5 us + 8e6 / 1e12 s = 13 us. The network:
  // 10 us + 8e6 / 1e11 s = 90 us.
  const PlanContext flat = context(trays(""), policy, key);
  CHECK(flat.boundary_send_s == std::vector<double>{9e-5, 9e-5, 9e-5});
  // Domains of 2 trays: trays 0-1 and 2-3; only boundary 1 crosses between them.
  const PlanContext racks = context(trays("2"), policy, key);
  REQUIRE(racks.boundary_send_s.size() == 3);
  CHECK(racks.boundary_send_s[0] == Approx(1.3e-5).epsilon(1e-12));
  CHECK(racks.boundary_send_s[1] == Approx(9e-5).epsilon(1e-12));
  CHECK(racks.boundary_send_s[2] == Approx(1.3e-5).epsilon(1e-12));
  // Domains of 3 trays: 4 trays split 2 + 2 (the segment rule), as with 2.
  CHECK(context(trays("3"), policy, key).boundary_send_s == racks.boundary_send_s);
  // One domain of 4: every send on NVLink.
  for (double s : context(trays("4"), policy, key).boundary_send_s) CHECK(s == Approx(1.3e-5).epsilon(1e-12));
}

TEST_CASE("nvlink domains: a data-parallel ring across domains uses every NIC of a domain", "[nvlink]") {
  AnalyticOptions options;
  options.execution.overlap_grad_reduce = false;
  AnalyticPolicy policy(options);
  const PlanKey key{.mbs = 1, .tp = 1, .dp = 4, .pp = 1, .node_order = {0, 0, 0, 0}};  // mbs 1, tp 1, dp 4, pp 1: 2 micro-batches
  // The gradients, B = 48,016,000 x 4 bytes = 192,064,000; a ring all-reduce over 4 ranks:
  // 6 latencies + 2 x 3/4 x 8 B / bandwidth.
  const double B = 192'064'000;
  // No domains: the network, 1e11 bit/s and 10 us: 60 us + 1.5 x 8 B / 1e11 s.
  CHECK(policy.stage_syncs(context(trays(""), policy, key), {4})[0].reduce_s ==
        Approx(6e-5 + 1.5 * 8 * B / 1e11).epsilon(1e-12));
  // Two domains of 2 trays: the ring's crossings between them spread over both trays' NICs of a
  // domain, 2 x 1e11 bit/s (below NVLink's 1e12): 60 us + 1.5 x 8 B / 2e11 s = 11.58384 ms.
  CHECK(policy.stage_syncs(context(trays("2"), policy, key), {4})[0].reduce_s ==
        Approx(6e-5 + 1.5 * 8 * B / 2e11).epsilon(1e-12));
  CHECK(policy.stage_syncs(context(trays("2"), policy, key), {4})[0].reduce_s == Approx(0.01158384).epsilon(1e-12));
  // One domain: NVLink, 1e12 bit/s and 5 us: 30 us + 1.5 x 8 B / 1e12 s.
  CHECK(policy.stage_syncs(context(trays("4"), policy, key), {4})[0].reduce_s ==
        Approx(3e-5 + 1.5 * 8 * B / 1e12).epsilon(1e-12));
}

TEST_CASE("nvlink domains: an all-to-all inside a domain runs on the GPU's NVLink ports", "[nvlink][moe]") {
  // 16 MiB into an all-to-all (a made-up pass); the made-up node: 8 GPUs, NVLink 1e12 bit/s at
  // 1 us, the network 8e11 bit/s a node (1e11 a GPU) at 10 us.
  PassWork work;
  work.ep_dispatch = {.count = 1, .token_bytes = 8388608.0, .moe = {.experts = 64, .top_k = 2}};
  NodeType node = made_up_node();
  // ep 16 on nodes of their own: 7 peers on NVLink, 8 across the network (1 MiB each): the
  // network's 10 us + 8 MiB x 8 / 1e11 s.
  CHECK(ep_comm_s(work, 16, 1, node) == Approx(1e-5 + 8 * 1048576.0 * 8 / 1e11).epsilon(1e-12));
  // In a domain of 2 nodes all 15 peers are on NVLink: 1 us + 15 MiB x 8 / 1e12 s.
  node.nvlink_domain_nodes = 2;
  CHECK(node.nvlink_gpus() == 16);
  CHECK(ep_comm_s(work, 16, 1, node) == Approx(1e-6 + 15 * 1048576.0 * 8 / 1e12).epsilon(1e-12));
  // ep 32 spans two domains: 15 peers on NVLink (0.5 MiB each), 16 across the network: the
  // network's 8 MiB x 8 / 1e11 s dominates, with its 10 us.
  CHECK(ep_comm_s(work, 32, 1, node) == Approx(1e-5 + 16 * 524288.0 * 8 / 1e11).epsilon(1e-12));
}

TEST_CASE("nvlink domains: the loader's error, and the Slurm script asks for the segments", "[nvlink][launch]") {
  const std::string bad = spec_error([] { trays("0"); });
  CHECK_THAT(bad, Contains("trays.yaml") && Contains("nvlink_domain_nodes"));
  CHECK(bad.find('\n') == std::string::npos);

  const ClusterSpec cluster = trays("2");
  PlanFile plan = layout_plan(1, 1, 1, 4, 8, {1, 1, 1, 1}, 0, false);
  plan.node_order = {"tray", "tray", "tray", "tray"};
  plan.source = "plan.yaml";
  LaunchSettings settings{"/work/plans/plan.yaml", "/work", "true", 29500, {}, {}};
  const std::string script =
      slurm_batch_script(plan, cluster, make_launch_layout(plan, cluster), settings, "/work/runs", "job", SlurmOptions{});
  CHECK_THAT(script, Contains("#SBATCH --partition=nvl72 --nodes=4 --ntasks-per-node=1 --gpus-per-node=1 --segment=2\n"));
  CHECK_THAT(slurm_batch_script(plan, trays(""), make_launch_layout(plan, trays("")), settings, "/work/runs", "job",
                                SlurmOptions{}),
             !Contains("--segment"));
}
