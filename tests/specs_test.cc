// Loading and validating spec files; profiles interpolating between micro-batch sizes.
#include <catch2/catch.hpp>

#include "specs/spec_error.h"
#include "specs/preset_catalog.h"
#include "specs/spec_loader.h"
#include "test_support.h"

using fasop::testing::spec_error;
using namespace fasop;
using Catch::Matchers::Contains;

namespace {


}  // namespace

TEST_CASE("shipped presets load under their names and FASOP's", "[specs]") {
  fasop::testing::MapSource none;
  SpecStore store(none, embedded_presets());
  CHECK(store.load_model("gpt2XL").name == "gpt2xl");
  CHECK(store.load_model("T5").num_units() == 50);
  CHECK(store.load_model("bert").num_transformer_layers() == 24);
  ClusterSpec c = store.load_cluster("fasop-8nodes-heterogeneous");
  CHECK(c.num_gpus() == 32);
  CHECK(c.node_count(0) == 1);
  CHECK(c.node_types[1].intra_node_bandwidth_bits_per_s == 128e9);
}

TEST_CASE("spec errors name the file and the field", "[specs]") {
  CHECK_THROWS_WITH(parse_model("name: x\nhidden: [1", "m.yaml"), Contains("m.yaml") && Contains("malformed YAML"));
  CHECK_THROWS_WITH(parse_model("name: x\nhidden: 100\nheads: 16\nsequence: 8\nvocab: 8\nglobal_batch: 8\n"
                                "layers: [{type: t, role: transformer}]\n",
                                "m.yaml"),
                    Contains("m.yaml") && Contains("'heads'") && Contains("divide"));
  CHECK_THROWS_WITH(parse_model("name: x\nhidden: 64\nheads: 4\nsequence: 8\nvocab: 8\nglobal_batch: 8\n"
                                "layers: [{type: t, role: attention}]\n",
                                "m.yaml"),
                    Contains("layers[0].role"));
  const char* cluster =
      "node_types:\n  - {name: a, gpu: A10, gpus_per_node: 4, gpu_memory_gib: 22.2,\n"
      "     intra_node_bandwidth_bits_per_s: 128e9, inter_node_bandwidth_bits_per_s: 40e9, price_usd_per_hour: %s}\n"
      "nodes: [{type: %s, count: 2}]\n";
  char text[512];
  std::snprintf(text, sizeof text, cluster, "-1", "a");
  CHECK_THROWS_WITH(parse_cluster(text, "c.yaml"), Contains("c.yaml") && Contains("price_usd_per_hour"));
  std::snprintf(text, sizeof text, cluster, "8", "b");
  CHECK_THROWS_WITH(parse_cluster(text, "c.yaml"), Contains("nodes[0].type") && Contains("unknown node type 'b'"));
  CHECK_THROWS_WITH(parse_profile("model: x\ngpu: A10\nforward_s: {t: {1: {1: -2}}}\n", "p.yaml"),
                    Contains("p.yaml") && Contains("forward_s.t.1.1"));
}

TEST_CASE("unknown presets and files are reported with the flag", "[specs]") {
  fasop::testing::MapSource none;
  SpecStore store(none, embedded_presets());
  CHECK_THROWS_WITH(store.load_model("gpt3"), Contains("--model") && Contains("gpt2xl"));
  CHECK_THROWS_WITH(store.load_cluster("nowhere.yaml"), Contains("--cluster") && Contains("nowhere.yaml"));
  ModelSpec model = store.load_model("gpt2xl");
  CHECK_THROWS_WITH(store.load_profile(model, "B200", ""), Contains("B200") && Contains("profile"));
}

TEST_CASE("profiles: stored points, interpolation between, proportional growth past the last", "[specs]") {
  ProfileSpec p = parse_profile("model: x\ngpu: A10\nforward_s: {t: {1: {2: 1.0, 4: 3.0}}}\n", "p.yaml");
  CHECK(p.forward_time_s("t", 1, 2) == 1.0);
  CHECK(p.forward_time_s("t", 1, 3) == 2.0);
  CHECK(p.forward_time_s("t", 1, 8) == 6.0);
  CHECK(p.forward_time_s("t", 1, 1) == 0.5);
}

TEST_CASE("FASOP's micro-batch multipliers are data in the shipped profiles", "[specs]") {
  fasop::testing::MapSource none;
  SpecStore store(none, embedded_presets());
  ModelSpec bert = store.load_model("bert");
  ProfileSpec a100 = store.load_profile(bert, "A100", "");
  // bert on A100: encoder 1x below mbs 8, 1.236x at 8, 1.235 x 1.658 at 16, then in proportion.
  CHECK(a100.forward_time_s("transformer", 1, 4) == 0.001443982);
  CHECK(a100.forward_time_s("transformer", 1, 8) == Approx(1.236 * 0.001443982));
  CHECK(a100.forward_time_s("transformer", 1, 32) == Approx(1.235 * 1.658 * 2 * 0.001443982));
}

