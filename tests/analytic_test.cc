// Beyond FASOP: the exact memory-feasible partitioner against brute force, memory against hand
// calculations, analytic layer work against FLOP counts, placements, and bad spec files.
#include <catch2/catch.hpp>

#include <functional>
#include <limits>
#include <random>

#include "costmodel/analytic_policy.h"
#include "profiles/analytic_profile.h"
#include "search/partitioner.h"
#include "search/search_space.h"
#include "specs/spec_error.h"
#include "specs/spec_loader.h"
#include "test_support.h"

using namespace fasop;
using fasop::testing::compositions;
using fasop::testing::SyntheticPipeline;

using fasop::testing::PresetSpecs;

TEST_CASE("the exact partitioner equals brute force, memory limits and sends included", "[analytic][partitioner]") {
  std::mt19937 rng(2024);
  std::uniform_real_distribution<double> cost(0.1, 1.0), param(1.0, 3.0);
  for (int trial = 0; trial < 300; ++trial) {
    int n = 2 + int(rng() % 10), pp = 1 + int(rng() % std::min(n, 5));
    std::vector<std::vector<double>> units(2, std::vector<double>(n));
    for (int u = 0; u < n; ++u) units[0][u] = cost(rng), units[1][u] = 2.5 * units[0][u];
    std::vector<int> types;
    for (int s = 0; s < pp; ++s) types.push_back(int(rng() % 2));
    SyntheticPipeline sp(units, types);
    PlanContext& ctx = sp.ctx;
    for (int b = 0; b + 1 < pp; ++b) ctx.boundary_send_s.push_back(0.3 * cost(rng));
    MemoryModel memory;
    memory.params_prefix.assign(n + 1, 0);
    memory.activation_prefix.assign(n + 1, 0);
    for (int u = 0; u < n; ++u) {
      memory.params_prefix[u + 1] = memory.params_prefix[u] + param(rng);
      memory.activation_prefix[u + 1] = memory.activation_prefix[u] + 0.5 * param(rng);
    }
    for (int s = 0; s < pp; ++s) {
      memory.bytes_per_param.push_back(1.0);
      memory.in_flight.push_back(pp - s);
      memory.fixed_bytes.push_back(0.5);
      memory.limit_bytes.push_back(4.0 + 8.0 * cost(rng));  // some stages tight, some roomy
    }
    ctx.partition_memory = memory;
    auto stage_time = [&](const std::vector<int>& p, int s, int first) {
      double t = 0;
      for (int u = first; u < first + p[s]; ++u) t += ctx.unit_compute_s[ctx.stage_node_type[s]][u];
      if (s + 1 < pp) t += ctx.boundary_send_s[s];
      if (s > 0) t += ctx.boundary_send_s[s - 1];
      return t;
    };
    double best = std::numeric_limits<double>::infinity();
    std::vector<int> prefix;
    compositions(n, pp, prefix, [&](const std::vector<int>& p) {
      double worst = 0;
      for (int s = 0, first = 0; s < pp; first += p[s], ++s) {
        if (!memory.fits(s, first, first + p[s])) return;
        worst = std::max(worst, stage_time(p, s, first));
      }
      best = std::min(best, worst);
    });
    std::vector<int> exact = exact_bottleneck_partition(ctx);
    INFO("trial " << trial << " n " << n << " pp " << pp);
    if (best == std::numeric_limits<double>::infinity()) {
      CHECK(exact.empty());
      continue;
    }
    REQUIRE(exact.size() == size_t(pp));
    double worst = 0;
    for (int s = 0, first = 0; s < pp; first += exact[s], ++s) {
      CHECK(memory.fits(s, first, first + exact[s]));
      worst = std::max(worst, stage_time(exact, s, first));
    }
    CHECK(worst == Approx(best).epsilon(1e-12));
  }
}

