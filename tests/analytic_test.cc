// Beyond FASOP: the exact memory-feasible partitioner against brute force, memory against hand
// calculations, analytic layer work against FLOP counts, placements, and bad spec files.
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <random>

#include "costmodel/analytic_policy.h"
#include "costmodel/stage_memory_rates.h"
#include "costmodel/zone_egress.h"
#include "profiles/analytic_profile.h"
#include "search/partitioner.h"
#include "search/search_space.h"
#include "specs/precision.h"
#include "specs/spec_error.h"
#include "specs/spec_loader.h"
#include "test_support.h"

using namespace fasop;
using fasop::testing::compositions;
using fasop::testing::made_up_cluster;
using fasop::testing::made_up_node;
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
      memory.add_stage_totals({{.per_param = 1.0, .per_activation = 1.0, .fixed = 0.5}});
      memory.held_samples.push_back(pp - s);
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
  // Activations of one layer, one sequence of 4096 tokens, tp 1, as Megatron-Core with
  // Transformer Engine keeps them: the two RMSNorms' inputs and outputs (8sbh; LLaMA trains
  // without dropout, so no masks) and their fp32 rstd (8 bytes a token), queries, keys, values
  // and the attention output (8sbh, 32 key-value heads), flash attention's fp32 log-sum-exp (4
  // bytes a head), the SwiGLU MLP's first GEMM output and activation (6sbf); with recomputation
  // only the input, 2sbh.
  const double s = 4096, h = 4096, f = 11008, a = 32;
  const double layer_per_token = 16 * h + 8 + 4 * a + 6 * f;
  CHECK(unit_activation_bytes(l.model, l.model.units[1], 1, 1, {}) == s * layer_per_token);
  CHECK(unit_activation_bytes(l.model, l.model.units[1], 1, 1, {true, false, false}) == 2 * s * h);
}

TEST_CASE("a stage's memory is its worst moment's terms, each by hand", "[analytic][memory]") {
  // LLaMA-2 7B on one H100 node: one stage of dp 8, ZeRO-3, full recomputation, micro-batch 1
  // (4096 tokens), bf16 with fp32 gradients.
  PresetSpecs l("llama2-7b", "aws-h100");
  const double s = 4096, h = 4096, f = 11008, a = 32, v = 32000, gib = 1024.0 * 1024 * 1024;
  double P = 0;
  for (const LayerUnit& u : l.model.units) P += unit_params(l.model, u, 1);
  const double layer_params = 4 * h * h + 3 * h * f + 2 * h;
  PlanKey key{.mbs = 1, .tp = 1, .dp = 8, .pp = 1, .node_order = {0}};
  key.zero_stage = 3;
  key.recompute = true;
  ClusterSpec one_node = l.cluster;
  one_node.nodes = {0};
  ProfileSpec profile = analytic_profile(l.model, one_node.node_types[0], {1}, {1});
  AnalyticPolicy policy;
  PlanContext ctx = make_plan_context(l.model, one_node, {&profile}, policy, key);
  const StageMemory memory = policy.stage_memory(ctx, {l.model.num_units()})[0];
  REQUIRE(memory.breakdown);
  const MemoryTerms& t = memory.breakdown->terms;
  // Held the whole step: ZeRO-3 shards the 2 + 4 + 4 + 8 bytes of every parameter over 8 GPUs.
  CHECK(t.weights_bytes == Approx(2 * P / 8).epsilon(1e-12));
  CHECK(t.gradients_bytes == Approx(4 * P / 8).epsilon(1e-12));
  CHECK(t.master_weights_bytes == Approx(4 * P / 8).epsilon(1e-12));
  CHECK(t.optimizer_states_bytes == Approx(8 * P / 8).epsilon(1e-12));
  // One micro-batch in flight (pp 1): the token ids (8 bytes a token), 32 layer inputs (2sbh
  // each), the head's final-norm input and output, rstd and fp32 softmax, labels and masks
  // (4h + 4 + 4v + 13 bytes a token).
  const double kept = s * (8 + 32 * 2 * h + 4 * h + 4 + 4 * v + 13);
  CHECK(t.activations_bytes == Approx(kept).epsilon(1e-12));
  // The worst moment is the backward pass of a recomputed layer: its rebuilt activations
  // (16h + 8 + 4a + 6f bytes a token) and the SwiGLU MLP's gradients (2h + 4f); the loss's
  // 16-bit logits (2v a token) are less.
  CHECK(memory.breakdown->moment == MemoryMoment::kBackward);
  CHECK(t.layer_transient_bytes == Approx(s * (16 * h + 8 + 4 * a + 6 * f + 2 * h + 4 * f)).epsilon(1e-12));
  CHECK(t.loss_bytes == 0);
  // ZeRO-3 gathers a layer ahead of the one computing (2 x 2 bytes a parameter) and holds a
  // layer's fp32 gradients before their reduce-scatter.
  CHECK(t.gathered_params_bytes == Approx(2 * 2 * layer_params).epsilon(1e-12));
  CHECK(t.unreduced_grads_bytes == Approx(4 * layer_params).epsilon(1e-12));
  // H100's fitted workspaces (cuBLAS's and Transformer Engine's), 5% of the step's dynamic
  // memory as the allocator's reserve, and outside it the CUDA context and one NCCL
  // communicator (the data-parallel group; configs/gpus/h100.yaml and the stack's defaults).
  const RuntimeMemory runtime = one_node.node_types[0].gpu_data.runtime_memory(TrainingStack::kMegatron);
  CHECK(t.workspace_bytes == Approx((runtime.workspace_gib + runtime.te_workspace_gib) * gib).epsilon(1e-12));
  const double dynamic = t.activations_bytes + t.layer_transient_bytes + t.gathered_params_bytes + t.unreduced_grads_bytes;
  CHECK(t.allocator_reserve_bytes == Approx(runtime.reserve_share * dynamic).epsilon(1e-12));
  CHECK(t.runtime_bytes == Approx((runtime.context_gib + runtime.nccl_gib_per_group) * gib).epsilon(1e-12));
  // The stage's figure is the sum, within the GPU's 80 GiB less the default 5% headroom.
  CHECK(memory.gib == Approx(t.device_bytes() / gib).epsilon(1e-12));
  CHECK(memory.gib == Approx((t.allocated_bytes() + t.allocator_reserve_bytes + t.runtime_bytes) / gib).epsilon(1e-12));
  CHECK(memory.limit_gib == Approx(80 * 0.95).epsilon(1e-12));
  CHECK(memory.breakdown->capacity_bytes == 80 * gib);
  CHECK_FALSE(policy.memory_verdict({memory}).is_oom);
}

TEST_CASE("which terms coexist: the optimizer step comes after the activations are freed", "[analytic][memory]") {
  // fp16 training (Megatron's Float16OptimizerWithFloat16Params) keeps fp16 gradients and, in
  // the optimizer step alone, an fp32 copy of them: 4 bytes a parameter that never meets the
  // activations. A stage with almost no activations peaks there; one with many, in its passes.
  PresetSpecs l("llama2-7b", "aws-h100");
  ModelSpec m = l.model;
  m.dtype = "fp16";
  ClusterSpec one_node = l.cluster;
  one_node.nodes = {0};
  ProfileSpec profile = analytic_profile(m, one_node.node_types[0], {8}, {1});
  AnalyticPolicy policy;
  PlanKey key{.mbs = 1, .tp = 8, .dp = 1, .pp = 1, .node_order = {0}};
  key.recompute = true;
  PlanContext ctx = make_plan_context(m, one_node, {&profile}, policy, key);
  double P = 0;
  for (const LayerUnit& u : m.units) P += unit_params(m, u, 8);
  const StageMemory memory = policy.stage_memory(ctx, {m.num_units()})[0];
  const MomentRates& step = ctx.partition_memory->stage_moments(0).back();
  REQUIRE(step.moment == MemoryMoment::kOptimizerStep);
  CHECK(step.per_param.optimizer_step_bytes == 4);
  CHECK(step.per_activation.activations_bytes == 0);  // the activations are gone by then
  // 16 bytes a parameter held (2 + 2 + 4 + 8) and 4 more in the step: 20 x P / tp-sharded P.
  CHECK(memory.breakdown->moment == MemoryMoment::kOptimizerStep);
  const MemoryTerms& t = memory.breakdown->terms;
  CHECK(t.weights_bytes + t.gradients_bytes + t.master_weights_bytes + t.optimizer_states_bytes == Approx(16 * P).epsilon(1e-12));
  CHECK(t.optimizer_step_bytes == Approx(4 * P).epsilon(1e-12));
  CHECK(t.activations_bytes == 0);
  CHECK(t.layer_transient_bytes == 0);
  // What stays allocated after the step (until the next step frees the copy): all of it.
  CHECK(memory.breakdown->after_step_bytes ==
        Approx(t.weights_bytes + t.gradients_bytes + t.master_weights_bytes + t.optimizer_states_bytes +
               t.optimizer_step_bytes + t.workspace_bytes).epsilon(1e-12));
  // Eight micro-batches of 8 sequences each: the forward and backward passes now hold more.
  key.mbs = 8;
  m.global_batch = 512;
  ProfileSpec profile8 = analytic_profile(m, one_node.node_types[0], {8}, {8});
  PlanContext big = make_plan_context(m, one_node, {&profile8}, policy, key);
  const StageMemory busy = policy.stage_memory(big, {m.num_units()})[0];
  CHECK(busy.breakdown->moment == MemoryMoment::kBackward);
  CHECK(busy.breakdown->terms.optimizer_step_bytes == 0);
}