TEST_CASE("presets are listed by kind and found by name, kind or path", "[specs][presets]") {
  const std::vector<EmbeddedFile> files = {{"clusters/x.yaml", "cluster"},
                                           {"configs/models/x.yaml", "model"},
                                           {"validation/layers/set/case.yaml", "case"}};
  const std::vector<PresetEntry> entries = preset_catalog(files);
  REQUIRE(entries.size() == 3);
  CHECK(entries[0].kind == "model");  // models first, then clusters, ..., validation cases
  CHECK(entries[1].kind == "cluster");
  CHECK(entries[2].name == "layers/set/case");
  CHECK(std::string(find_preset(files, "x", "cluster").text) == "cluster");
  CHECK(std::string(find_preset(files, "configs/models/x.yaml", "").text) == "model");
  CHECK_THROWS_WITH(find_preset(files, "x", ""), Catch::Contains("several kinds (cluster, model)") && Catch::Contains("--kind"));
  CHECK_THROWS_WITH(find_preset(files, "y", "model"), Catch::Contains("no model preset named 'y'"));
  CHECK_THROWS_WITH(find_preset(files, "x", "clusters"), Catch::Contains("--kind: unknown kind 'clusters'"));
  CHECK(file_to_edit(files, "clusters/x.yaml").find("presets show clusters/x.yaml > my.yaml") != std::string::npos);
  CHECK(file_to_edit(files, "/home/me/x.yaml") == "/home/me/x.yaml");
}

TEST_CASE("a node type's gpu_data sets GPU-data parameters by name over the shipped data", "[specs]") {
  const std::string head =
      "name: c\nnode_types:\n  - {name: p5, gpu: H100, gpus_per_node: 8, gpu_memory_gib: 80,\n"
      "     intra_node_bandwidth_bits_per_s: 1e12, inter_node_bandwidth_bits_per_s: 1e11, price_usd_per_hour: 1,\n"
      "     gpu_data: ";
  const std::string tail = "}\nnodes: [{type: p5, count: 1}]\n";
  ClusterSpec shipped = parse_cluster(head + "{}" + tail, "c.yaml");
  ClusterSpec c = parse_cluster(head + "{bf16.gemm_peak_share: 0.5, network.bus_share: 0.6, kernel_gap_s: 4.0e-6}" + tail,
                                "c.yaml");
  const GpuSpec& gpu = c.node_types[0].gpu_data;
  CHECK(gpu.efficiency("bf16").gemm_peak_share == 0.5);
  CHECK(gpu.efficiency("fp8").gemm_peak_share == shipped.node_types[0].gpu_data.efficiency("fp8").gemm_peak_share);
  CHECK(gpu.network.bus_share == 0.6);
  CHECK(gpu.launch.kernel_gap_s == 4.0e-6);
  CHECK_THROWS_WITH(parse_cluster(head + "{gemm_peak_share: 0.5}" + tail, "c.yaml"),
                    Contains("c.yaml") && Contains("gpu_data.gemm_peak_share") && Contains("bf16.gemm_peak_share"));
  CHECK_THROWS_WITH(parse_cluster(head + "{bf16.speed: 2}" + tail, "c.yaml"),
                    Contains("gpu_data.bf16.speed") && Contains("not a GPU-data parameter"));
  CHECK_THROWS_WITH(parse_cluster(head + "{bf16.memory_share: 1.5}" + tail, "c.yaml"), Contains("at most 1"));
}