TEST_CASE("the exact partitioner handles 80 layers on 128 stages", "[analytic][partitioner]") {
  // Fast enough for LLaMA-2 70B's 82 units: the dynamic program is pp x units x widest stage.
  PresetSpecs l("llama2-70b", "mixed-1024gpu");
  ModelSpec model = l.model;
  PlanContext ctx;
  ctx.model = &model;
  ctx.key.pp = 80;  // at most the layers; 82 units on 80 stages
  ctx.unit_compute_s.assign(1, std::vector<double>(model.num_units(), 1.0));
  ctx.stage_node_type.assign(80, 0);
  ctx.boundary_send_s.assign(79, 0.01);
  std::vector<int> partition = exact_bottleneck_partition(ctx);
  REQUIRE(partition.size() == 80);
  CHECK(*std::max_element(partition.begin(), partition.end()) == 2);
  // 128 stages: a model of 256 units (layers of uneven cost) on GPUs of two speeds.
  std::vector<std::vector<double>> costs(2, std::vector<double>(256));
  for (int u = 0; u < 256; ++u) costs[0][u] = 1 + (u % 3), costs[1][u] = 2 * (1 + (u % 3));
  std::vector<int> halves;
  for (int s = 0; s < 128; ++s) halves.push_back(s < 64 ? 0 : 1);
  SyntheticPipeline big(costs, halves);
  PlanContext& wide = big.ctx;
  wide.boundary_send_s.assign(127, 0.0);
  std::vector<int> wide_partition = exact_bottleneck_partition(wide);
  REQUIRE(wide_partition.size() == 128);
  double worst = 0;
  for (int s = 0, first = 0; s < 128; first += wide_partition[s], ++s) {
    double t = 0;
    for (int u = first; u < first + wide_partition[s]; ++u) t += wide.unit_compute_s[wide.stage_node_type[s]][u];
    worst = std::max(worst, t);
  }
  // The optimum by another route: stage times are whole numbers here, and a bottleneck B is
  // feasible iff packing each stage in turn as full as B allows (leaving a unit for each later
  // stage) places every unit.
  auto feasible = [&](double bound) {
    int u = 0;
    for (int s = 0; s < 128; ++s) {
      double t = 0;
      int taken = 0;
      while (u < 256 - (127 - s) && t + wide.unit_compute_s[wide.stage_node_type[s]][u] <= bound)
        t += wide.unit_compute_s[wide.stage_node_type[s]][u++], ++taken;
      if (taken == 0) return false;
    }
    return u == 256;
  };
  double optimum = 1;
  while (!feasible(optimum)) optimum += 1;
  CHECK(worst == optimum);
}

TEST_CASE("memory per GPU follows the hand calculation", "[analytic][memory]") {
  // Mixed-precision Adam: 2 + 4 + 12 = 18 bytes a parameter (Megatron-LM); ZeRO-1 shards the
  // 12 optimizer bytes, ZeRO-2 also the 4 gradient bytes, ZeRO-3 all 18, over dp = 8.
  CHECK(AnalyticPolicy::bytes_per_param(0, 8) == 18.0);
  CHECK(AnalyticPolicy::bytes_per_param(1, 8) == 7.5);
  CHECK(AnalyticPolicy::bytes_per_param(2, 8) == 4.0);
  CHECK(AnalyticPolicy::bytes_per_param(3, 8) == 2.25);
  // LLaMA-2 7B's parameters, by hand: embedding and head 32000 x 4096 each, 32 layers of
  // attention 4 x 4096^2, SwiGLU 3 x 4096 x 11008 and two RMSNorms, a final RMSNorm.
  PresetSpecs l("llama2-7b", "aws-h100");
  double params = 0;
  for (const LayerUnit& u : l.model.units) params += unit_params(l.model, u, 1);
  const double by_hand = 2 * 32000.0 * 4096 + 32 * (4 * 4096.0 * 4096 + 3 * 4096.0 * 11008 + 2 * 4096) + 4096;
  CHECK(params == by_hand);
  CHECK(params == Approx(6.738e9).epsilon(1e-3));  // the published 6.74B
  // tp 2 halves the matrices, not the norms.
  CHECK(unit_params(l.model, l.model.units[1], 2) == (4 * 4096.0 * 4096 + 3 * 4096.0 * 11008) / 2 + 2 * 4096);
  // Activations of one layer, one sequence of 4096 tokens, tp 1 (Korthikanti et al. with a
  // SwiGLU MLP and fused attention, which keeps no score matrix): sbh(10 + 8) + 6sbf; with
  // recomputation only the input, 2sbh.
  const double s = 4096, h = 4096, a = 32, f = 11008;
  CHECK(unit_activation_bytes(l.model, l.model.units[1], 1, 1, {}) == s * h * 18 + 6 * s * f);
  CHECK(unit_activation_bytes(l.model, l.model.units[1], 1, 1, {true, false, false}) == 2 * s * h);
  // One stage on 8 GPUs (dp 8), ZeRO-3, recomputation: the estimate's GiB is the sum.
  {
    PlanKey key{1, 1, 8, 1, {0}};
    key.zero_stage = 3;
    key.recompute = true;
    ClusterSpec one_node = l.cluster;
    one_node.nodes = {0};
    NodeType node = one_node.node_types[0];
    ProfileSpec profile = analytic_profile(l.model, node, {1}, {1});
    AnalyticPolicy policy;
    PlanContext ctx = make_plan_context(l.model, one_node, {&profile}, policy, key);
    std::vector<StageMemory> memory = policy.stage_memory(ctx, {l.model.num_units()});
    // One micro-batch in flight (pp 1): the embedding's output, 32 layer inputs and the head's
    // input (2sbh each) and fp32 logits (4 s v); one layer's full activations while recomputed;
    // 1 GiB reserved for the CUDA context and NCCL.
    double activations = 34 * 2 * s * h + 4 * s * 32000;
    double working = s * h * 18 + 6 * s * f;
    double reserved = 1024.0 * 1024 * 1024;
    double expected = (by_hand * 2.25 + activations + working + reserved) / (1024.0 * 1024 * 1024);
    CHECK(memory[0].gib == Approx(expected).epsilon(1e-12));
    CHECK(memory[0].limit_gib == 80);
    CHECK_FALSE(policy.memory_verdict(memory).is_oom);
  }
}

