// Zones (Sailor-style multi-zone clusters): links between zones, their egress price, and the
// loader's checks, against numbers worked out by hand.
#include <catch2/catch.hpp>

#include <string>

#include "costmodel/analytic_policy.h"
#include "costmodel/egress_floor.h"
#include "costmodel/estimate.h"
#include "costmodel/fasop_policy.h"
#include "costmodel/make_context.h"
#include "costmodel/zone_egress.h"
#include "profiles/analytic_profile.h"
#include "search/cluster_shapes.h"
#include "specs/spec_error.h"
#include "specs/spec_loader.h"
#include "test_support.h"

using namespace fasop;
using Catch::Matchers::Contains;
using fasop::testing::tiny_model;

namespace {

// The model: tiny_model (test_support.h), 4 layers, 48,016,000 parameters, 1e6 bytes of
// activations a sample at a stage boundary.

/// A node type of `gpus` GPUs in zone `zone` ("" for none): 100 Gbit/s and 10 us between nodes,
/// $3.6 an hour; collectives at the full bandwidth.
std::string node_type(const std::string& name, const std::string& zone, int gpus = 1) {
  return "  - {name: " + name + ", gpu: TestGPU, gpus_per_node: " + std::to_string(gpus) +
         ", gpu_memory_gib: 80, peak_tflops: {bf16: 100}, memory_bandwidth_bytes_per_s: 1.0e12, "
         "intra_node_bandwidth_bits_per_s: 1.0e12, inter_node_bandwidth_bits_per_s: 100.0e9, "
         "inter_node_latency_s: 1.0e-5, inter_node_collective_efficiency: 1.0, price_usd_per_hour: 3.6" +
         (zone.empty() ? "" : ", zone: " + zone) + "}\n";
}

// Between zones: 10 Gbit/s per node, 1 ms, $0.01 per GB.
const char* kZones =
    "zones:\n  inter_zone_bandwidth_bits_per_s: 10.0e9\n  inter_zone_latency_s: 1.0e-3\n  egress_usd_per_gb: 0.01\n";

/// Nodes a and b, one of each, in zones `za` and `zb`, with kZones where the zones differ.
ClusterSpec two_nodes(const std::string& za, const std::string& zb, int gpus = 1) {
  const std::string yaml = "name: two-zones\nnode_types:\n" + node_type("na", za, gpus) + node_type("nb", zb, gpus) +
                           (za != zb ? kZones : "") + "nodes:\n  - {type: na, count: 1}\n  - {type: nb, count: 1}\n";
  return parse_cluster(yaml, "two-zones.yaml");
}

PlanContext context(const ModelSpec& model, const ClusterSpec& cluster, const CostPolicy& policy, PlanKey key) {
  return make_plan_context(model, cluster, NodeTypeProfiles(cluster.node_types.size(), nullptr), policy, key);
}

std::string error_of(const std::string& yaml) {
  try {
    parse_cluster(yaml, "c.yaml");
  } catch (const SpecError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("zones: a pipeline send between zones, its time and its egress by hand", "[zones]") {
  const ModelSpec model = tiny_model();
  const ClusterSpec zoned = two_nodes("a", "b"), plain = two_nodes("", "");
  CHECK(zoned.multi_zone());
  CHECK_FALSE(plain.multi_zone());
  AnalyticPolicy policy;
  const PlanKey key{.mbs = 1, .tp = 1, .dp = 1, .pp = 2, .node_order = {0, 1}};  // mbs 1, tp 1, dp 1, pp 2: 8 micro-batches
  const PlanContext ctx = context(model, zoned, policy, key), flat = context(model, plain, policy, key);
  // One micro-batch's activations, 1e6 bytes, from node a to node b. In one zone: 10 us +
  // 8e6 bit / 100e9 bit/s = 90 us. Between zones: min(100e9, 10e9) = 10e9 bit/s and max(10 us,
  // 1 ms) = 1 ms: 1 ms + 8e6 / 10e9 s = 1.8 ms.
  REQUIRE(flat.boundary_send_s.size() == 1);
  CHECK(flat.boundary_send_s[0] == Approx(9e-5).epsilon(1e-12));
  CHECK(ctx.boundary_send_s[0] == Approx(1.8e-3).epsilon(1e-12));
  // Egress: 8 micro-batches x (activations forward + gradients backward) x 1e6 bytes = 16e6
  // bytes a step leave a zone: x $0.01 / 1e9 = $1.6e-4 a step.
  const std::vector<ZoneTraffic> traffic = zone_traffic(ctx, {2, 2});
  REQUIRE(traffic.size() == 1);
  CHECK(traffic[0].zone_a == "a");
  CHECK(traffic[0].zone_b == "b");
  CHECK(traffic[0].bytes == Approx(16e6).epsilon(1e-12));
  CHECK(traffic[0].usd == Approx(1.6e-4).epsilon(1e-12));
  CHECK(egress_usd_per_step(ctx, {2, 2}) == Approx(1.6e-4).epsilon(1e-12));
  CHECK(egress_usd_per_step(flat, {2, 2}) == 0);
  CHECK(zone_traffic(flat, {2, 2}).empty());

  // The estimate adds the egress to the nodes' price (2 nodes x $3.6 / 3600 s = $0.002 a second).
  const ProfileSpec profile = analytic_profile(model, zoned.node_types[0], {1}, {1});
  const PlanContext timed = make_plan_context(model, zoned, {&profile, &profile}, policy, key);
  const PlanEstimate e = estimate_plan(timed, policy, {2, 2}, 1000);
  CHECK(e.egress_usd_per_step == Approx(1.6e-4).epsilon(1e-12));
  CHECK(e.node_price_per_step_usd == Approx(0.002 * e.step_time_s).epsilon(1e-12));
  CHECK(e.price_per_step_usd == e.node_price_per_step_usd + e.egress_usd_per_step);
  CHECK(e.train_cost_usd == Approx(1000 * e.price_per_step_usd).epsilon(1e-12));
  // The nodes' price x the step time stays a lower bound of the step's price.
  CHECK(price_per_second_usd(timed) * e.step_time_s <= e.price_per_step_usd);
  // In one zone the price is the nodes' alone.
  const PlanContext timed_flat = make_plan_context(model, plain, {&profile, &profile}, policy, key);
  const PlanEstimate f = estimate_plan(timed_flat, policy, {2, 2}, 1000);
  CHECK(f.egress_usd_per_step == 0);
  CHECK(f.price_per_step_usd == price_per_second_usd(timed_flat) * f.step_time_s);
  CHECK(f.step_time_s < e.step_time_s);
  // FASOP's policy ignores zones.
  CHECK(FasopPolicy().egress_usd_per_step(timed, {2, 2}) == 0);
}

TEST_CASE("zones: a node's GPUs share its link between zones", "[zones]") {
  // Two GPUs a node, tp 2, pp 2: each tp rank sends half the activations, 5e5 bytes, and the
  // two ranks of a node share its links: min(100e9, 10e9) / 2 = 5e9 bit/s each, 1 ms + 8 x 5e5
  // / 5e9 s = 1.8 ms. Egress: 2 ranks x 2 directions x 8 micro-batches x 5e5 = 16e6 bytes, $1.6e-4.
  const ModelSpec model = tiny_model();
  const ClusterSpec zoned = two_nodes("a", "b", 2);
  AnalyticPolicy policy;
  const PlanContext ctx = context(model, zoned, policy, PlanKey{.mbs = 1, .tp = 2, .dp = 1, .pp = 2, .node_order = {0, 1}});
  CHECK(ctx.boundary_send_s[0] == Approx(1.8e-3).epsilon(1e-12));
  CHECK(egress_usd_per_step(ctx, {2, 2}) == Approx(1.6e-4).epsilon(1e-12));
}

TEST_CASE("zones: a data-parallel ring across zones, its time and its egress by hand", "[zones]") {
  const ModelSpec model = tiny_model();
  const ClusterSpec zoned = two_nodes("a", "b");
  // One bucket, no overlap: the ring's whole time is its reduce.
  AnalyticOptions options;
  options.execution.overlap_grad_reduce = false;
  AnalyticPolicy policy(options);
  PlanKey key{.mbs = 1, .tp = 1, .dp = 2, .pp = 1, .node_order = {0, 1}};  // mbs 1, tp 1, dp 2, pp 1: 4 micro-batches
  const PlanContext ctx = context(model, zoned, policy, key);
  // The gradients: 48,016,000 parameters x 4 bytes (bf16 training reduces in fp32) = B =
  // 192,064,000 bytes. A ring all-reduce over d = 2 ranks at the zones' 10e9 bit/s and 1 ms:
  // 2 (d - 1) x 1 ms + 2 (d - 1) / d x 8 B / 10e9 = 2 ms + 153.6512 ms = 155.6512 ms.
  const double B = 192'064'000;
  CHECK(policy.stage_syncs(ctx, {4})[0].reduce_s == Approx(2e-3 + 8 * B / 10e9).epsilon(1e-12));
  CHECK(policy.stage_syncs(ctx, {4})[0].reduce_s == Approx(0.1556512).epsilon(1e-12));
  // Egress: the ring's two edges (a -> b and b -> a) each carry 2 (d - 1) / d x B = B:
  // 2 B = 384,128,000 bytes, x $0.01 / 1e9 = $3.84128e-3 a step.
  CHECK(egress_usd_per_step(ctx, {4}) == Approx(3.84128e-3).epsilon(1e-12));
  // ZeRO 1: a reduce-scatter of the gradients (4 bytes) and an all-gather of the bf16
  // parameters (2 bytes), each edge (d - 1) / d x 48,016,000 x 6 = 144,048,000 bytes: 288,096,000
  // bytes, $2.88096e-3.
  key.zero_stage = 1;
  CHECK(egress_usd_per_step(context(model, zoned, policy, key), {4}) == Approx(2.88096e-3).epsilon(1e-12));
  // ZeRO 3: every micro-batch (4) gathers the parameters twice and reduce-scatters the
  // gradients, each edge 4 x (d - 1) / d x 48,016,000 x (2 + 2 + 4) = 768,256,000 bytes:
  // 1,536,512,000 bytes, $1.536512e-2.
  key.zero_stage = 3;
  CHECK(egress_usd_per_step(context(model, zoned, policy, key), {4}) == Approx(1.536512e-2).epsilon(1e-12));
}

TEST_CASE("zones: a ring crosses zones at every edge between two of them", "[zones]") {
  // dp 4 over four 1-GPU nodes, two in zone a and two in b; 2 micro-batches, ZeRO 0. Each ring
  // edge carries 2 (d - 1) / d x B = 1.5 x 192,064,000 = 288,096,000 bytes. Grouped by zone
  // (a a b b), 2 edges join the zones (a -> b, and b -> a closing the ring): 576,192,000 bytes,
  // $5.76192e-3. Alternating (a b a b), all 4 edges do: $1.152384e-2.
  const ModelSpec model = tiny_model();
  const std::string yaml = "name: four\nnode_types:\n" + node_type("na", "a") + node_type("nb", "b") + kZones +
                           "nodes:\n  - {type: na, count: 2}\n  - {type: nb, count: 2}\n";
  const ClusterSpec cluster = parse_cluster(yaml, "four.yaml");
  AnalyticPolicy policy;
  CHECK(egress_usd_per_step(context(model, cluster, policy, PlanKey{.mbs = 1, .tp = 1, .dp = 4, .pp = 1, .node_order = {0, 0, 1, 1}}), {4}) ==
        Approx(5.76192e-3).epsilon(1e-12));
  CHECK(egress_usd_per_step(context(model, cluster, policy, PlanKey{.mbs = 1, .tp = 1, .dp = 4, .pp = 1, .node_order = {0, 1, 0, 1}}), {4}) ==
        Approx(1.152384e-2).epsilon(1e-12));
  // The ring runs at its slowest edge, between zones even where its first and last rank share
  // zone a (a b b a): 2 (d - 1) = 6 steps of 1 ms + 1.5 x 8 B / 10e9.
  AnalyticOptions options;
  options.execution.overlap_grad_reduce = false;
  AnalyticPolicy plain(options);
  const PlanContext ctx = context(model, cluster, plain, PlanKey{.mbs = 1, .tp = 1, .dp = 4, .pp = 1, .node_order = {0, 1, 1, 0}});
  CHECK(plain.stage_syncs(ctx, {4})[0].reduce_s == Approx(6e-3 + 1.5 * 8 * 192'064'000 / 10e9).epsilon(1e-12));
}

TEST_CASE("zones: the egress floor of a layout, from where its ranks sit, by hand", "[zones]") {
  const ModelSpec model = tiny_model();
  const std::string yaml = "name: four\nnode_types:\n" + node_type("na", "a") + node_type("nb", "b") + kZones +
                           "nodes:\n  - {type: na, count: 2}\n  - {type: nb, count: 2}\n";
  const ClusterSpec cluster = parse_cluster(yaml, "four.yaml");
  const EgressFloor floor(model, cluster);
  AnalyticPolicy policy;
  // pp 2, dp 2 over a a b b: the stages sit in one zone each; rank r sends to r + 2, both of
  // stage 0's ranks across: 2 pairs x 4 micro-batches x 2 directions x 1e6 bytes = 16e6 bytes,
  // $1.6e-4. No ring crosses. Exact, as the partition does not move the sends.
  const PlanKey pipeline{.mbs = 1, .tp = 1, .dp = 2, .pp = 2, .node_order = {0, 0, 1, 1}};
  CHECK(floor.usd_per_step(pipeline) == Approx(1.6e-4).epsilon(1e-12));
  CHECK(egress_usd_per_step(context(model, cluster, policy, pipeline), {2, 2}) == Approx(1.6e-4).epsilon(1e-12));
  // Over a b a b each stage's ring crosses at both its edges, and no send does: the rings'
  // least edges a lane (2) x every parameter (48,016,000) x 2 (d - 1) / d x 4 bytes =
  // 384,128,000 bytes, $3.84128e-3, whatever the partition: here 3 + 1 layers.
  const PlanKey rings{.mbs = 1, .tp = 1, .dp = 2, .pp = 2, .node_order = {0, 1, 0, 1}};
  CHECK(floor.usd_per_step(rings) == Approx(3.84128e-3).epsilon(1e-12));
  CHECK(egress_usd_per_step(context(model, cluster, policy, rings), {3, 1}) == Approx(3.84128e-3).epsilon(1e-12));
  // pp 4 over a b a b: three boundaries cross, 1 pair each, 8 micro-batches of 1e6 bytes
  // both ways: 3 x 16e6 = 48e6 bytes, $4.8e-4.
  const PlanKey deep{.mbs = 1, .tp = 1, .dp = 1, .pp = 4, .node_order = {0, 1, 0, 1}};
  CHECK(floor.usd_per_step(deep) == Approx(4.8e-4).epsilon(1e-12));
  CHECK(egress_usd_per_step(context(model, cluster, policy, deep), {1, 1, 1, 1}) == Approx(4.8e-4).epsilon(1e-12));
  // One zone: nothing.
  CHECK(floor.usd_per_step(PlanKey{.mbs = 1, .tp = 1, .dp = 2, .pp = 2, .node_order = {0, 0, 0, 0}}) == 0);
}

TEST_CASE("zones: a pair's override, in either order", "[zones]") {
  // Zones a, b, c; the pair (c, a) at 2 Gbit/s, 2 ms and $0.02 per GB. Placed a, c, b with pp 3:
  // boundary 0 joins a and c: 2 ms + 8e6 / 2e9 s = 6 ms; boundary 1 joins c and b at the default
  // link: 1.8 ms. Each boundary carries 16e6 bytes a step: (a, c) $3.2e-4, (b, c) $1.6e-4.
  const ModelSpec model = tiny_model();
  const std::string yaml = "name: three\nnode_types:\n" + node_type("na", "a") + node_type("nb", "b") +
                           node_type("nc", "c") + kZones +
                           "  pairs:\n    - {zones: [c, a], bandwidth_bits_per_s: 2.0e9, latency_s: 2.0e-3, "
                           "egress_usd_per_gb: 0.02}\n"
                           "nodes:\n  - {type: na, count: 1}\n  - {type: nb, count: 1}\n  - {type: nc, count: 1}\n";
  const ClusterSpec cluster = parse_cluster(yaml, "three.yaml");
  CHECK(cluster.zones.link("a", "c").bandwidth_bits_per_s == 2e9);
  CHECK(cluster.zones.link("c", "a").egress_usd_per_gb == 0.02);
  CHECK(cluster.zones.link("a", "b").latency_s == 1e-3);
  AnalyticPolicy policy;
  const PlanContext ctx = context(model, cluster, policy, PlanKey{.mbs = 1, .tp = 1, .dp = 1, .pp = 3, .node_order = {0, 2, 1}});
  CHECK(ctx.boundary_send_s[0] == Approx(6e-3).epsilon(1e-12));
  CHECK(ctx.boundary_send_s[1] == Approx(1.8e-3).epsilon(1e-12));
  const std::vector<ZoneTraffic> traffic = zone_traffic(ctx, {2, 1, 1});
  REQUIRE(traffic.size() == 2);
  CHECK((traffic[0].zone_a == "a" && traffic[0].zone_b == "c"));
  CHECK(traffic[0].usd == Approx(3.2e-4).epsilon(1e-12));
  CHECK((traffic[1].zone_a == "b" && traffic[1].zone_b == "c"));
  CHECK(traffic[1].usd == Approx(1.6e-4).epsilon(1e-12));
  CHECK(egress_usd_per_step(ctx, {2, 1, 1}) == Approx(4.8e-4).epsilon(1e-12));
  // A shape of the inventory (search --pareto, estimate --nodes) keeps the zones.
  const ClusterSpec shape = shape_cluster(cluster, {1, 0, 1});
  CHECK(shape.zones.given);
  CHECK(shape.zones.link("a", "c").bandwidth_bits_per_s == 2e9);
  CHECK(shape.node_types[2].zone == "c");
  // A pair may give only some fields; the rest are the inter-zone link's.
  const std::string partial = std::string(yaml).replace(yaml.find("latency_s: 2.0e-3, "), 19, "");
  CHECK(parse_cluster(partial, "three.yaml").zones.link("a", "c").latency_s == 1e-3);
}

TEST_CASE("zones: the tied embedding's all-reduce between zones", "[zones]") {
  // Embedding, 2 layers and the head (tied), pp 2 over zones a and b: the first and the last
  // stage exchange the fp32 embedding gradient, 4 x 1000 x 1000 = 4e6 bytes each way: 1 ms +
  // 8 x 4e6 / 10e9 s = 4.2 ms, and 8e6 bytes of egress besides the sends' 16e6: $2.4e-4.
  const std::string yaml =
      "name: tied\nhidden: 1000\nheads: 10\nsequence: 500\nvocab: 1000\ndtype: bf16\nglobal_batch: 8\n"
      "tied_embeddings: true\nlayers:\n  - {type: embedding, role: embedding}\n"
      "  - {type: transformer, role: transformer, repeat: 2}\n  - {type: post_process, role: post_process}\n";
  const ModelSpec model = parse_model(yaml, "tied.yaml");
  AnalyticPolicy policy;
  const ClusterSpec cluster = two_nodes("a", "b");
  const PlanContext ctx = context(model, cluster, policy, PlanKey{.mbs = 1, .tp = 1, .dp = 1, .pp = 2, .node_order = {0, 1}});
  CHECK(policy.embedding_allreduce_s(ctx) == Approx(4.2e-3).epsilon(1e-12));
  CHECK(egress_usd_per_step(ctx, {2, 2}) == Approx(2.4e-4).epsilon(1e-12));
}

TEST_CASE("zones: one zone changes nothing, and a copy that drops the zones is refused", "[zones]") {
  const ModelSpec model = tiny_model();
  AnalyticOptions options;
  options.execution.overlap_grad_reduce = false;
  AnalyticPolicy policy(options);
  // Both node types in zone a: sends and rings as without zones, and no egress.
  const ClusterSpec same = two_nodes("a", "a"), plain = two_nodes("", "");
  CHECK_FALSE(same.multi_zone());
  for (const PlanKey& key : {PlanKey{.mbs = 1, .tp = 1, .dp = 1, .pp = 2, .node_order = {0, 1}}, PlanKey{.mbs = 1, .tp = 1, .dp = 2, .pp = 1, .node_order = {0, 1}}}) {
    const std::vector<int> partition = key.pp == 2 ? std::vector<int>{2, 2} : std::vector<int>{4};
    const PlanContext a = context(model, same, policy, key), b = context(model, plain, policy, key);
    CHECK(a.boundary_send_s == b.boundary_send_s);
    CHECK(policy.stage_syncs(a, partition)[0].reduce_s == policy.stage_syncs(b, partition)[0].reduce_s);
    CHECK(egress_usd_per_step(a, partition) == 0);
  }
  // A cluster whose node types name two zones but that lost its zones: data (a copy that kept
  // only node_types) is an error, not a cluster in one zone.
  ClusterSpec lost = two_nodes("a", "b");
  lost.zones = ZoneSpec{};
  CHECK_THROWS_WITH(context(model, lost, policy, PlanKey{.mbs = 1, .tp = 1, .dp = 1, .pp = 2, .node_order = {0, 1}}), Contains("no zones: data"));
}

TEST_CASE("zones: the loader's errors name the file and the field, on one line", "[zones][specs]") {
  const std::string types = "name: z\nnode_types:\n" + node_type("na", "us-central1-a") + node_type("nb", "us-west1-b");
  const std::string nodes = "nodes:\n  - {type: na, count: 1}\n  - {type: nb, count: 1}\n";
  auto one_line = [](const std::string& message) { return message.find('\n') == std::string::npos; };

  // Two zones and no zones: mapping.
  std::string error = error_of(types + nodes);
  CHECK_THAT(error, Contains("c.yaml: field 'zones': missing") && Contains("'us-central1-a', 'us-west1-b'"));
  CHECK(one_line(error));

  const std::string zones = "zones:\n  inter_zone_bandwidth_bits_per_s: 5.0e9\n  inter_zone_latency_s: 1.0e-3\n";
  CHECK_NOTHROW(parse_cluster(types + zones + "  egress_usd_per_gb: 0.01\n" + nodes, "c.yaml"));
  // A negative egress price.
  error = error_of(types + zones + "  egress_usd_per_gb: -0.01\n" + nodes);
  CHECK_THAT(error, Contains("c.yaml: field 'zones.egress_usd_per_gb': must be zero or positive"));
  CHECK(one_line(error));
  // A bandwidth that is not positive.
  error = error_of(types + "zones:\n  inter_zone_bandwidth_bits_per_s: 0\n  inter_zone_latency_s: 1.0e-3\n"
                           "  egress_usd_per_gb: 0.01\n" + nodes);
  CHECK_THAT(error, Contains("c.yaml: field 'zones.inter_zone_bandwidth_bits_per_s': must be a positive number"));
  // A zone in pairs that no node type names, with the nearest one.
  error = error_of(types + zones + "  egress_usd_per_gb: 0.01\n  pairs:\n"
                   "    - {zones: [us-central1-a, us-west1-c], egress_usd_per_gb: 0.02}\n" + nodes);
  CHECK_THAT(error, Contains("c.yaml: field 'zones.pairs[0].zones[1]': unknown zone 'us-west1-c'; did you mean "
                             "'us-west1-b'?"));
  CHECK(one_line(error));
  // A pair of one zone, a pair given twice, a negative pair price, a misspelt field.
  error = error_of(types + zones + "  egress_usd_per_gb: 0.01\n  pairs:\n"
                   "    - {zones: [us-west1-b, us-west1-b]}\n" + nodes);
  CHECK_THAT(error, Contains("field 'zones.pairs[0].zones': names zone 'us-west1-b' twice"));
  error = error_of(types + zones + "  egress_usd_per_gb: 0.01\n  pairs:\n"
                   "    - {zones: [us-central1-a, us-west1-b]}\n    - {zones: [us-west1-b, us-central1-a]}\n" + nodes);
  CHECK_THAT(error, Contains("field 'zones.pairs[1].zones': the pair") && Contains("given twice"));
  error = error_of(types + zones + "  egress_usd_per_gb: 0.01\n  pairs:\n"
                   "    - {zones: [us-central1-a, us-west1-b], egress_usd_per_gb: -1}\n" + nodes);
  CHECK_THAT(error, Contains("field 'zones.pairs[0].egress_usd_per_gb': must be zero or positive"));
  error = error_of(types + zones + "  egres_usd_per_gb: 0.01\n" + nodes);
  CHECK_THAT(error, Contains("field 'zones.egres_usd_per_gb': unknown field; did you mean 'egress_usd_per_gb'?"));
  error = error_of(types + zones + "  egress_usd_per_gb: 0.01\n  pairs:\n    - {zones: [us-central1-a]}\n" + nodes);
  CHECK_THAT(error, Contains("field 'zones.pairs[0].zones': expected two zone names, got 1"));
  // A node type's zone must be a name.
  error = error_of("name: z\nnode_types:\n" + node_type("na", "[a, b]") + "nodes:\n  - {type: na, count: 1}\n");
  CHECK_THAT(error, Contains("c.yaml: field 'node_types[0].zone': expected a string"));
}