TEST_CASE("malformed specs give SpecError naming the file and the field, never yaml-cpp's exceptions", "[specs]") {
  const std::string dims = "name: m\nhidden: 64\nheads: 4\nsequence: 8\nvocab: 8\nglobal_batch: 8\n";
  const std::string layers = "layers: [{type: t, role: transformer}]\n";
  auto model_error = [](const std::string& text) { return spec_error([&] { parse_model(text, "m.yaml"); }); };
  CHECK_THAT(model_error(dims + "layers: [x]\n"), Contains("m.yaml: field 'layers[0]'") && Contains("expected a mapping"));
  CHECK_THAT(model_error(dims), Contains("field 'layers'") && Contains("non-empty list"));
  CHECK_THAT(model_error(dims + "layers: {a: 1}\n"), Contains("field 'layers'") && Contains("got a mapping"));
  CHECK_THAT(model_error(dims + layers + "default_clusters: [a]\n"), Contains("field 'default_clusters'"));
  CHECK_THAT(model_error(dims + layers + "? [a]\n: 1\n"), Contains("m.yaml") && Contains("not a plain name"));
  CHECK_THAT(model_error(dims + layers + "hidden: 32\n"), Contains("field 'hidden': given twice"));
  CHECK_THAT(model_error(dims + layers + "ffn_hiden: 256\n"), Contains("field 'ffn_hiden': unknown field; did you mean 'ffn_hidden'?"));
  CHECK_THAT(model_error(dims + "layers: [{type: t, role: transformer, repet: 2}]\n"), Contains("did you mean 'repeat'?"));
  CHECK_THAT(model_error(dims + layers + "bananas: 1\n"), Contains("field 'bananas': unknown field") && !Contains("did you mean"));
  // Bounds far past any model, named in the message; products of them cannot overflow.
  CHECK_THAT(model_error("name: m\nhidden: 2147483520\nheads: 4\nsequence: 8\nvocab: 8\nglobal_batch: 8\n" + layers),
             Contains("field 'hidden': must be at most 1048576, got 2147483520"));
  CHECK_THAT(model_error(dims + "layers: [{type: t, role: transformer, repeat: 2000000000}]\n"),
             Contains("'layers[0].repeat': must be at most 100000"));
  CHECK_THAT(model_error(dims + "layers: [{type: t, role: transformer, repeat: 60000}, {type: t, role: transformer, "
                                "repeat: 60000}]\n"),
             Contains("'layers[1].repeat'") && Contains("more than 100000 pipeline units"));
  CHECK_THAT(model_error("name: m\nhidden: 99999999999999999999\nheads: 4\n"), Contains("'hidden': expected a whole number"));
  CHECK_THAT(model_error("a: &x [*x]\n"), Contains("m.yaml"));
  std::string nested = "a: ";
  for (int i = 0; i < 40; ++i) nested += "[";
  CHECK_THAT(model_error(nested + std::string(40, ']') + "\n"), Contains("nested more than 32 levels"));

  const std::string type =
      "node_types: [{name: a, gpu: X, gpus_per_node: 8, gpu_memory_gib: 16, intra_node_bandwidth_bits_per_s: 1,\n"
      "  inter_node_bandwidth_bits_per_s: 1, price_usd_per_hour: 1}]\n";
  auto cluster_error = [](const std::string& text) { return spec_error([&] { parse_cluster(text, "c.yaml"); }); };
  CHECK_THAT(cluster_error("name: c\n"), Contains("c.yaml: field 'node_types'"));
  CHECK_THAT(cluster_error(type), Contains("field 'nodes'") && Contains("a list of {type, count}"));
  CHECK_THAT(cluster_error(type + "nodes: [{type: a, count: 2000000000}]\n"),
             Contains("'nodes[0].count'") && Contains("more than 100000 nodes"));
  CHECK_THAT(cluster_error(std::string(type).replace(type.find("gpus_per_node: 8"), 16, "gpus_per_node: 2147483647") +
                           "nodes: [{type: a, count: 1}]\n"),
             Contains("'node_types[0].gpus_per_node': must be at most 4096"));
  CHECK_THAT(cluster_error(type + "nodes: [{type: a, cuont: 1}]\n"), Contains("did you mean 'count'?"));
  CHECK_THAT(cluster_error(type + "nodes: [{type: a, count: 1}]\nnodes: []\n"), Contains("'nodes': given twice"));
  CHECK_THAT(cluster_error(type + "nodes: [{type: a, count: 1}]\nnode_type: x\n"), Contains("did you mean 'node_types'?"));
  // A field typed without its unit suffix is named with it; a value written with a unit gets
  // the unit the field takes and an example.
  CHECK_THAT(cluster_error(std::string(type).replace(type.find("gpu_memory_gib"), 14, "gpu_memory") +
                           "nodes: [{type: a, count: 1}]\n"),
             Contains("field 'node_types[0].gpu_memory': unknown field; did you mean 'gpu_memory_gib'?"));
  CHECK_THAT(cluster_error(std::string(type).replace(type.find("inter_node_bandwidth_bits_per_s: 1"), 34,
                                                     "inter_node_bandwidth_bits_per_s: 400Gb") +
                           "nodes: [{type: a, count: 1}]\n"),
             Contains("field 'node_types[0].inter_node_bandwidth_bits_per_s': expected a number, got '400Gb' "
                      "(bits per second, e.g. 4e11 for 400 Gb/s)"));

  CHECK_THROWS_WITH(parse_profile("model: m\ngpu: g\n", "p.yaml"), Contains("p.yaml: field 'forward_s'"));
  CHECK_THROWS_WITH(parse_profile("model: m\ngpu: g\nforward_s: {t: {x: {1: 0.1}}}\n", "p.yaml"),
                    Contains("field 'forward_s.t.x'") && Contains("whole number"));
  CHECK_THROWS_WITH(parse_profile("model: m\ngpu: g\nforward_s: {t: [1]}\n", "p.yaml"), Contains("field 'forward_s.t'"));
}

TEST_CASE("a plan's GPUs: replicas of tp x cp, per stage where stages differ") {
  PlanKey uniform{.tp = 2, .dp = 4, .pp = 3};
  uniform.cp = 2;
  CHECK(uniform.replica_gpus(1) == 4);
  CHECK(uniform.stage_gpus(1) == 16);
  CHECK(uniform.num_gpus() == 48);
  PlanKey staged{.tp = 4, .dp = 2, .pp = 2};
  staged.stage_tp = {4, 2};
  staged.stage_dp = {1, 4};
  CHECK(staged.tp_of_stage(1) == 2);
  CHECK(staged.dp_of_stage(0) == 1);
  CHECK(staged.stage_gpus(0) == 4);
  CHECK(staged.stage_gpus(1) == 8);
  CHECK(staged.num_gpus() == 12);
}