namespace {

/// A GPT model of Megatron-LM's papers: gpt2xl's kind (4h GELU MLP, LayerNorm, tied fp16
/// embeddings) with these dimensions, an embedding, `layers` layers and the head.
ModelSpec gpt_model(int hidden, int heads, int layers, int sequence, int vocab) {
  ModelSpec m = PresetSpecs("gpt2xl", "aws-a100-80g").model;
  m.hidden = hidden;
  m.heads = m.kv_heads = heads;
  m.ffn_hidden = 4 * hidden;
  m.sequence = sequence;
  m.vocab = vocab;
  const LayerUnit embedding = m.units.front(), layer = m.units[1], head = m.units.back();
  m.units.assign(1, embedding);
  m.units.insert(m.units.end(), layers, layer);
  m.units.push_back(head);
  return m;
}

}  // namespace

TEST_CASE("activations per layer follow Korthikanti et al. 2022, Table 2, in every mode", "[analytic][memory]") {
  // GPT-3 175B's layer (h 12288, a 96, s 2048, 4h GELU MLP, unfused attention as in the paper),
  // micro-batch 1, t = 8. The paper, in bytes per layer: no parallelism sbh(34 + 5as/h); tensor
  // parallel sbh(10 + 24/t + 5as/(ht)); + sequence parallel sbh(34/t + 5as/(ht)); tensor
  // parallel + selective recomputation sbh(10 + 24/t); + sequence parallel sbh(34/t); full
  // recomputation 2sbh (2sbh/t with sequence parallelism).
  ModelSpec m = gpt_model(12288, 96, 96, 2048, 51200);
  m.flash_attention = false;
  const LayerUnit& layer = m.units[1];
  const double s = 2048, b = 1, h = 12288, a = 96, t = 8, sbh = s * b * h;
  auto bytes = [&](int tp, bool full, bool selective, bool sp) {
    return unit_activation_bytes(m, layer, tp, 1, ActivationMode{full, selective, sp});
  };
  CHECK(bytes(1, false, false, false) == Approx(sbh * (34 + 5 * a * s / h)).epsilon(1e-12));
  CHECK(bytes(8, false, false, false) == Approx(sbh * (10 + 24 / t + 5 * a * s / (h * t))).epsilon(1e-12));
  CHECK(bytes(8, false, false, true) == Approx(sbh * (34 / t + 5 * a * s / (h * t))).epsilon(1e-12));
  CHECK(bytes(8, false, true, false) == Approx(sbh * (10 + 24 / t)).epsilon(1e-12));
  CHECK(bytes(8, false, true, true) == Approx(sbh * 34 / t).epsilon(1e-12));
  CHECK(bytes(8, true, false, false) == 2 * sbh);
  CHECK(bytes(8, true, false, true) == 2 * sbh / t);
  // The paper's headline: about 5x less than tensor parallelism alone with both, here
  // (34/8) / (10 + 3 + 5 x 96 x 2048 / (12288 x 8)) = 4.25 / 23 = 0.185.
  CHECK(bytes(8, false, true, true) / bytes(8, false, false, false) == Approx(4.25 / 23.0).epsilon(1e-12));
}