TEST_CASE("torch's pipeline buffers: one per micro-batch each way, outputs held, the logits kept", "[analytic][memory]") {
  // torchtitan on torch.distributed.pipelining, 8 micro-batches of 2 samples on 4 stages; a
  // sample's stage boundary 1,000 bytes, its logits 5,000.
  PresetSpecs l("llama2-7b", "aws-h100");
  StageMemoryInputs in;
  in.model = &l.model;
  in.settings.stack = TrainingStack::kTorchtitan;
  in.pp = 4;
  in.microbatches = 8;
  in.samples = 2;
  in.boundary_bytes_per_sample = 1000;
  in.output_bytes_per_sample = 5000;
  auto buffers = [&](int stage, MemoryMoment moment) {
    in.stage = stage;
    in.held_samples = held_microbatches(in.pp, stage, in.microbatches, in.virtual_stages) * in.samples;
    for (const MomentRates& rates : stage_memory_rates(in))
      if (rates.moment == moment) return rates.fixed.pipeline_buffers_bytes;
    return -1.0;
  };
  // The first stage: 8 x 2 output-gradient buffers, and the outputs of its 4 micro-batches held.
  CHECK(buffers(0, MemoryMoment::kBackward) == 8 * 2 * 1000 + 4 * 2 * 1000);
  // A middle stage receives inputs too, and holds 3.
  CHECK(buffers(1, MemoryMoment::kBackward) == 8 * 2 * 1000 * 2 + 3 * 2 * 1000);
  // The last stage: input buffers only; nothing in the optimizer step.
  CHECK(buffers(3, MemoryMoment::kBackward) == 8 * 2 * 1000);
  CHECK(buffers(3, MemoryMoment::kOptimizerStep) == 0);
  // Before torchtitan e5ef99a it also kept every micro-batch's logits: the 7 before the one in
  // its forward pass, all 8 in the last backward.
  in.settings.pipeline_keeps_outputs = true;
  CHECK(buffers(3, MemoryMoment::kForward) == 8 * 2 * 1000 + 7 * 2 * 5000);
  CHECK(buffers(3, MemoryMoment::kBackward) == 8 * 2 * 1000 + 8 * 2 * 5000);
  // Interleaved, two chunks a rank: rank 3 runs stages 3 and 7 of 8; two receive, one sends.
  in.virtual_stages = 2;
  const double held = held_microbatches(4, 3, 8, 2) * 2;
  CHECK(buffers(3, MemoryMoment::kBackward) == 8 * 2 * 1000 * 3 + held * 1000 + 8 * 2 * 5000);
  // No pipeline, no buffers.
  in.pp = 1;
  in.virtual_stages = 1;
  CHECK(buffers(0, MemoryMoment::kBackward) == 0);
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
  // Beyond the paper, the two LayerNorms' fp32 mean and rstd, 16 bytes a token (split with the
  // rest of what tensor parallelism replicates under sequence parallelism), which
  // tests/activation_harness.py counts and the paper leaves out.
  const double stats = 16 * s * b;
  CHECK(bytes(1, false, false, false) == Approx(sbh * (34 + 5 * a * s / h) + stats).epsilon(1e-12));
  CHECK(bytes(8, false, false, false) == Approx(sbh * (10 + 24 / t + 5 * a * s / (h * t)) + stats).epsilon(1e-12));
  CHECK(bytes(8, false, false, true) == Approx(sbh * (34 / t + 5 * a * s / (h * t)) + stats / t).epsilon(1e-12));
  CHECK(bytes(8, false, true, false) == Approx(sbh * (10 + 24 / t) + stats).epsilon(1e-12));
  CHECK(bytes(8, false, true, true) == Approx(sbh * 34 / t + stats / t).epsilon(1e-12));
  CHECK(bytes(8, true, false, false) == 2 * sbh);
  CHECK(bytes(8, true, false, true) == 2 * sbh / t);
  // The paper's headline: about 5x less than tensor parallelism alone with both, here
  // (34/8) / (10 + 3 + 5 x 96 x 2048 / (12288 x 8)) = 4.25 / 23 = 0.185.
  CHECK(bytes(8, false, true, true) / bytes(8, false, false, false) == Approx(4.25 / 23.0).epsilon(1e-3));
}

TEST_CASE("torchtitan's per-op checkpointing: eager caches what its policy saves, compiled what backward reads",
          "[analytic][memory]") {
  // llama2-7b's block (h 4096, 32 heads, no grouping: queries, keys and values h wide each,
  // SwiGLU f 11008), bf16, micro-batch 1. The policy saves wq's, wv's, w1's and w2's outputs,
  // attention's output and fp32 log-sum-exp; the block's input is kept. Compiled, w2's output
  // (and under tp its reduce-scatter) is dropped: the residual add's gradient reads neither.
  const ModelSpec m = PresetSpecs("llama2-7b", "aws-h100").model;
  const LayerUnit& layer = m.units[1];
  const double s = m.sequence, h = 4096, f = 11008, a = 32;
  auto bytes = [&](int tp, bool compiled) {
    ActivationMode mode{.sequence_parallel = tp > 1, .stack = TrainingStack::kTorchtitan, .op_selective = true,
                        .compiled = compiled};
    return unit_activation_bytes(m, layer, tp, 1, mode);
  };
  const double saved_tp1 = 2 * h + 2 * h + 2 * h + 2 * h + 4 * a + 2 * f;  // input, wq, wv, attention, lse, w1
  CHECK(bytes(1, false) == Approx(s * (saved_tp1 + 2 * h)).epsilon(1e-12));
  CHECK(bytes(1, true) == Approx(s * saved_tp1).epsilon(1e-12));
  // tp 2: the input over the sequence, the GEMM outputs over the heads and width; w2's output
  // whole, before its reduce-scatter; the two reduce-scatters' outputs over the sequence.
  const double saved_tp2 = 2 * h / 2 + (2 * h + 2 * h + 2 * h + 4 * a + 2 * f) / 2 + 2 * h / 2;
  CHECK(bytes(2, false) == Approx(s * (saved_tp2 + 2 * h + 2 * h / 2)).epsilon(1e-12));
  CHECK(bytes(2, true) == Approx(s * saved_tp2).epsilon(1e-12));
}

TEST_CASE("the distributed optimizer's bytes per parameter are Megatron-LM's", "[analytic][memory]") {
  // Megatron-LM docs (distrib_optimizer.md): fp16 parameters and gradients 20 bytes, 4 + 16/d
  // with the distributed optimizer (ZeRO-1), of which the fp32 copy of the gradients (4, 4/d)
  // lives only in the optimizer step; bf16 parameters with fp32 gradients 18, 6 + 12/d.
  for (int d : {1, 2, 8, 64}) {
    CHECK(AnalyticPolicy::bytes_per_param(0, d, "fp16") == 16.0);
    CHECK(AnalyticPolicy::bytes_per_param(1, d, "fp16") == 4 + 12.0 / d);
    CHECK(AnalyticPolicy::bytes_per_param(0, d, "bf16") == 18.0);
    CHECK(AnalyticPolicy::bytes_per_param(1, d, "bf16") == 6 + 12.0 / d);
  }
  CHECK(AnalyticPolicy::gradient_bytes("fp16") == 2);  // Megatron reduces fp16 gradients as fp16
  CHECK(AnalyticPolicy::gradient_bytes("bf16") == 4);  // and bf16 ones in fp32
  // --grad-reduce-in-bf16: bf16 gradients, 2 + 2 + 12 = 16 bytes, 4 + 12/d with the distributed
  // optimizer, 16/d with ZeRO-3; fp8 training's gradients are its bf16 parameters'; fp16's
  // already are 2 bytes and fp32 training has no bf16 to reduce in.
  for (int d : {1, 2, 8, 64}) {
    CHECK(AnalyticPolicy::bytes_per_param(0, d, "bf16", true) == 16.0);
    CHECK(AnalyticPolicy::bytes_per_param(1, d, "bf16", true) == 4 + 12.0 / d);
    CHECK(AnalyticPolicy::bytes_per_param(3, d, "mxfp8", true) == 16.0 / d);
    CHECK(AnalyticPolicy::bytes_per_param(1, d, "fp16", true) == 4 + 12.0 / d);
  }
  CHECK(AnalyticPolicy::gradient_bytes("bf16", true) == 2);
  CHECK(AnalyticPolicy::gradient_bytes("fp8", true) == 2);
  CHECK(AnalyticPolicy::gradient_bytes("fp32", true) == 4);
}