TEST_CASE("the distributed optimizer's bytes per parameter are Megatron-LM's", "[analytic][memory]") {
  // Megatron-LM docs (distrib_optimizer.md): fp16 parameters and gradients 20 bytes, 4 + 16/d
  // with the distributed optimizer (ZeRO-1); bf16 parameters with fp32 gradients 18, 6 + 12/d.
  for (int d : {1, 2, 8, 64}) {
    CHECK(AnalyticPolicy::bytes_per_param(0, d, "fp16") == 20.0);
    CHECK(AnalyticPolicy::bytes_per_param(1, d, "fp16") == 4 + 16.0 / d);
    CHECK(AnalyticPolicy::bytes_per_param(0, d, "bf16") == 18.0);
    CHECK(AnalyticPolicy::bytes_per_param(1, d, "bf16") == 6 + 12.0 / d);
  }
  CHECK(AnalyticPolicy::gradient_bytes("fp16") == 2);  // Megatron reduces fp16 gradients as fp16
  CHECK(AnalyticPolicy::gradient_bytes("bf16") == 4);  // and bf16 ones in fp32
}

TEST_CASE("the interleaved schedule's bubble is (pp - 1) / (v m)", "[analytic][pipeline]") {
  // 4 equal stages, 1 s forward and 2 s backward a micro-batch, no sends, m = 8 micro-batches:
  // 1F1B takes (m + pp - 1) x 3 s = 33 s; with v = 2 chunks a rank (m + (pp - 1) / v) x 3 s =
  // 28.5 s, a bubble of 4.5 s over the 24 s of work: (pp - 1) / (v m) = 3 / 16.
  PresetSpecs g("gpt2xl", "aws-a100-80g");
  PlanKey key{1, 1, 1, 4, {0}};
  PlanContext ctx;
  ctx.model = &g.model;
  ctx.key = key;
  ctx.num_microbatches = 8;
  std::vector<StageTiming> stages(4, StageTiming{1.0, 2.0, 0, 0});
  AnalyticPolicy policy;
  CHECK(policy.pipeline(ctx, stages).pipeline_s == Approx(33.0));
  for (int v : {2, 4}) {
    ctx.key.virtual_stages = v;
    const double total = policy.pipeline(ctx, stages).pipeline_s, work = 8 * 3.0;
    CHECK((total - work) / work == Approx(3.0 / (v * 8)).epsilon(1e-12));
  }
  // Each micro-batch crosses v boundaries a rank: sends count v times.
  ctx.key.virtual_stages = 2;
  std::vector<StageTiming> sending(4, StageTiming{1.0, 2.0, 0.1, 0.1});
  // Sends blocking (no --overlap-p2p-communication): v times each micro-batch's sends on every rank.
  AnalyticOptions blocking;
  blocking.overlap_p2p = false;
  CHECK(AnalyticPolicy(blocking).pipeline(ctx, sending).pipeline_s == Approx((8 + 1.5) * (3.0 + 2 * 0.2)));
  // Overlapped (Megatron's default with interleaving): the sends show only in the fill and drain.
  CHECK(policy.pipeline(ctx, sending).pipeline_s < (8 + 1.5) * (3.0 + 2 * 0.2));
  CHECK(policy.pipeline(ctx, sending).pipeline_s >= (8 + 1.5) * 3.0);
}

TEST_CASE("a GPT model's FLOPs a step are Megatron-LM's closed form", "[analytic][profile]") {
  // Narayanan et al. 2021, eq. 3, with full recomputation (forward, backward twice the forward,
  // forward again): F = 96 B s l h^2 (1 + s / (6h) + V / (16 l h)). The head runs forward and
  // backward only (3 x its 2BshV), as the formula counts it. GPT-3 1.7B of the A100 set: l 24,
  // h 2304, s 2048, V 51200, B 512. The formula counts every score (no causal halving).
  ModelSpec m = gpt_model(2304, 24, 24, 2048, 51200);
  m.causal = false;
  const double B = 512, s = 2048, l = 24, h = 2304, V = 51200;
  double flops = 0;
  for (const LayerUnit& u : m.units) {
    const PassWork f = layer_work(m, u, 1, 1).forward;
    if (u.role == LayerRole::kTransformer) flops += 4 * (f.gemm_flops() + f.attention_flops) * B;
    if (u.role == LayerRole::kPostProcess) flops += 3 * f.gemm_flops() * B;
  }
  CHECK(flops == Approx(96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h))).epsilon(1e-12));
  // Causal attention computes half the scores: 4 b s^2 h -> 2 b s^2 h a layer.
  ModelSpec causal = m;
  causal.causal = true;
  CHECK(layer_work(causal, causal.units[1], 1, 1).forward.attention_flops == 2 * s * s * h);
  // The backward pass: each GEMM twice (data and weight gradients), fused attention 2.5 times.
  const LayerWork w = layer_work(causal, causal.units[1], 2, 1);
  CHECK(w.backward.gemm_flops() == 2 * w.forward.gemm_flops());
  CHECK(w.backward.attention_flops == 2.5 * w.forward.attention_flops);
}

TEST_CASE("GPU data: GEMM shape, memory, attention, launches, collectives, overlapped tp", "[analytic][profile]") {
  // A made-up GPU: 100 TFLOP/s, 1e12 B/s memory, 8 GPUs on a 1e12 bit/s NVLink, 1 us latency.
  NodeType node;
  node.name = "x";
  node.gpu = "X";
  node.gpus_per_node = 8;
  node.intra_node_bandwidth_bits_per_s = 1e12;
  node.intra_node_latency_s = 1e-6;
  GpuSpec& gpu = node.gpu_data;
  gpu.peak_tflops = {{"fp16", 100}};
  gpu.memory_bandwidth_bytes_per_s = 1e12;
  PrecisionEfficiency e;
  e.gemm_peak_share = 0.5;
  e.gemm_half_dim = 0;
  e.attention_peak_share = 0.25;
  e.memory_share = 0.5;
  gpu.precisions["fp16"] = e;
  gpu.launch.kernel_gap_s = 1e-6;
  gpu.launch.dispatch_s = {{"megatron", 0}, {"eager", 1e-4}};
  gpu.nvlink = {1.0, 0};
  gpu.overlap_slowdown = 0.1;
  // GEMM shape: each dimension d costs d / (d + 64).
  Gemm g{1024, 448, 64};
  PrecisionEfficiency shaped = e;
  shaped.gemm_half_dim = 64;
  CHECK(gemm_efficiency(g, shaped) == Approx(0.5 * 1024.0 / 1088 * 448.0 / 512 * 64.0 / 128).epsilon(1e-12));
  PassWork w;
  w.gemms = {{1e4, 1e4, 5e3}};  // 1e12 FLOPs / (100e12 x 0.5) = 20 ms
  w.attention_flops = 1e11;     // 1e11 / (100e12 x 0.25) = 4 ms
  w.memory_bytes = 1e9;         // 1e9 / (1e12 x 0.5) = 2 ms
  w.kernels = 10;               // 10 x 1 us
  w.tp_collectives = 2;
  w.tp_collective_bytes = 1e8;  // each: 2 x 3 x 1 us + 2 x 3/4 x 8e8 / 1e12 s = 6 us + 1.2 ms
  const double gpu_s = 20e-3 + 4e-3 + 2e-3 + 10e-6, ring_s = 2 * (6e-6 + 1.2e-3);
  PassTime t = pass_time(w, 4, node, "fp16");
  CHECK(t.gpu_s == Approx(gpu_s).epsilon(1e-12));
  CHECK(t.seconds == Approx(gpu_s + ring_s).epsilon(1e-12));
  // Backward passes run fused attention at the backward share.
  PassWork back = w;
  back.backward = true;
  gpu.precisions["fp16"].attention_backward_peak_share = 0.125;
  CHECK(pass_time(back, 4, node, "fp16").gpu_s == Approx(gpu_s + 4e-3).epsilon(1e-12));
  // Collectives at 80% of the link for large messages, half of that at 1e8 bytes: 2.5 x the bandwidth term.
  gpu.nvlink = {0.8, 1e8};
  CHECK(pass_time(w, 4, node, "fp16").tp_comm_s == Approx(2 * (6e-6 + 1.2e-3 / 0.4)).epsilon(1e-12));
  gpu.nvlink = {1.0, 0};
  // Overlapped with the GEMMs (20 ms), the rings are hidden and cost the GEMMs 10% of their time.
  LayerOptions overlap;
  overlap.overlap_tp_comm = true;
  CHECK(pass_time(w, 4, node, "fp16", overlap).tp_comm_s == Approx(0.1 * ring_s).epsilon(1e-12));
  // An eager stack launching 10 kernels and 4 collective kernels at 100 us each: the host bounds the pass.
  LayerOptions eager;
  eager.stack = Stack::kEager;
  PassWork small;
  small.kernels = 10;
  small.memory_bytes = 1e6;  // 2 us of traffic, 10 us of gaps: far below the host's 1 ms
  PassTime host = pass_time(small, 1, node, "fp16", eager);
  CHECK(host.host_s == Approx(10 * 1e-4).epsilon(1e-12));
  CHECK(host.seconds == Approx(1e-3).epsilon(1e-12));
  // tp spanning two nodes (16 > 8 GPUs) rings on the network, shared by the node's 8 GPUs.
  node.inter_node_bandwidth_bits_per_s = 8e11;
  node.inter_node_latency_s = 1e-5;
  gpu.network = {1.0, 0};
  const double network_s = 2 * (2 * 15 * 1e-5 + 2 * 15.0 / 16 * 8e8 / (8e11 / 8));
  CHECK(pass_time(w, 16, node, "fp16").tp_comm_s == Approx(network_s).epsilon(1e-12));
}