TEST_CASE("the interleaved schedule's bubble is (pp - 1) / (v m)", "[analytic][pipeline]") {
  // 4 equal stages, 1 s forward and 2 s backward a micro-batch, no sends, m = 8 micro-batches:
  // 1F1B takes (m + pp - 1) x 3 s = 33 s; with v = 2 chunks a rank (m + (pp - 1) / v) x 3 s =
  // 28.5 s, a bubble of 4.5 s over the 24 s of work: (pp - 1) / (v m) = 3 / 16.
  PresetSpecs g("gpt2xl", "aws-a100-80g");
  PlanKey key{.mbs = 1, .tp = 1, .dp = 1, .pp = 4, .node_order = {0}};
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
  blocking.execution.overlap_p2p_communication = false;
  CHECK(AnalyticPolicy(blocking).pipeline(ctx, sending).pipeline_s == Approx((8 + 1.5) * (3.0 + 2 * 0.2)));
  // Overlapped (Megatron's default with interleaving): the sends show only in the fill and drain.
  CHECK(policy.pipeline(ctx, sending).pipeline_s < (8 + 1.5) * (3.0 + 2 * 0.2));
  CHECK(policy.pipeline(ctx, sending).pipeline_s >= (8 + 1.5) * 3.0);
  // By hand: m x 3 s of steady work, (pp - 1) / v x 3 s of fill and drain, and every stage's
  // sends once (the fill and drain cross each boundary both ways): 24 + 4.5 + 4 x 0.2.
  CHECK(policy.pipeline(ctx, sending).pipeline_s == Approx(8 * 3.0 + 1.5 * 3.0 + 4 * 0.2));
  // Sends longer than the compute bound the steady state: v x 2 s a micro-batch.
  std::vector<StageTiming> slow_links(4, StageTiming{1.0, 2.0, 1.0, 1.0});
  CHECK(policy.pipeline(ctx, slow_links).pipeline_s == Approx(8 * 4.0 + 1.5 * 3.0 + 4 * 2.0));
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

namespace {

/// Parameters of units [first, first + count) on one GPU at tp 1.
/// Parameters of units [first, first + count) at tp 1; a stage that holds both the embedding and
/// a tied head holds one copy of their weight (h x v), Megatron's shared embedding.
double params_of(const ModelSpec& m, int first, int count) {
  double p = 0;
  for (int u = first; u < first + count; ++u) p += unit_params(m, m.units[u], 1);
  if (m.tied_embeddings && first == 0 && first + count == m.num_units()) p -= double(m.hidden) * m.vocab;
  return p;
}

}  // namespace

TEST_CASE("GPU data: GEMM shape, memory, attention, launches, collectives, overlapped tp", "[analytic][profile]") {
  // The made-up GPU: 100 TFLOP/s, 1e12 B/s memory, 8 GPUs on a 1e12 bit/s NVLink, 1 us latency;
  // here attention at a quarter of the peak, Megatron's launches free and eager ones 100 us.
  NodeType node = made_up_node();
  GpuSpec& gpu = node.gpu_data;
  gpu.precisions["fp16"].attention_peak_share = 0.25;
  gpu.launch.dispatch_s = {{"megatron", 0}, {"eager", 1e-4}};
  const PrecisionEfficiency e = gpu.precisions["fp16"];
  // GEMM shape: each dimension d costs d / (d + 64).
  Gemm g{1024, 448, 64};
  PrecisionEfficiency shaped = e;
  shaped.gemm_half_dim = 64;
  CHECK(gemm_efficiency(g, shaped, 2) == Approx(0.5 * 1024.0 / 1088 * 448.0 / 512 * 64.0 / 128).epsilon(1e-12));
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
  overlap.execution.tp_comm_overlap = true;
  CHECK(pass_time(w, 4, node, "fp16", overlap).tp_comm_s == Approx(0.1 * ring_s).epsilon(1e-12));
  // An eager stack launching 10 kernels from 10 host ops at 100 us each: the host bounds the pass.
  LayerOptions eager;
  eager.stack = Stack::kEager;
  PassWork small;
  small.kernels = 10, small.host_ops = 10;
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

TEST_CASE("overlapped tp communication: the exposed remainder plus the slowdown on the hidden part", "[analytic][profile]") {
  NodeType node = made_up_node();
  node.gpu_data.nvlink = {0.8, 1e8};
  PassWork w;
  w.gemms = {{10000, 10000, 1250}};  // 2.5e11 FLOPs at 50 TFLOP/s: 5 ms
  w.attention_flops = 1e11;          // at 40 TFLOP/s: 2.5 ms
  w.memory_bytes = 1e9;              // at 0.5e12 B/s: 2 ms
  w.kernels = 100;                   // 100 x 1 us: 0.1 ms
  w.tp_collectives = 2;
  w.tp_collective_bytes = 1e9;
  const double gpu_s = 5e-3 + 2.5e-3 + 2e-3 + 0.1e-3;
  // tp 4 on NVLink at 0.8 x 1e9 / (1e9 + 1e8) of the link: each ring 2 x 3 x 1 us +
  // 2 x 3/4 x 8e9 / 1e12 / (0.8 / 1.1) = 6 us + 16.5 ms.
  const double ring_s = 6e-6 + 12e-3 / (0.8 / 1.1);
  PassTime plain = pass_time(w, 4, node, "fp16");
  CHECK(plain.tp_comm_s == Approx(2 * ring_s).epsilon(1e-12));
  CHECK(plain.seconds == Approx(gpu_s + 2 * ring_s).epsilon(1e-12));
  // Overlapped, the GEMMs' 5 ms hide 5 ms of the 33.012: the rest exposed, the hidden 5 ms at 10%.
  LayerOptions overlap;
  overlap.execution.tp_comm_overlap = true;
  PassTime t = pass_time(w, 4, node, "fp16", overlap);
  CHECK(t.tp_comm_s == Approx(2 * ring_s - 5e-3 + 0.1 * 5e-3).epsilon(1e-12));
  CHECK(t.seconds == Approx(gpu_s + 2 * ring_s - 5e-3 + 0.1 * 5e-3).epsilon(1e-12));
  // The analytic profile keeps a layer's tp communication apart (ProfileSpec::tp_comm_s), and
  // the plan context has it per unit beside the unit's time.
  ModelSpec m = gpt_model(1024, 16, 4, 1024, 51200);
  NodeType real = made_up_node();
  ProfileSpec profile = analytic_profile(m, real, {2}, {1});
  LayerTime layer = layer_time(m, m.units[1], 2, 1, real);
  CHECK(profile.layer_comm_time_s("transformer", 2, 1) == Approx(layer.forward.tp_comm_s + layer.backward.tp_comm_s).epsilon(1e-12));
  CHECK(profile.layer_comm_time_s("transformer", 2, 1) > 0);
  AnalyticPolicy policy;
  PlanKey key{.mbs = 1, .tp = 2, .dp = 4, .pp = 1, .node_order = {0}};
  ClusterSpec cluster = made_up_cluster(real, 1);
  PlanContext ctx = make_plan_context(m, cluster, {&profile}, policy, key);
  CHECK(ctx.unit_layer_comm_s[0][1] == profile.layer_comm_time_s("transformer", 2, 1));
  CHECK(ctx.unit_compute_s[0][1] == profile.forward_backward_time_s("transformer", 2, 1));
}

TEST_CASE("gradients are reduced in buckets under the last backward pass", "[analytic][step]") {
  // K buckets of c seconds, produced uniformly by a backward pass of W seconds, reduced in turn
  // on one stream: exposed max(c, K c - W (K - 1) / K).
  CHECK(AnalyticPolicy::bucketed_exposed_s(4, 1e-3, 2e-3) == Approx(2.5e-3).epsilon(1e-12));  // max(1, 4 - 1.5) ms
  CHECK(AnalyticPolicy::bucketed_exposed_s(4, 1e-3, 10e-3) == Approx(1e-3).epsilon(1e-12));   // the last bucket only
  CHECK(AnalyticPolicy::bucketed_exposed_s(1, 1e-3, 10e-3) == Approx(1e-3).epsilon(1e-12));   // one bucket waits for all
  // Megatron-Core's bucket: max(40e6, 1e6 x dp) parameters.
  CHECK(AnalyticPolicy::gradient_buckets(100e6, 8) == 3);
  CHECK(AnalyticPolicy::gradient_buckets(100e6, 64) == 2);  // 64e6 a bucket
  CHECK(AnalyticPolicy::gradient_buckets(30e6, 8) == 1);
  CHECK(AnalyticPolicy::gradient_buckets(100e6, 8, 10e6) == 10);

  // A whole plan: one made-up node of 8 GPUs, dp 8, the whole model on one stage, fp16
  // gradients (2 bytes), buckets of P / 3.5 parameters: K = 4 of P / 4 each. The link's
  // bandwidth makes one bucket's all-reduce 2 x 7/8 x 8 x (2 P / 4) bits / bandwidth = 1 ms.
  ModelSpec m = gpt_model(1024, 16, 8, 1024, 51200);
  const double P = params_of(m, 0, m.num_units());
  NodeType node = made_up_node();
  node.intra_node_latency_s = 0;
  node.intra_node_bandwidth_bits_per_s = 2 * 7.0 / 8 * 8 * (2 * P / 4) / 1e-3;
  ClusterSpec cluster = made_up_cluster(node, 1);
  ProfileSpec profile = analytic_profile(m, node, {1}, {1});
  AnalyticOptions options;
  options.execution.ddp_bucket_size = P / 3.5;
  AnalyticPolicy policy(options);
  PlanKey key{.mbs = 1, .tp = 1, .dp = 8, .pp = 1, .node_order = {0}};
  PlanContext ctx = make_plan_context(m, cluster, {&profile}, policy, key);
  const std::vector<int> whole{m.num_units()};
  std::vector<StageTiming> timings{{1e-3, 2e-3, 0, 0}};
  std::vector<StageSync> sync = policy.stage_syncs(ctx, whole, &timings);
  CHECK(sync[0].buckets == 4);
  CHECK(sync[0].reduce_s == Approx(4e-3).epsilon(1e-12));
  CHECK(sync[0].reduce_exposed_s == Approx(2.5e-3).epsilon(1e-12));
  // The hidden 1.5 ms slow the backward pass's GEMMs by 10% of it.
  CHECK(sync[0].reduce_overlap_s == Approx(0.1 * 1.5e-3).epsilon(1e-12));
  CHECK(policy.dp_allreduce_s(ctx, whole, &timings)[0] == Approx(2.5e-3 + 0.15e-3).epsilon(1e-12));
  timings[0].backward_s = 10e-3;
  CHECK(policy.dp_allreduce_s(ctx, whole, &timings)[0] == Approx(1e-3 + 0.1 * 3e-3).epsilon(1e-12));
  // Without overlap: one bucket of every gradient, 4 ms, all after the backward pass.
  AnalyticOptions blocking = options;
  blocking.execution.overlap_grad_reduce = false;
  std::vector<StageSync> after = AnalyticPolicy(blocking).stage_syncs(ctx, whole, &timings);
  CHECK(after[0].buckets == 1);
  CHECK(after[0].reduce_exposed_s == Approx(4e-3).epsilon(1e-12));
  CHECK(after[0].reduce_overlap_s == 0);
  // The ring's bus bandwidth by message size: at half_bytes = a bucket's bytes (2 P / 4) a
  // bucket reaches half the link, 2 ms; one bucket of all (4 x the bytes) 4 / 5 of it, 5 ms.
  NodeType sized = node;
  sized.gpu_data.nvlink = {1.0, 2 * P / 4};
  ClusterSpec sized_cluster = made_up_cluster(sized, 1);
  PlanContext sized_ctx = make_plan_context(m, sized_cluster, {&profile}, policy, key);
  CHECK(policy.stage_syncs(sized_ctx, whole, &timings)[0].reduce_s == Approx(4 * 2e-3).epsilon(1e-12));
  CHECK(AnalyticPolicy(blocking).stage_syncs(sized_ctx, whole, &timings)[0].reduce_s == Approx(5e-3).epsilon(1e-12));
  // The distributed optimizer (ZeRO-1) reduce-scatters: half the ring, 0.5 ms a bucket, under a
  // 2 ms backward max(0.5, 2 - 1.5) = 0.5 ms exposed; then it all-gathers the 2-byte parameters
  // (half a ring of as many bytes: 0.5 ms a bucket), all 2 ms after the optimizer step.
  ctx.key.zero_stage = 1;
  timings[0].backward_s = 2e-3;
  std::vector<StageSync> zero1 = policy.stage_syncs(ctx, whole, &timings);
  CHECK(zero1[0].reduce_s == Approx(2e-3).epsilon(1e-12));
  CHECK(zero1[0].reduce_exposed_s == Approx(0.5e-3).epsilon(1e-12));
  CHECK(zero1[0].gather_s == Approx(2e-3).epsilon(1e-12));
  CHECK(zero1[0].gather_exposed_s == Approx(2e-3).epsilon(1e-12));
  CHECK(zero1[0].gather_overlap_s == 0);
  // bf16 training reduces fp32 gradients, 4 bytes: twice the bytes, 2 ms a bucket, 8 ms in all;
  // with --grad-reduce-in-bf16 2 bytes again, 4 ms, and the parameter gather (bf16) unchanged.
  key.zero_stage = 0;
  m.dtype = "bf16";
  CHECK(policy.stage_syncs(make_plan_context(m, cluster, {&profile}, policy, key), whole, &timings)[0].reduce_s ==
        Approx(8e-3).epsilon(1e-12));
  m.grad_reduce_in_bf16 = true;
  CHECK(policy.stage_syncs(make_plan_context(m, cluster, {&profile}, policy, key), whole, &timings)[0].reduce_s ==
        Approx(4e-3).epsilon(1e-12));
}

TEST_CASE("a data-parallel ring pays the network's latency only where it crosses nodes", "[analytic][step]") {
  // 32 ranks on 4 made-up nodes of 8 (tp 1, pp 1), fp16 gradients reduced in one bucket after
  // the backward pass. NCCL's tuning model: of a ring all-reduce's 2 x 31 = 62 steps, 2 x 4 = 8
  // cross the network (10 us each) and 54 stay on NVLink (1 us each): 134 us of latency. The
  // bytes: 2 x 31/32 x 8 x 2 P bits at the network's 8e11 bit/s (the ring alone on each node's
  // NICs, tp 1).
  ModelSpec m = gpt_model(1024, 16, 8, 1024, 51200);
  const double P = params_of(m, 0, m.num_units());
  NodeType node = made_up_node();
  ClusterSpec cluster = made_up_cluster(node, 4);
  ProfileSpec profile = analytic_profile(m, node, {1}, {1});
  AnalyticOptions options;
  options.execution.overlap_grad_reduce = false;
  AnalyticPolicy policy(options);
  PlanKey key{.mbs = 1, .tp = 1, .dp = 32, .pp = 1, .node_order = {0, 0, 0, 0}};
  PlanContext ctx = make_plan_context(m, cluster, {&profile}, policy, key);
  const std::vector<int> whole{m.num_units()};
  std::vector<StageTiming> timings{{1e-3, 2e-3, 0, 0}};
  const double latency_s = 8 * 1e-5 + 54 * 1e-6, bytes_s = 2 * 31.0 / 32 * 8 * 2 * P / 8e11;
  CHECK(policy.stage_syncs(ctx, whole, &timings)[0].reduce_s == Approx(latency_s + bytes_s).epsilon(1e-12));
  // On one node (dp 8) every step stays on NVLink: 14 steps of 1 us at the node's 1e12 bit/s.
  ClusterSpec one = made_up_cluster(node, 1);
  PlanKey key8{.mbs = 1, .tp = 1, .dp = 8, .pp = 1, .node_order = {0}};
  PlanContext ctx8 = make_plan_context(m, one, {&profile}, policy, key8);
  CHECK(policy.stage_syncs(ctx8, whole, &timings)[0].reduce_s ==
        Approx(14 * 1e-6 + 2 * 7.0 / 8 * 8 * 2 * P / 1e12).epsilon(1e-12));
}

TEST_CASE("the parameter all-gather hides under the first forward and the pipeline's fill", "[analytic][step]") {
  // Two stages of dp 4 on one made-up node, ZeRO-1 with overlap_param_gather, buckets of
  // P0 / 3.5 parameters (4 on each stage). The bandwidth makes stage 0's bucket all-gather
  // 3/4 x 8 x (2 P0 / 4) bits / bandwidth = 1 ms.
  ModelSpec m = gpt_model(1024, 16, 8, 1024, 51200);
  const std::vector<int> partition{5, 5};  // the embedding and 4 layers; 4 layers and the head
  const double P0 = params_of(m, 0, 5), P1 = params_of(m, 5, 5);
  NodeType node = made_up_node();
  node.intra_node_latency_s = 0;
  node.intra_node_bandwidth_bits_per_s = 3.0 / 4 * 8 * (2 * P0 / 4) / 1e-3;
  ClusterSpec cluster = made_up_cluster(node, 1);
  ProfileSpec profile = analytic_profile(m, node, {1}, {1});
  AnalyticOptions options;
  options.execution.overlap_param_gather = true;
  options.execution.ddp_bucket_size = P0 / 3.5;
  AnalyticPolicy policy(options);
  PlanKey key{.mbs = 1, .tp = 1, .dp = 4, .pp = 2, .node_order = {0}};
  key.zero_stage = 1;
  PlanContext ctx = make_plan_context(m, cluster, {&profile}, policy, key);
  // Stage 0 forwards for 1 ms, sends for 0.2 ms; stage 1's first forward waits 1.2 ms for them.
  std::vector<StageTiming> timings{{1e-3, 2e-3, 0.2e-3, 0}, {1e-3, 2e-3, 0, 0.2e-3}};
  std::vector<StageSync> sync = policy.stage_syncs(ctx, partition, &timings);
  REQUIRE(sync[0].buckets == 4);
  REQUIRE(sync[1].buckets == 4);
  // Stage 0: max(1, 4 x 1 - 1 x 3/4) = 3.25 ms exposed, the other 0.75 ms hidden at 10%.
  CHECK(sync[0].gather_s == Approx(4e-3).epsilon(1e-12));
  CHECK(sync[0].gather_exposed_s == Approx(3.25e-3).epsilon(1e-12));
  CHECK(sync[0].gather_overlap_s == Approx(0.1 * 0.75e-3).epsilon(1e-12));
  // Stage 1 (its buckets P1 / P0 as long) has 1.2 ms of slack on top.
  const double c1 = 1e-3 * P1 / P0;
  CHECK(sync[1].gather_exposed_s == Approx(std::max(c1, 4 * c1 - 0.75e-3) - 1.2e-3).epsilon(1e-12));
  CHECK(sync[1].gather_overlap_s == Approx(0.1 * (4 * c1 - sync[1].gather_exposed_s)).epsilon(1e-12));
  // A long first forward (10 ms) leaves the first bucket only, which the slack hides on stage 1.
  timings[0].forward_s = timings[1].forward_s = 10e-3;
  sync = policy.stage_syncs(ctx, partition, &timings);
  CHECK(sync[0].gather_exposed_s == Approx(1e-3).epsilon(1e-12));
  CHECK(sync[1].gather_exposed_s == 0);
  // Without overlap_param_gather every bucket waits after the optimizer step.
  AnalyticOptions blocking = options;
  blocking.execution.overlap_param_gather = false;
  CHECK(AnalyticPolicy(blocking).stage_syncs(ctx, partition, &timings)[1].gather_exposed_s == Approx(4 * c1).epsilon(1e-12));
  // The step adds the slowest stage's optimizer step and exposed all-gather (after_sync_s).
  std::vector<double> after = policy.after_sync_s(ctx, partition, &timings);
  CHECK(after[0] == Approx(sync[0].optimizer_s + 1e-3 + 0.1 * 3e-3).epsilon(1e-12));
}

TEST_CASE("the optimizer step moves 34 bytes a local parameter at the GPU's memory bandwidth", "[analytic][step]") {
  // fp32 gradient read 4, master weight and moments read and written 12 + 12, the 16-bit weight
  // written 2, the gradient norm's pass 4: 34 bytes at 1e12 B/s x 0.5.
  CHECK(AnalyticPolicy::kOptimizerBytesPerParam == 34);
  ModelSpec m = gpt_model(1024, 16, 8, 1024, 51200);
  const double P = params_of(m, 0, m.num_units());
  NodeType node = made_up_node();
  ClusterSpec cluster = made_up_cluster(node, 1);
  ProfileSpec profile = analytic_profile(m, node, {1}, {1});
  AnalyticPolicy policy;
  PlanKey key{.mbs = 1, .tp = 1, .dp = 8, .pp = 1, .node_order = {0}};
  PlanContext ctx = make_plan_context(m, cluster, {&profile}, policy, key);
  const std::vector<int> whole{m.num_units()};
  // Without ZeRO each GPU updates every parameter of its stage; with ZeRO its 1/dp.
  CHECK(policy.stage_syncs(ctx, whole)[0].optimizer_s == Approx(34 * P / (1e12 * 0.5)).epsilon(1e-12));
  for (int zero : {1, 2, 3}) {
    ctx.key.zero_stage = zero;
    CHECK(policy.stage_syncs(ctx, whole)[0].optimizer_s == Approx(34 * P / 8 / (1e12 * 0.5)).epsilon(1e-12));
  }
}

TEST_CASE("FSDP gathers each unit ahead of the compute: what the pass cannot hide is exposed", "[analytic][step]") {
  // ZeRO-3 on one made-up node, dp 8: every unit's 2-byte parameters gathered before its
  // forward and its backward (7/8 x 8 x 2 p bits / bandwidth each, no latency), its 2-byte
  // gradients reduce-scattered after its backward (as long). Every unit computes 3 ms a
  // micro-batch: forward Cf = units x 1 ms, backward 2 Cf. The bandwidth makes all the stage's
  // gathers G = 2 Cf.
  ModelSpec m = gpt_model(1024, 16, 8, 1024, 51200);
  const int n = m.num_units();
  const double P = params_of(m, 0, n), Cf = n * 1e-3;
  NodeType node = made_up_node();
  node.intra_node_latency_s = 0;
  node.intra_node_bandwidth_bits_per_s = 7.0 * 2 * P / (2 * Cf);
  ClusterSpec cluster = made_up_cluster(node, 1);
  ProfileSpec profile = analytic_profile(m, node, {1}, {1});
  AnalyticPolicy policy;
  PlanKey key{.mbs = 1, .tp = 1, .dp = 8, .pp = 1, .node_order = {0}};
  key.zero_stage = 3;
  PlanContext ctx = make_plan_context(m, cluster, {&profile}, policy, key);
  ctx.unit_compute_s[0].assign(n, 3e-3);
  ctx.unit_layer_comm_s[0].assign(n, 0);
  const std::vector<int> whole{n};
  auto gather = [&](int u) { return 7.0 * 2 * unit_params(m, m.units[u], 1) / node.intra_node_bandwidth_bits_per_s; };
  const double G = 2 * Cf;
  REQUIRE(gather(0) < Cf);  // the embedding's gather, the first, is under the pass
  // Forward: max(the first unit's gather, G - Cf) = Cf exposed, the other Cf hidden at 10%.
  const double forward_exposed = std::max(gather(0), G - Cf);
  CHECK(forward_exposed == Approx(Cf).epsilon(1e-12));
  // Backward: gathers and reduce-scatters, 2 G = 4 Cf, under 2 Cf: max(the last unit's gather
  // + the first unit's reduce-scatter, 4 Cf - 2 Cf) = 2 Cf exposed.
  const double backward_exposed = std::max(gather(n - 1) + gather(0), 2 * G - 2 * Cf);
  CHECK(backward_exposed == Approx(2 * Cf).epsilon(1e-12));
  std::vector<StageTiming> t = policy.stage_timings(ctx, whole);
  CHECK(t[0].forward_s == Approx(Cf + Cf + 0.1 * Cf).epsilon(1e-12));
  CHECK(t[0].backward_s == Approx(2 * Cf + 2 * Cf + 0.1 * 2 * Cf).epsilon(1e-12));
  StagePassParts parts = policy.pass_parts(ctx, whole)[0];
  CHECK(parts.compute_s == Approx(3 * Cf).epsilon(1e-12));
  CHECK(parts.gather_s == Approx(3 * Cf).epsilon(1e-12));
  CHECK(parts.overlap_s == Approx(0.1 * 3 * Cf).epsilon(1e-12));
  CHECK(parts.compute_s + parts.layer_comm_s + parts.gather_s + parts.overlap_s ==
        Approx(t[0].forward_s + t[0].backward_s).epsilon(1e-12));
  // Gradients are reduce-scattered inside every backward pass: nothing left for after it.
  CHECK(policy.dp_allreduce_s(ctx, whole)[0] == 0);
  // A pass long enough hides all but the first unit's collectives.
  ctx.unit_compute_s[0].assign(n, 30e-3);
  std::vector<StageTiming> long_passes = policy.stage_timings(ctx, whole);
  CHECK(long_passes[0].forward_s == Approx(10 * Cf + gather(0) + 0.1 * (G - gather(0))).epsilon(1e-12));
  ctx.unit_compute_s[0].assign(n, 3e-3);
  // Without prefetch every collective waits.
  AnalyticOptions no_prefetch;
  no_prefetch.execution.zero3_prefetch = false;
  std::vector<StageTiming> waiting = AnalyticPolicy(no_prefetch).stage_timings(ctx, whole);
  CHECK(waiting[0].forward_s == Approx(Cf + G).epsilon(1e-12));
  CHECK(waiting[0].backward_s == Approx(2 * Cf + 2 * G).epsilon(1e-12));
}

TEST_CASE("torchtitan's FSDP under pipelining gathers and reduce-scatters once a step", "[analytic][step][torchtitan]") {
  // Two stages of dp 4 on one made-up node, ZeRO-3. On Megatron's stack every micro-batch
  // gathers and reduce-scatters each unit; on torchtitan's the stage's parameters stay gathered
  // over the micro-batches and its gradients are reduce-scattered once: half a ring of each
  // stage's 2-byte parameters (3/4 x 8 x 2 P bits / bandwidth) and of its gradients, a unit a
  // bucket, as ZeRO 1-2's overlapped buckets.
  ModelSpec m = gpt_model(1024, 16, 8, 1024, 51200);
  const int n = m.num_units();
  NodeType node = made_up_node();
  node.intra_node_latency_s = 0;
  ClusterSpec cluster = made_up_cluster(node, 1);
  ProfileSpec profile = analytic_profile(m, node, {1}, {1});
  PlanKey key{.mbs = 1, .tp = 1, .dp = 4, .pp = 2, .node_order = {0}};
  key.zero_stage = 3;
  const std::vector<int> partition{n / 2, n - n / 2};
  AnalyticPolicy megatron;
  AnalyticOptions titan_options;
  titan_options.memory.stack = TrainingStack::kTorchtitan;
  AnalyticPolicy titan(titan_options);
  PlanContext ctx = make_plan_context(m, cluster, {&profile}, megatron, key);
  CHECK(megatron.pass_parts(ctx, partition)[0].gather_s > 0);
  const StagePassParts parts = titan.pass_parts(ctx, partition)[0];
  CHECK(parts.gather_s == 0);
  CHECK(parts.overlap_s == 0);
  const std::vector<StageSync> syncs = titan.stage_syncs(ctx, partition);
  for (int s = 0; s < 2; ++s) {
    const double P = stage_params(ctx, partition, s), half_ring_per_byte = 3.0 / 4 * 8 / node.intra_node_bandwidth_bits_per_s;
    CHECK(syncs[s].buckets == partition[s]);
    CHECK(syncs[s].gather_s == Approx(half_ring_per_byte * activation_bytes(m.dtype) * P).epsilon(1e-9));
    CHECK(syncs[s].reduce_s == Approx(half_ring_per_byte * AnalyticPolicy::gradient_bytes(m) * P).epsilon(1e-9));
    CHECK(syncs[s].reduce_exposed_s > 0);  // the last unit's, at least
  }
  // Between zones each ring edge then carries a gather and a reduce-scatter a step, not three
  // collectives a micro-batch.
  const double e = activation_bytes(m.dtype), g = AnalyticPolicy::gradient_bytes(m);
  CHECK(ring_edge_bytes(m, 3, 4, 8, 1e9, true) == Approx(0.75 * 1e9 * (e + g)).epsilon(1e-12));
  CHECK(ring_edge_bytes(m, 3, 4, 8, 1e9) == Approx(8 * 0.75 * 1e9 * (2 * e + g)).epsilon(1e-12));
  // Without pipelining torchtitan reshards after each forward: every micro-batch again.
  key.pp = 1, key.dp = 8;
  PlanContext one_stage = make_plan_context(m, cluster, {&profile}, titan, key);
  CHECK(titan.pass_parts(one_stage, {n})[0].gather_s > 0);
}

TEST_CASE("a step's terms add up to its time", "[analytic][step]") {
  ModelSpec m = gpt_model(1024, 16, 8, 1024, 51200);  // global batch 64 (gpt2xl's)
  const int n = m.num_units();
  NodeType node = made_up_node();
  ClusterSpec cluster = made_up_cluster(node, 1);
  ProfileSpec profile = analytic_profile(m, node, {1}, {1});
  {
    // One stage of dp 8, m = 64 / 8 = 8 micro-batches; every unit 3 ms, 0.3 ms of it tp
    // communication: compute m x 0.9 x 3n ms, tp comm m x 0.1 x 3n ms, no bubble or sends; the
    // gradient all-reduce and the optimizer step as stage_syncs has them.
    AnalyticPolicy policy;
    PlanKey key{.mbs = 1, .tp = 1, .dp = 8, .pp = 1, .node_order = {0}};
    PlanContext ctx = make_plan_context(m, cluster, {&profile}, policy, key);
    ctx.unit_compute_s[0].assign(n, 3e-3);
    ctx.unit_layer_comm_s[0].assign(n, 0.3e-3);
    const std::vector<int> whole{n};
    PlanEstimate e = estimate_plan(ctx, policy, whole, 1, nullptr, true);
    StageSync sync = policy.stage_syncs(ctx, whole)[0];
    const StepBreakdown& t = e.breakdown;
    CHECK(t.compute_s == Approx(8 * 0.9 * 3e-3 * n).epsilon(1e-12));
    CHECK(t.layer_comm_s == Approx(8 * 0.1 * 3e-3 * n).epsilon(1e-12));
    CHECK(t.bubble_s == Approx(0).margin(1e-12));
    CHECK(t.sends_s == 0);
    CHECK(t.dp_comm_s == Approx(sync.reduce_exposed_s).epsilon(1e-12));
    CHECK(t.overlap_cost_s == Approx(sync.reduce_overlap_s).epsilon(1e-12));
    CHECK(t.optimizer_s == Approx(sync.optimizer_s).epsilon(1e-12));
    CHECK(t.optimizer_s > 0);
    CHECK(t.embedding_s == 0);
    CHECK(t.total_s() == Approx(e.step_time_s).epsilon(1e-12));
    CHECK(e.step_time_s == Approx(8 * 3e-3 * n + sync.after_pipeline_s() + sync.after_sync_s()).epsilon(1e-12));
  }
  {
    // Two stages of dp 4, the distributed optimizer with both overlaps, interleaved or not:
    // every term non-negative, the sum the step.
    AnalyticOptions options;
    options.execution.overlap_param_gather = true;
    AnalyticPolicy policy(options);
    for (int v : {1, 2}) {
      PlanKey key{.mbs = 1, .tp = 1, .dp = 4, .pp = 2, .node_order = {0}};
      key.zero_stage = 1;
      key.virtual_stages = v;
      PlanContext ctx = make_plan_context(m, cluster, {&profile}, policy, key);
      PlanEstimate e = estimate_plan(ctx, policy, {5, 5}, 1, nullptr, true);
      const StepBreakdown& t = e.breakdown;
      INFO("v " << v);
      for (double term : {t.compute_s, t.bubble_s, t.layer_comm_s, t.sends_s, t.dp_comm_s, t.overlap_cost_s, t.optimizer_s,
                          t.embedding_s})
        CHECK(term >= -1e-15);
      CHECK(t.bubble_s > 0);
      CHECK(t.sends_s > 0);
      CHECK(t.embedding_s == e.embedding_allreduce_s);
      CHECK(t.total_s() == Approx(e.step_time_s).epsilon(1e-12));
      // The search's lower bound stays below the step.
      CHECK(policy.step_time_lower_bound(ctx, {5, 5}) <= e.step_time_s * (1 + 1e-12));
    }
  }
  {
    // FASOP's policy: its step as it was (the reproduction tests hold it to the bit), as terms.
    fasop::testing::Presets f("gpt2xl", "fasop-8nodes");
    PlanContext ctx = f.context(1, 1, 2, 16);
    std::vector<int> partition{4, 3, 3, 3, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 4, 4};
    PlanEstimate e = estimate_plan(ctx, f.policy, partition, kFasopIterations, nullptr, true);
    const StepBreakdown& t = e.breakdown;
    CHECK(t.optimizer_s == 0);
    CHECK(t.layer_comm_s == 0);
    CHECK(t.overlap_cost_s == 0);
    CHECK(t.dp_comm_s == e.dp_allreduce_s);
    CHECK(t.embedding_s == e.embedding_allreduce_s);
    CHECK(t.compute_s > 0);
    CHECK(t.sends_s > 0);
    // FASOP adds its step in float32; the terms are the double-precision parts of that sum.
    CHECK(t.total_s() == Approx(e.step_time_s).epsilon(4 * std::numeric_limits<float>::epsilon()));
    CHECK(e.step_time_s == step_time_s(ctx, f.policy, partition));
  }
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
  // Three virtual stages: 12 chunks split 32 layers unevenly, which Megatron's layout places all
  // the same (as many keys as two give). Nine would make 36 chunks of 32 layers, some empty:
  // Megatron runs that (recipes leave the embedding or the loss a chunk of its own), but the
  // search stops at a layer a chunk.
  space.virtual_stages = {1, 3};
  CHECK(enumerate_plan_keys(l.model, l.cluster, space).size() == 72);
  space.virtual_stages = {1, 9};
  CHECK(enumerate_plan_keys(l.model, l.cluster, space).size() == 42);
  PlanKey nine = *std::find_if(keys.begin(), keys.end(), [](const PlanKey& k) { return k.mbs == 1; });
  nine.node_order.assign(l.cluster.num_nodes(), 0);
  nine.virtual_stages = 9;
  CHECK_NOTHROW(validate_plan_key(l.model, l.cluster, nine));
  nine.pp = 1, nine.dp *= 4;
  CHECK_THAT(fasop::testing::spec_error([&] { validate_plan_key(l.model, l.cluster, nine); }),
             Catch::Contains("needs pp > 1"));
  space.virtual_stages = {1, 2};
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
  PlanKey key{.mbs = 1, .tp = 3, .dp = 32, .pp = 1, .node_order = l.cluster.nodes};  // 3 does not divide 64 heads
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
  PlanKey key{.mbs = 1, .tp = 2, .dp = 16, .pp = 5, .node_order = type_block_placements(l.cluster)[5]};  // L4, A100-80G, H100 order
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
  CHECK(testing::held_bytes_per_param(*zero.partition_memory, 0) == 6 + 12.0 / 16);
  CHECK(testing::held_bytes_per_param(*zero.partition_memory, 1) == 6 + 12.0 / 8);
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
  PlanKey key{.mbs = 1, .tp = 4, .dp = 2, .pp = 3, .node_order = {0, 0, 1, 1}};
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

TEST_CASE("gradient buckets overlap the last backward pass, the last one is exposed", "[analytic][terms]") {
  // K = 4 buckets of c = 1 ms over a window W: bucket i is ready at W (i + 1) / 4.
  // W = 2 ms: the stream is busy from 0.5 ms for 4 ms, ending at 4.5 ms: 2.5 ms past the window
  // (max(1, 4 - 2 x 3/4) = 2.5). W = 10 ms: each bucket finishes before the next is ready; only
  // the last, ready at 10 ms, is exposed: 1 ms.
  CHECK(AnalyticPolicy::bucketed_exposed_s(4, 1e-3, 2e-3) == Approx(2.5e-3).epsilon(1e-12));
  CHECK(AnalyticPolicy::bucketed_exposed_s(4, 1e-3, 10e-3) == Approx(1e-3).epsilon(1e-12));
  // Slack before anything waits (a later stage's pipeline fill) hides that much more.
  CHECK(AnalyticPolicy::bucketed_exposed_s(4, 1e-3, 2e-3, 0.5e-3) == Approx(2e-3).epsilon(1e-12));
  CHECK(AnalyticPolicy::bucketed_exposed_s(4, 1e-3, 2e-3, 5e-3) == 0);
  // Megatron-Core's buckets: max(40e6, 1e6 x dp) parameters.
  CHECK(AnalyticPolicy::gradient_buckets(100e6, 8) == 3);     // 40e6 a bucket
  CHECK(AnalyticPolicy::gradient_buckets(100e6, 64) == 2);    // 64e6 a bucket
  CHECK(AnalyticPolicy::gradient_buckets(100e6, 8, 10e6) == 10);
}

TEST_CASE("a step's terms: the optimizer by hand, the parameter all-gather, and their sum", "[analytic][terms]") {
  // LLaMA-2 7B on one H100 node, pp 1, tp 1, dp 8, ZeRO-1: each GPU updates 1/8 of the
  // parameters, 34 bytes each (Adam's traffic and the gradient norm) at 3.35e12 B/s x the
  // H100's bf16 memory share.
  PresetSpecs l("llama2-7b", "aws-h100");
  ClusterSpec one_node = l.cluster;
  one_node.nodes = {0};
  const NodeType& node = one_node.node_types[0];
  PlanKey key{.mbs = 1, .tp = 1, .dp = 8, .pp = 1, .node_order = {0}};
  key.zero_stage = 1;
  ProfileSpec profile = analytic_profile(l.model, node, {1}, {1});
  double params = 0;
  for (const LayerUnit& u : l.model.units) params += unit_params(l.model, u, 1);
  const double bandwidth = 3.35e12 * node.gpu_data.efficiency("bf16").memory_share;
  std::vector<int> partition{l.model.num_units()};
  for (bool overlap_gather : {false, true}) {
    AnalyticOptions options;
    options.execution.overlap_param_gather = overlap_gather;
    AnalyticPolicy policy(options);
    PlanContext ctx = make_plan_context(l.model, one_node, {&profile}, policy, key);
    std::vector<StageSync> sync = policy.stage_syncs(ctx, partition);
    REQUIRE(sync.size() == 1);
    CHECK(sync[0].optimizer_s == Approx(34 * params / 8 / bandwidth).epsilon(1e-9));
    // The all-gather of the 16-bit parameters: exposed whole after the optimizer step, or under
    // the first forward pass as bucketed_exposed_s says.
    if (!overlap_gather) CHECK(sync[0].gather_exposed_s == Approx(sync[0].gather_s).epsilon(1e-12));
    else CHECK(sync[0].gather_exposed_s < sync[0].gather_s);
    PlanEstimate e = estimate_plan(ctx, policy, partition, 1, nullptr, true);
    CHECK(e.breakdown.total_s() == Approx(e.step_time_s).epsilon(1e-9));
    CHECK(e.breakdown.optimizer_s == Approx(sync[0].optimizer_s).epsilon(1e-9));
    CHECK(e.breakdown.compute_s > 0);
  }
}

TEST_CASE("an embedding's traffic follows its architecture and stack", "[analytic][profile]") {
  // 1024 tokens x hidden 1024 in bf16: one pass over the output is 2,097,152 bytes.
  ModelSpec m;
  m.hidden = 1024, m.heads = 16, m.sequence = 1024, m.vocab = 1000, m.dtype = "bf16";
  const LayerUnit embedding{"embedding", LayerRole::kEmbedding};
  const double pass = 1024.0 * 1024 * 2;
  auto passes = [&](ModelFamily family, int tp, Stack stack) {
    m.family = family;
    LayerOptions options;
    options.stack = stack;
    return layer_work(m, embedding, tp, 1, options).forward.memory_bytes / pass;
  };
  // Megatron, Llama: the lookup (2) and the [s, b, h] copy (2); no positions, no dropout.
  CHECK(passes(ModelFamily::kLlama, 1, Stack::kMegatron) == Approx(4));
  // A vocabulary-parallel lookup also zeroes the rows other ranks own.
  CHECK(passes(ModelFamily::kLlama, 2, Stack::kMegatron) == Approx(5));
  // GPT-2: + learned positions (5) + dropout with a one-byte mask (2.5).
  CHECK(passes(ModelFamily::kGpt2, 1, Stack::kMegatron) == Approx(11.5));
  // BERT: + token types (5).
  CHECK(passes(ModelFamily::kBert, 1, Stack::kMegatron) == Approx(16.5));
  // T5: relative positions (none added), dropout.
  CHECK(passes(ModelFamily::kT5, 1, Stack::kMegatron) == Approx(6.5));
  // Eager PyTorch keeps [b, s, h]: no copy; fasop-cpp's LibTorch profiler times the lookup alone.
  CHECK(passes(ModelFamily::kGpt2, 1, Stack::kEager) == Approx(9.5));
  CHECK(passes(ModelFamily::kGpt2, 4, Stack::kLibtorch) == Approx(2));
}

TEST_CASE("the head's vocabulary, loss traffic and GEMM alignment follow the stack", "[analytic][profile]") {
  // GPT-2's vocabulary, 1024 tokens of hidden 1600 in fp16.
  ModelSpec m;
  m.hidden = 1600, m.heads = 25, m.sequence = 1024, m.vocab = 50257, m.dtype = "fp16", m.family = ModelFamily::kGpt2;
  const LayerUnit head{"post_process", LayerRole::kPostProcess}, embedding{"embedding", LayerRole::kEmbedding};
  const double T = 1024, h = 1600;
  auto work = [&](const LayerUnit& unit, int tp, Stack stack) {
    LayerOptions options;
    options.stack = stack;
    return layer_work(m, unit, tp, 1, options);
  };
  // Megatron pads the vocabulary to a multiple of 128 x tp: 50,304 rows at tp 1, 50,432 / 2 at
  // tp 2; fasop-cpp's profiler (LibTorch) pads it the same way.
  CHECK(work(head, 1, Stack::kMegatron).forward.gemms[0].n == 50304);
  CHECK(work(head, 2, Stack::kMegatron).forward.gemms[0].n == 25216);
  CHECK(work(head, 2, Stack::kLibtorch).forward.gemms[0].n == 25216);
  // Loss traffic per logit, fp16: Megatron's upcast (6) and fp32 passes (32) forward, the
  // in-place scale (8) and the cast back (6) backward; the final norm is 4 (8 backward) passes
  // over T x h. LibTorch: 6 + 16 forward, 6 + 20 backward.
  const LayerWork megatron = work(head, 1, Stack::kMegatron), libtorch = work(head, 1, Stack::kLibtorch);
  CHECK(megatron.forward.memory_bytes == Approx(4 * T * h * 2 + 38 * T * 50304));
  CHECK(megatron.backward.memory_bytes == Approx(8 * T * h * 2 + 14 * T * 50304));
  CHECK(libtorch.forward.memory_bytes == Approx(4 * T * h * 2 + 22 * T * 50304));
  CHECK(libtorch.backward.memory_bytes == Approx(8 * T * h * 2 + 26 * T * 50304));
  // In fp32 nothing is cast: Megatron 32 forward, 8 backward.
  m.dtype = "fp32";
  CHECK(work(head, 1, Stack::kMegatron).forward.memory_bytes == Approx(4 * T * h * 4 + 32 * T * 50304));
  CHECK(work(head, 1, Stack::kMegatron).backward.memory_bytes == Approx(8 * T * h * 4 + 8 * T * 50304));
  m.dtype = "fp16";
  // The embedding's backward, LibTorch: PyTorch's sorted segment sum, 40 bytes an element of the
  // output's gradient as measured on H100 (validation/embedding/h100.csv), and the table's
  // gradient zeroed and accumulated (8 bytes an entry of 50,304 x 1600); the lookup's 5 kernels
  // doubled and the sort's and segments' 6.
  const LayerWork lookup = work(embedding, 1, Stack::kLibtorch);
  CHECK(lookup.backward.memory_bytes == Approx(40 * T * h + 8 * 50304 * h));
  CHECK(lookup.backward.kernels == 16);
  // Megatron's embedding adds positions and dropout (GPT-2): those passes' backward stays doubled.
  const LayerWork positions = work(embedding, 1, Stack::kMegatron);
  CHECK(positions.backward.memory_bytes - 2 * positions.forward.memory_bytes ==
        Approx((40 - 4 * 2) * T * h + 8 * 50304 * h));
  // Alignment: leading dimensions (n, k) in multiples of 16 bytes (8 fp16, 4 fp32, 16 fp8).
  CHECK_FALSE(Gemm{T, 50257, h}.aligned(2));
  CHECK(Gemm{T, 50304, h}.aligned(2));
  CHECK_FALSE(Gemm{T, h, 50257}.aligned(4));
  CHECK(Gemm{50257, h, h}.aligned(1));  // m is not a leading dimension
  CHECK_FALSE(Gemm{T, 1000, h}.aligned(1));  // 1000 is a multiple of 8, not of 16
  // A weight gradient reduces over the tokens, the rows both operands are stored with: an
  // expert's 1,126 tokens leave it aligned (leading dimensions 2880 and 5760), as the forward.
  const Gemm expert_wgrad{2880, 5760, 1126, 16, true};
  CHECK(expert_wgrad.aligned(2));
  CHECK_FALSE(Gemm{2880, 5760, 1126, 16}.aligned(2));
  CHECK_FALSE(Gemm{50257, h, T, 1, true}.aligned(2));  // the head's weight gradient: 50,257 rows
  PrecisionEfficiency e;
  e.gemm_peak_share = 0.8, e.gemm_half_dim = 0, e.gemm_unaligned_share = 0.3;
  CHECK(gemm_efficiency(Gemm{T, 50257, h}, e, 2) == Approx(0.24));
  CHECK(gemm_efficiency(Gemm{T, 50304, h}, e, 2) == Approx(0.8));
  CHECK(gemm_efficiency(Gemm{T, 50257, h}, e, 0) == Approx(0.8));  // alignment not judged
}

namespace {

/// A made-up GPU for the quantized precisions: the dense peaks `peaks` (TFLOP/s), 1e12 B/s,
/// bf16 and fp8 GEMMs at half the peak whatever their shape, no gap between kernels.
NodeType quantized_node(std::map<std::string, double> peaks) {
  NodeType node;
  node.name = "x";
  node.gpu = "X";
  GpuSpec& gpu = node.gpu_data;
  gpu.peak_tflops = std::move(peaks);
  gpu.memory_bandwidth_bytes_per_s = 1e12;
  PrecisionEfficiency half;
  half.gemm_peak_share = 0.5;
  half.gemm_half_dim = 0;
  gpu.precisions["bf16"] = half;
  gpu.precisions["fp8"] = half;
  gpu.launch.kernel_gap_s = 0;
  return node;
}

/// One LLaMA-style layer of hidden 1024 (16 heads, 1024 tokens, micro-batch 1, tp 1) in `dtype`.
LayerWork small_llama_layer(const std::string& dtype) {
  ModelSpec m;
  m.hidden = 1024, m.heads = 16, m.sequence = 1024, m.vocab = 1000, m.family = ModelFamily::kLlama;
  m.dtype = dtype;
  return layer_work(m, LayerUnit{"transformer", LayerRole::kTransformer}, 1, 1);
}

}  // namespace

TEST_CASE("MXFP8 runs on the fp8 peak at efficiencies of its own, or fp8's where it has none", "[analytic][profile]") {
  NodeType node = quantized_node({{"bf16", 100}, {"fp8", 200}});
  PassWork w;
  w.gemms = {{1e4, 1e4, 5e3}};  // 1e12 FLOPs / (200e12 x 0.5) = 10 ms
  CHECK(pass_time(w, 1, node, "mxfp8").gpu_s == Approx(10e-3).epsilon(1e-12));
  PrecisionEfficiency mx = node.gpu_data.precisions["fp8"];
  mx.gemm_peak_share = 0.4;  // 1e12 / (200e12 x 0.4) = 12.5 ms
  node.gpu_data.precisions["mxfp8"] = mx;
  CHECK(pass_time(w, 1, node, "mxfp8").gpu_s == Approx(12.5e-3).epsilon(1e-12));
  // Both cast each GEMM input from bf16 (read 2 bytes, write 1) and keep activations in bf16.
  const LayerWork a = small_llama_layer("fp8"), b = small_llama_layer("mxfp8");
  CHECK(a.forward.memory_bytes == b.forward.memory_bytes);
  CHECK(a.forward.weight_bytes == b.forward.weight_bytes);
  CHECK(small_llama_layer("bf16").forward.weight_bytes == Approx(2 * a.forward.weight_bytes));
}

TEST_CASE("NVFP4 runs on the fp4 peak at an efficiency of its own, its weights 4.5 bits", "[analytic][profile][precision]") {
  // NVFP4: e2m1 values (4 bits) and an e4m3 scale per 16 (0.5 bit): 0.5625 bytes an element; the
  // GEMMs against the fp4 peak; everything else in bf16, whose gradients Megatron may reduce in bf16.
  CHECK(known_precision("nvfp4"));
  CHECK(is_quantized("nvfp4"));
  CHECK_FALSE(is_fp8("nvfp4"));
  CHECK(is_block_scaled("nvfp4"));
  CHECK(gemm_input_bytes("nvfp4") == 0.5625);
  CHECK(peak_precision("nvfp4") == "fp4");
  CHECK(non_gemm_precision("nvfp4") == "bf16");
  CHECK(has_bf16_gradients("nvfp4"));
  NodeType node = quantized_node({{"bf16", 100}, {"fp8", 200}, {"fp4", 400}});
  CHECK_FALSE(node.gpu_data.runs_precision("nvfp4"));  // block scaling needs an entry of its own
  PrecisionEfficiency fp4 = node.gpu_data.precisions["fp8"];
  fp4.gemm_peak_share = 0.25;
  node.gpu_data.precisions["nvfp4"] = fp4;
  CHECK(node.gpu_data.runs_precision("nvfp4"));
  PassWork w;
  w.gemms = {{1e4, 1e4, 5e3}};  // 1e12 FLOPs / (400e12 x 0.25) = 10 ms
  CHECK(pass_time(w, 1, node, "nvfp4").gpu_s == Approx(10e-3).epsilon(1e-12));
  // The casts are fp8's; the weights a GEMM streams take 0.5625 bytes, against fp8's 1.
  const LayerWork a = small_llama_layer("fp8"), b = small_llama_layer("nvfp4");
  CHECK(a.forward.memory_bytes == b.forward.memory_bytes);
  CHECK(b.forward.weight_bytes == Approx(0.5625 * a.forward.weight_bytes));
}