TEST_CASE("a profile made at one GEMM share is calibrated back to it", "[analytic][profile]") {
  PresetSpecs h100("gpt2xl", "aws-h100");
  NodeType node = h100.cluster.node_types[0];
  for (auto& [name, e] : node.gpu_data.precisions) e.gemm_peak_share = 0.37;
  ProfileSpec measured = analytic_profile(h100.model, node, {1, 2, 4}, {1, 2, 4, 8});
  for (auto& [name, e] : node.gpu_data.precisions) e.gemm_peak_share = 0.5;
  CHECK(calibrated_efficiency(h100.model, node, measured) == Approx(0.37).epsilon(1e-3));
}

TEST_CASE("the search space takes Megatron-LM's dimensions where they apply", "[analytic][search]") {
  // LLaMA-2 7B (32 layers, global batch 1024) on 16 H100 nodes, layouts fixed to tp 2, dp 16,
  // pp 4, ZeRO 0: mbs in 1, 2, 4, 8, 16, 32, 64 (dividing 1024 / 16 = 64): 7 layouts.
  PresetSpecs l("llama2-7b", "aws-h100");
  SearchSpaceOptions space = SearchSpaceOptions::beyond_fasop();
  space.placements = PlacementKind::kCyclic;
  space.zero_stages = {0};
  space.fixed.tp = 2;
  space.fixed.pp = 4;
  space.recompute = {RecomputeMode::kNone};
  REQUIRE(enumerate_plan_keys(l.model, l.cluster, space).size() == 7);
  // x 3 recomputation modes x 2 (sequence parallel off, on) = 42. Two virtual stages need 32 %
  // (4 x 2) == 0 (yes) and the 64 / mbs micro-batches a multiple of pp 4: mbs 1, 2, 4, 8 and
  // 16, not 32 or 64 (2 and 1 micro-batches): 42 + 5 x 6 = 72.
  space.recompute = {RecomputeMode::kNone, RecomputeMode::kSelective, RecomputeMode::kFull};
  space.sequence_parallel = {false, true};
  CHECK(enumerate_plan_keys(l.model, l.cluster, space).size() == 42);
  space.virtual_stages = {1, 2};
  std::vector<PlanKey> keys = enumerate_plan_keys(l.model, l.cluster, space);
  CHECK(keys.size() == 72);
  for (const PlanKey& k : keys)
    if (k.virtual_stages == 2) CHECK((64 / k.mbs) % 4 == 0);
  // Sequence parallelism only where tp splits something.
  space.fixed.tp = 1;
  space.fixed.pp = 0;
  for (const PlanKey& k : enumerate_plan_keys(l.model, l.cluster, space)) CHECK_FALSE(k.sequence_parallel);
}

TEST_CASE("type-block placements: every order of the node types, no symmetric duplicates", "[analytic][search]") {
  PresetSpecs l("llama2-70b", "mixed-h100-a100-l4");
  std::vector<std::vector<int>> placements = type_block_placements(l.cluster);
  REQUIRE(placements.size() == 6);  // 3! orders of three types
  CHECK(placements.front() == std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2});
  CHECK(placements.back() == std::vector<int>{2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0});
  // Beyond FASOP's space: tp up to 8 (dividing 64 heads and 8 key/value heads), ZeRO 1-3 only
  // with dp > 1, recomputation off and on.
  std::vector<PlanKey> keys = enumerate_plan_keys(l.model, l.cluster, SearchSpaceOptions::beyond_fasop());
  bool tp8 = false;
  for (const PlanKey& k : keys) {
    tp8 = tp8 || k.tp == 8;
    CHECK((k.zero_stage == 0 || k.dp > 1));
    CHECK(k.tp * k.dp * k.pp == 96);
  }
  CHECK(tp8);
}

TEST_CASE("bad model and cluster files name the file and the field", "[analytic][specs]") {
  const std::string cluster =
      "name: c\nnode_types:\n  - {name: n, gpu: H100, gpus_per_node: 8, gpu_memory_gib: 80, "
      "peak_tflops: {bf16: 989}, memory_bandwidth_bytes_per_s: 3.35e12, "
      "intra_node_bandwidth_bits_per_s: BW, inter_node_bandwidth_bits_per_s: 3.2e12, price_usd_per_hour: PRICE}\n"
      "nodes:\n  - {type: n, count: 2}\n";
  auto with = [&](std::string text, const std::string& key, const std::string& value) {
    text.replace(text.find(key), key.size(), value);
    return text;
  };
  std::string good = with(with(cluster, "BW", "3.6e12"), "PRICE", "98.32");
  CHECK_NOTHROW(parse_cluster(good, "c.yaml"));
  CHECK_THROWS_WITH(parse_cluster(with(with(cluster, "BW", "0"), "PRICE", "1"), "c.yaml"),
                    Catch::Contains("c.yaml") && Catch::Contains("intra_node_bandwidth_bits_per_s"));
  CHECK_THROWS_WITH(parse_cluster(with(with(cluster, "BW", "1e12"), "PRICE", "-3"), "c.yaml"),
                    Catch::Contains("c.yaml") && Catch::Contains("price_usd_per_hour"));
  const std::string model =
      "name: m\nhidden: 4096\nheads: HEADS\nkv_heads: KV\nsequence: 4096\nvocab: 32000\nglobal_batch: 64\n"
      "layers:\n  - {type: embedding, role: embedding}\n  - {type: t, role: transformer, repeat: 4}\n";
  CHECK_NOTHROW(parse_model(with(with(model, "HEADS", "32"), "KV", "8"), "m.yaml"));
  CHECK_THROWS_WITH(parse_model(with(with(model, "HEADS", "30"), "KV", "6"), "m.yaml"),
                    Catch::Contains("m.yaml") && Catch::Contains("'heads'"));
  CHECK_THROWS_WITH(parse_model(with(with(model, "HEADS", "32"), "KV", "6"), "m.yaml"),
                    Catch::Contains("m.yaml") && Catch::Contains("'kv_heads'"));
  // tp must split whole heads.
  PresetSpecs l("llama2-70b", "mixed-h100-a100-l4");
  PlanKey key{1, 3, 32, 1, l.cluster.nodes};  // 3 does not divide 64 heads
  CHECK_THROWS_WITH(validate_plan_key(l.model, l.cluster, key), Catch::Contains("--tp") && Catch::Contains("heads"));
}

TEST_CASE("per-stage data parallelism: layouts per node type, ranks, micro-batches and checks", "[analytic][stage-dp]") {
  PresetSpecs l("llama2-13b", "mixed-h100-a100-l4");  // 4 nodes each of H100, A100-80G, L4: 32 GPUs a type
  SearchSpaceOptions space = SearchSpaceOptions::beyond_fasop();
  space.zero_stages = {0};
  space.recompute = {RecomputeMode::kNone};
  space.per_stage_dp = true;
  size_t per_stage = 0;
  for (const PlanKey& k : enumerate_plan_keys(l.model, l.cluster, space)) {
    if (k.stage_dp.empty()) continue;
    ++per_stage;
    int gpus = 0, largest = 0;
    for (int d : k.stage_dp) gpus += k.tp * d, largest = std::max(largest, d);
    CHECK(gpus == 96);
    CHECK(k.dp == largest);
    CHECK(int(k.stage_dp.size()) == k.pp);
    // Every stage lies within one node type's block of 32 GPUs.
    PlanContext ctx;
    ctx.model = &l.model;
    ctx.cluster = &l.cluster;
    ctx.key = k;
    for (int s = 0; s < k.pp; ++s) {
      int first = ctx.stage_first_rank(s), last = first + k.tp * ctx.stage_dp(s) - 1;
      CHECK(first / 32 == last / 32);
      CHECK((k.mbs * k.dp) % ctx.stage_dp(s) == 0);
    }
  }
  CHECK(per_stage > 0);
  // A hand-made layout: tp 2; L4 as one stage of dp 16, A100 and H100 as two stages of dp 8.
  PlanKey key{1, 2, 16, 5, type_block_placements(l.cluster)[5]};  // L4, A100-80G, H100 order
  key.stage_dp = {16, 8, 8, 8, 8};
  CHECK_NOTHROW(validate_plan_key(l.model, l.cluster, key));
  ProfileSpec h100 = analytic_profile(l.model, l.cluster.node_types[0], {2}, {1, 2});
  ProfileSpec a100 = analytic_profile(l.model, l.cluster.node_types[1], {2}, {1, 2});
  ProfileSpec l4 = analytic_profile(l.model, l.cluster.node_types[2], {2}, {1, 2});
  AnalyticPolicy policy;
  PlanContext ctx = make_plan_context(l.model, l.cluster, {&h100, &a100, &l4}, policy, key);
  CHECK(ctx.num_microbatches == 1024 / 16);
  CHECK(ctx.stage_mbs(0) == 1);  // 16 samples a micro-batch over 16 L4 replicas
  CHECK(ctx.stage_mbs(1) == 2);  // and over 8 replicas elsewhere
  CHECK(ctx.stage_node_type == std::vector<int>{2, 1, 1, 0, 0});
  // The units of an H100 stage are timed at its 2 samples, the L4 stage's at 1.
  CHECK(ctx.unit_compute_s[0][1] == h100.forward_backward_time_s("transformer", 2, 2));
  CHECK(ctx.unit_compute_s[2][1] == l4.forward_backward_time_s("transformer", 2, 1));
  // ZeRO shards over each stage's own replicas.
  key.zero_stage = 1;
  PlanContext zero = make_plan_context(l.model, l.cluster, {&h100, &a100, &l4}, policy, key);
  CHECK(zero.partition_memory->bytes_per_param[0] == 6 + 12.0 / 16);
  CHECK(zero.partition_memory->bytes_per_param[1] == 6 + 12.0 / 8);
  key.stage_dp = {16, 8, 8, 8, 4};
  CHECK_THROWS_WITH(validate_plan_key(l.model, l.cluster, key), Catch::Contains("--stage-dp"));
  key.stage_dp = {16, 8, 8, 8, 8};
  key.dp = 8;
  CHECK_THROWS_WITH(validate_plan_key(l.model, l.cluster, key), Catch::Contains("--dp"));
}

TEST_CASE("node types may differ in GPUs per node", "[analytic][specs]") {
  const std::string yaml =
      "name: mixed-sizes\nnode_types:\n"
      "  - {name: p5.48xlarge, gpu: H100, gpus_per_node: 8, gpu_memory_gib: 80, peak_tflops: {bf16: 989.4}, "
      "memory_bandwidth_bytes_per_s: 3.35e12, intra_node_bandwidth_bits_per_s: 3.6e12, "
      "inter_node_bandwidth_bits_per_s: 3.2e12, price_usd_per_hour: 98.32}\n"
      "  - {name: g6.12xlarge, gpu: L4, gpus_per_node: 4, gpu_memory_gib: 24, peak_tflops: {bf16: 121}, "
      "memory_bandwidth_bytes_per_s: 3.0e11, intra_node_bandwidth_bits_per_s: 2.56e11, "
      "inter_node_bandwidth_bits_per_s: 4.0e10, price_usd_per_hour: 4.6}\n"
      "nodes:\n  - {type: p5.48xlarge, count: 2}\n  - {type: g6.12xlarge, count: 2}\n";
  ClusterSpec cluster = parse_cluster(yaml, "mixed-sizes.yaml");
  CHECK(cluster.num_gpus() == 24);
  CHECK(cluster.gpus_per_node() == 4);  // the bound on tp
  PresetSpecs l("llama2-7b", "aws-h100");
  AnalyticPolicy policy;
  ProfileSpec h100 = analytic_profile(l.model, cluster.node_types[0], {1, 2, 4}, {1, 2, 4, 8, 16});
  ProfileSpec l4 = analytic_profile(l.model, cluster.node_types[1], {1, 2, 4}, {1, 2, 4, 8, 16});
  PlanKey key{1, 4, 2, 3, {0, 0, 1, 1}};
  PlanContext ctx = make_plan_context(l.model, cluster, {&h100, &l4}, policy, key);
  CHECK(ctx.node_of(15) == 1);
  CHECK(ctx.node_of(16) == 2);
  CHECK(ctx.node_of(19) == 2);
  CHECK(ctx.node_of(20) == 3);
  CHECK(ctx.stage_node_type == std::vector<int>{0, 0, 1});
  // The whole analytic search runs on it; every layout uses all 24 GPUs with tp up to 4.
  SearchInput input;
  input.model = &l.model;
  input.cluster = &cluster;
  input.profiles = {&h100, &l4};
  input.policy = &policy;
  input.space = SearchSpaceOptions::beyond_fasop();
  input.memory_aware = true;
  input.refine_top = 3;
  std::vector<CandidateResult> results = run_search(input);
  REQUIRE_FALSE(results.empty());
  for (const CandidateResult& r : results) CHECK((r.plan.key.tp <= 4 && r.plan.key.tp * r.plan.key.dp * r.plan.key.pp == 24));
  CHECK_FALSE(results.front().estimate.memory.is_oom);
}
