// Mixtures of experts and context parallelism against hand calculations: parameters and FLOPs
// per rank against the model's closed form, the experts' all-to-all and ring attention's
// volumes, their times on a made-up node, memory sharded over expert-data-parallel GPUs, and
// the plans Megatron-LM cannot run, refused with the reason.
#include <catch2/catch.hpp>

#include "costmodel/analytic_policy.h"
#include "costmodel/fasop_policy.h"
#include "costmodel/make_context.h"
#include "costmodel/parallel_dims_checks.h"
#include "profiles/analytic_profile.h"
#include "profiles/ep_overlap.h"
#include "profiles/moe_layer.h"
#include "profiles/recomputed_elementwise.h"
#include "report/dimension_notes.h"
#include "search/search_space.h"
#include "specs/parallel_rules.h"
#include "specs/plan_file.h"
#include "specs/spec_loader.h"
#include "test_support.h"

using namespace fasop;
using fasop::testing::made_up_node;
using fasop::testing::spec_error;

namespace {

/// A small Mixtral-like model: 1 dense layer, then 2 MoE layers of 8 experts (top 2, width 2048).
const char* kSmallMoe = R"(
name: small-moe
hidden: 1024
heads: 16
kv_heads: 4
ffn_hidden: 4096
sequence: 4096
vocab: 32000
global_batch: 64
dtype: bf16
activation: swiglu
norm: rmsnorm
tied_embeddings: false
family: llama
moe: {experts: 8, top_k: 2, expert_ffn_hidden: 2048, dense_layers: 1, token_drop: true}
layers:
  - {type: embedding, role: embedding}
  - {type: transformer, role: transformer}
  - {type: moe_layer, role: transformer, moe: true, repeat: 2}
  - {type: post_process, role: post_process}
)";

ModelSpec small_moe() { return parse_model(kSmallMoe, "small-moe.yaml"); }

double gemm_flops(const std::vector<Gemm>& gemms) {
  double sum = 0;
  for (const Gemm& g : gemms) sum += g.flops();
  return sum;
}

}  // namespace

TEST_CASE("a MoE layer's parameters and FLOPs follow the model's closed form", "[moe]") {
  const ModelSpec m = small_moe();
  REQUIRE(m.units.size() == 5);
  CHECK(!m.units[1].moe);
  CHECK(m.units[2].moe);
  // Router 8 x 1024, 8 experts of 3 x 1024 x 2048, no shared expert.
  CHECK(moe_mlp_params(m.moe, 1024, true) == 8 * 1024 + 8 * 3 * 1024.0 * 2048);
  CHECK(moe_active_mlp_params(m.moe, 1024, true) == 8 * 1024 + 2 * 3 * 1024.0 * 2048);  // 12,591,104
  CHECK(moe_mlp_forward_flops_per_token(m.moe, 1024, true) == 25182208.0);
  // One GPU of tp 1, ep 4 holds 2 experts (12,582,912 parameters), 1 of 2 halves with etp 2.
  CHECK(unit_expert_params(m, m.units[2], 4, 1) == 12582912.0);
  CHECK(unit_expert_params(m, m.units[2], 4, 2) == 6291456.0);
  CHECK(unit_expert_params(m, m.units[1], 4, 1) == 0);
  // The rest at tp 2: attention 1024 x (1024 + 2 x 256) + 1024 x 1024 = 2,621,440 over 2, two
  // RMSNorms (1024 each) and the router (8 x 1024) whole on every tp rank.
  CHECK(unit_params(m, m.units[2], 2) == 1310720.0 + 2048 + 8192);
  // A dense layer: attention and a 3 x 1024 x 4096 MLP over tp.
  CHECK(unit_params(m, m.units[1], 2) == (2621440.0 + 3 * 1024.0 * 4096) / 2 + 2048);

  // The forward GEMMs of a micro-batch of one 4096-token sequence at tp 1, ep 4: with token
  // dropping (no imbalance), 4096 tokens x 2 experts x 6 x 1024 x 2048 for the experts and
  // 2 x 4096 x 8 x 1024 for the router: 4096 x the FLOPs a token.
  LayerOptions options;
  options.ep = 4;
  const MoeWork w = moe_mlp_work(m, 4096, 1, options);
  CHECK(gemm_flops(w.gemms) == Approx(4096 * 25182208.0).epsilon(1e-12));
  // Each of the 2 local experts' GEMMs gets 8192 routed tokens / 2 rows.
  CHECK(w.gemms[1].m == 4096);
  CHECK(w.gemms[1].count == 2);
  // Dropless routing: the busiest GPU's experts take 1.1 x their share.
  ModelSpec dropless = m;
  dropless.moe.token_drop = false;
  const MoeWork d = moe_mlp_work(dropless, 4096, 1, options);
  CHECK(gemm_flops(d.gemms) == Approx(2 * 4096 * 8 * 1024.0 + 1.1 * 4096 * 2 * 6 * 1024.0 * 2048).epsilon(1e-12));
  // Dropless with forced balancing (random router scores): each rank gets its share again.
  std::string forced_text = kSmallMoe;
  forced_text.replace(forced_text.find("token_drop: true"), 16, "token_drop: false, force_balance: true");
  const ModelSpec forced = parse_model(forced_text, "forced.yaml");
  CHECK(forced.moe.force_balance);
  CHECK(!forced.moe.token_drop);
  CHECK(gemm_flops(moe_mlp_work(forced, 4096, 1, options).gemms) == Approx(4096 * 25182208.0).epsilon(1e-12));
  forced_text.replace(forced_text.find("force_balance: true"), 19, "force_balance: 2");
  CHECK_THAT(spec_error([&] { parse_model(forced_text, "forced.yaml"); }),
             Catch::Contains("forced.yaml") && Catch::Contains("moe.force_balance") && Catch::Contains("true or false"));
  // tp 2 with sequence parallelism: each GPU routes half the tokens; the FLOPs halve.
  CHECK(gemm_flops(moe_mlp_work(m, 4096, 2, options).gemms) == Approx(2048 * 25182208.0).epsilon(1e-12));
}

TEST_CASE("the experts' all-to-alls move every routed token's activation, there and back", "[moe]") {
  const ModelSpec m = small_moe();
  LayerOptions options;
  options.ep = 4;
  // 4096 tokens x 1024 x 2 bytes (bf16) = 8 MiB of tokens, each sent top 2 times by the
  // alltoall dispatcher: 16 MiB into each all-to-all, dispatch and combine.
  const LayerWork work = layer_work(m, m.units[2], 1, 1, options);
  CHECK(work.forward.ep_dispatch.count == 2);
  CHECK(work.forward.ep_dispatch.token_bytes == 8388608.0);
  CHECK(work.backward.ep_dispatch.count == 2);
  CHECK(work.backward.ep_dispatch.token_bytes == 8388608.0);
  // tp 2: half the tokens a GPU.
  CHECK(layer_work(m, m.units[2], 2, 1, options).forward.ep_dispatch.token_bytes == 4194304.0);
  // No expert parallelism: no all-to-all; a dense layer has none either.
  CHECK(layer_work(m, m.units[2], 1, 1).forward.ep_dispatch.count == 0);
  CHECK(layer_work(m, m.units[1], 1, 1, options).forward.ep_dispatch.count == 0);

  // On one node (ep 4 <= 8 GPUs), each all-to-all sends 3 peers a quarter of 16 MiB on NVLink:
  // 1 us + 3 x 4 MiB x 8 / 1e12 bit/s.
  const NodeType node = made_up_node();
  const double on_node = 1e-6 + 3 * 4194304.0 * 8 / 1e12;
  CHECK(ep_comm_s(work.forward, 4, 1, node) == Approx(2 * on_node).epsilon(1e-12));
  // ep 16 spans two nodes: 7 peers on NVLink, 8 across the network at 8e11 / 8 bit/s a GPU,
  // at once; the network's 8 x 1 MiB x 8 / 1e11 dominates, with its 10 us latency.
  const double across = 1e-5 + 8 * 1048576.0 * 8 / 1e11;
  CHECK(ep_comm_s(work.forward, 16, 1, node) == Approx(2 * across).epsilon(1e-12));
}

TEST_CASE("a MoE layer's launches grow with its local experts, and at small batches the host sets its time", "[moe]") {
  const ModelSpec m = small_moe();
  LayerOptions options;
  options.ep = 4;
  // ep 4: 2 local experts. 16 fixed kernels and an up and a down GEMM per expert (20); the host
  // adds 12 ops of its own and 2 views per expert: 36.
  const MoeWork w = moe_mlp_work(m, 4096, 1, options);
  CHECK(w.kernels == 20);
  CHECK(w.host_ops == 36);
  // ep 1: all 8 experts on the GPU: 16 + 16 kernels, 32 + 12 + 16 host ops.
  const MoeWork all = moe_mlp_work(m, 4096, 1, LayerOptions{});
  CHECK(all.kernels == 32);
  CHECK(all.host_ops == 60);
  // In fp8 each expert's input slice is cast on its own: 2 more launches an expert.
  ModelSpec fp8 = m;
  fp8.dtype = "fp8";
  CHECK(moe_mlp_work(fp8, 4096, 1, options).kernels == 24);
  // The layer (Megatron stack): the fused attention (1), the stack's 11 others, the MoE's 20
  // kernels; the host dispatches those and the MoE's 16 of its own. Backward twice both.
  const LayerWork layer = layer_work(m, m.units[2], 1, 1, options);
  CHECK(layer.forward.kernels == 32);
  CHECK(layer.forward.host_ops == 48);
  CHECK(layer.backward.host_ops == 96);
  // A dense layer's host dispatches its kernels and nothing else.
  const LayerWork dense = layer_work(m, m.units[1], 1, 1, options);
  CHECK(dense.forward.host_ops == dense.forward.kernels);
  // A slow host (1 ms an op on the made-up node) sets the pass's time: 48 ops x 1 ms.
  NodeType node = made_up_node();
  node.gpu_data.launch.dispatch_s["megatron"] = 1e-3;
  const PassTime t = pass_time(layer.forward, 1, node, m.dtype, options);
  CHECK(t.host_s == Approx(0.048).epsilon(1e-12));
  CHECK(t.seconds == Approx(0.048 + t.ep_comm_s).epsilon(1e-12));
  // CUDA graphs (token dropping: static shapes): the host launches the layer's graph, 3 ops
  // (the input's copy in, the replay, the output), 3 ms; the GPU's work is unchanged.
  LayerOptions graphed = options;
  graphed.execution.cuda_graphs = true;
  const LayerWork replayed = layer_work(m, m.units[2], 1, 1, graphed);
  CHECK(replayed.forward.graphed);
  CHECK(replayed.backward.graphed);
  CHECK_FALSE(layer_work(m, m.units[0], 1, 1, graphed).forward.graphed);  // the embedding is no layer
  const PassTime g = pass_time(replayed.forward, 1, node, m.dtype, graphed);
  CHECK(g.host_s == Approx(3e-3).epsilon(1e-12));
  CHECK(g.gpu_s == Approx(t.gpu_s).epsilon(1e-12));
  CHECK(g.seconds == Approx(std::max(3e-3, t.gpu_s) + g.ep_comm_s).epsilon(1e-12));
  // A dropless MoE model cannot be captured: Megatron-Core asserts drop-padding.
  ModelSpec dropless = m;
  dropless.moe.token_drop = false;
  CHECK_THAT(cuda_graph_fault(dropless), Catch::Contains("drop-padding"));
  CHECK(cuda_graph_fault(m).empty());
}

TEST_CASE("a dropless MoE layer's host waits for the split sizes: the GPU's work before and the host's after add",
          "[moe]") {
  ModelSpec m = small_moe();
  m.moe.token_drop = false;
  LayerOptions options;
  options.ep = 4;
  // ep 4, tp 1, one 4096-token sequence: all but the router's GEMM, 9 of the 16 fixed kernels
  // and 11 of the host's ops (9 launches, the copies and the wait) follow the wait: the two
  // experts' GEMMs, 20 - 9 = 11 kernels, 36 - 9 - 2 = 25 host ops, and the inverse permutation
  // ((4096 + 8192) x 1024 elements) with the activation (3 x 4096 x 2 x 1.1 x 2048) in bf16.
  const MoeWork w = moe_mlp_work(m, 4096, 1, options);
  const HostWaitTail& tail = w.after_host_wait;
  CHECK(tail.waits == 1);
  REQUIRE(tail.gemms.size() == 2);
  CHECK(tail.gemms[0].count == 2);
  CHECK(tail.gemms[1].count == 2);
  CHECK(tail.kernels == 11);
  CHECK(tail.host_ops == 25);
  CHECK(tail.memory_bytes == Approx(2 * (12288 * 1024.0 + 3 * 9011.2 * 2048)).epsilon(1e-12));
  // The layer's forward pass carries it; its backward (the splits known) and a token-dropping
  // layer (static shapes) wait for nothing.
  const LayerWork layer = layer_work(m, m.units[2], 1, 1, options);
  CHECK(layer.forward.after_host_wait.waits == 1);
  CHECK(layer.forward.after_host_wait.host_ops == 25);
  CHECK(layer.backward.after_host_wait.waits == 0);
  CHECK(layer_work(small_moe(), small_moe().units[2], 1, 1, options).forward.after_host_wait.waits == 0);

  // A pass of 2 ms on the GPU (1e9 bytes at 0.5 x 1e12 B/s) and 2 ms on the host (1,000 ops x
  // 2 us), of which 1 ms and 1.8 ms follow a wait: 1 ms + 1.8 ms = 2.8 ms, not max(2, 2).
  PassWork pass;
  pass.memory_bytes = 1e9;
  pass.host_ops = 1000;
  pass.after_host_wait.memory_bytes = 5e8;
  pass.after_host_wait.host_ops = 900;
  pass.after_host_wait.waits = 1;
  const NodeType node = made_up_node();
  CHECK(pass_time(pass, 1, node, "fp16", LayerOptions{}).seconds == Approx(0.0028).epsilon(1e-12));
  pass.after_host_wait.waits = 0;
  CHECK(pass_time(pass, 1, node, "fp16", LayerOptions{}).seconds == Approx(0.002).epsilon(1e-12));
}

TEST_CASE("an all-to-all runs each link at the share of all the bytes it carries", "[moe]") {
  const ModelSpec m = small_moe();
  LayerOptions options;
  options.ep = 16;
  const LayerWork work = layer_work(m, m.units[2], 1, 1, options);
  // ep 16 over two nodes: 8 peers across the network get 1 MiB each, 8 MiB on the GPU's share of
  // the network (8e11 / 8 bit/s). With the network's share halving at 8 MiB, NCCL's sends to all
  // peers at once run at half the bandwidth (not at the 1 MiB point of one peer's part, 1/9).
  NodeType node = made_up_node();
  node.gpu_data.network = {1.0, 8388608.0};
  const double across = 1e-5 + 8 * 1048576.0 * 8 / (1e11 * 0.5);
  CHECK(ep_comm_s(work.forward, 16, 1, node) == Approx(2 * across).epsilon(1e-12));
}

TEST_CASE("ring attention passes each chunk's keys and values around the cp GPUs", "[cp]") {
  const ModelSpec m = small_moe();
  LayerOptions options;
  options.cp = 2;
  const LayerWork dense = layer_work(m, m.units[1], 1, 1);
  const LayerWork ring = layer_work(m, m.units[1], 1, 1, options);
  // cp 2: one step, passing 2048 tokens' keys and values (2 x 256 wide, bf16): 2 MiB; backward
  // their gradients too.
  CHECK(ring.forward.cp_ring_steps == 1);
  CHECK(ring.forward.cp_ring_step_bytes == 2 * 2048 * 256 * 2.0);
  CHECK(ring.backward.cp_ring_step_bytes == 4 * 2048 * 256 * 2.0);
  // A GPU's 2048 queries meet all 4096 keys, half of them under the causal mask balanced over
  // the ring: half the attention FLOPs of the whole sequence, and half the GEMM FLOPs.
  CHECK(ring.forward.attention_flops == Approx(4.0 * 2048 * 4096 * 1024 * 0.5).epsilon(1e-12));
  CHECK(ring.forward.attention_flops == Approx(dense.forward.attention_flops / 2).epsilon(1e-12));
  CHECK(ring.forward.gemm_flops() == Approx(dense.forward.gemm_flops() / 2).epsilon(1e-12));
  // On one node (tp x cp = 2 <= 8): 1 us + 2 MiB x 8 / 1e12 bit/s a step.
  CHECK(cp_ring_s(ring.forward, 1, 2, made_up_node()) == Approx(1e-6 + 2097152.0 * 8 / 1e12).epsilon(1e-12));
  // Activations: a GPU keeps 1/cp of the sequence's.
  ActivationMode mode, halved;
  halved.cp = 2;
  CHECK(unit_activation_bytes(m, m.units[1], 1, 1, halved) ==
        Approx(unit_activation_bytes(m, m.units[1], 1, 1, mode) / 2).epsilon(1e-12));
}

TEST_CASE("expert parameters shard over the expert-data-parallel GPUs, dense ones over cp x dp", "[moe][memory]") {
  const ModelSpec m = small_moe();
  ClusterSpec cluster = fasop::testing::PresetSpecs("llama3-8b", "dgx-h100").cluster;
  cluster.nodes.assign(1, 0);  // one node of 8 H100s
  AnalyticPolicy policy;
  PlanKey key;
  key.mbs = 1, key.tp = 1, key.dp = 8, key.pp = 1, key.ep = 4, key.zero_stage = 1;
  key.node_order = {0};
  validate_plan_key(m, cluster, key);
  const PlanContext ctx = make_layout_context(m, cluster, policy, key);
  const MemoryModel& memory = *ctx.partition_memory;
  // ZeRO-1 in bf16: 2 + 4 bytes a parameter, 12 of optimizer state over the GPUs holding it:
  // dense over dp 8, experts over 8 / ep 4 = 2.
  CHECK(expert_data_parallel(key) == 2);
  CHECK(testing::held_bytes_per_param(memory, 0) == 2 + 4 + 12.0 / 8);
  CHECK(testing::held_bytes_per_param(memory, 0, true) == 2 + 4 + 12.0 / 2);
  CHECK(memory.expert_params_prefix.back() == 2 * 12582912.0);
  // cp 2 x dp 4: the dense gradients reduce over 8 GPUs as well.
  key.cp = 2, key.dp = 4;
  validate_plan_key(m, cluster, key);
  const PlanContext cp_ctx = make_layout_context(m, cluster, policy, key);
  CHECK(cp_ctx.stage_grad_ranks(0) == 8);
  CHECK(cp_ctx.stage_gpus(0) == 8);
  CHECK(testing::held_bytes_per_param(*cp_ctx.partition_memory, 0) == 2 + 4 + 12.0 / 8);
  // Megatron's rank order: tp fastest, then cp, then dp.
  key.tp = 2, key.dp = 2, key.sequence_parallel = true;
  const PlanContext tp_ctx = make_layout_context(m, cluster, policy, key);
  CHECK(tp_ctx.stage_rank(0, 1, 1, 1) == (1 * 2 + 1) * 2 + 1);
}

TEST_CASE("plans Megatron-LM cannot run are refused with the reason", "[moe][cp][specs]") {
  const ModelSpec m = small_moe();
  ClusterSpec cluster = fasop::testing::PresetSpecs("llama3-8b", "dgx-h100").cluster;
  cluster.nodes.assign(1, 0);
  PlanKey key;
  key.mbs = 1, key.tp = 1, key.dp = 8, key.pp = 1;
  key.node_order = {0};
  key.ep = 3;  // 8 experts
  CHECK_THAT(spec_error([&] { validate_plan_key(m, cluster, key); }), Catch::Contains("--ep: 3 does not divide"));
  key.ep = 8, key.dp = 4, key.cp = 2;  // 8 x 1 divides tp x cp x dp = 8: fine
  validate_plan_key(m, cluster, key);
  key.ep = 1, key.cp = 8, key.dp = 1;
  ModelSpec odd = m;
  odd.sequence = 4104;  // not 16 equal chunks
  CHECK_THAT(spec_error([&] { validate_plan_key(odd, cluster, key); }), Catch::Contains("2 x cp"));
  key.cp = 1, key.dp = 4, key.tp = 2;  // MoE with tp needs sequence parallelism
  CHECK_THAT(spec_error([&] { validate_plan_key(m, cluster, key); }), Catch::Contains("sequence parallelism"));
  key.sequence_parallel = true;
  validate_plan_key(m, cluster, key);
  key.tp = 1, key.dp = 8, key.sequence_parallel = false;
  // The tp x dp x pp product counts cp.
  key.cp = 2;
  CHECK_THAT(spec_error([&] { validate_plan_key(m, cluster, key); }), Catch::Contains("tp * cp * dp * pp = 16"));
  key.cp = 1;
  // A dense model has no experts to split.
  ModelSpec dense = fasop::testing::PresetSpecs("llama3-8b", "dgx-h100").model;
  key.ep = 2;
  CHECK_THAT(spec_error([&] { validate_plan_key(dense, cluster, key); }), Catch::Contains("has no experts"));
  // FASOP's policy knows neither.
  key.ep = 1;
  FasopPolicy fasop_policy;
  CHECK_THAT(spec_error([&] { make_layout_context(m, cluster, fasop_policy, key); }), Catch::Contains("--policy analytic"));
}

TEST_CASE("Megatron-LM's rules for cp, ep and etp, which the cost model and the emitters share", "[moe][cp][specs]") {
  ModelSpec m = small_moe();  // 8 experts of width 2048
  m.sequence = 4104;
  CHECK(cp_splits_sequence(m, 1));  // no split without cp, even for an odd length
  CHECK(cp_splits_sequence(m, 2));  // 4104 = 4 x 1026
  CHECK_FALSE(cp_splits_sequence(m, 8));  // 4104 / 16 = 256.5
  CHECK(ep_divides_experts(m.moe, 8));
  CHECK_FALSE(ep_divides_experts(m.moe, 3));
  CHECK(etp_divides_expert_width(m.moe, 4));
  CHECK_FALSE(etp_divides_expert_width(m.moe, 3));
  PlanKey key;
  key.tp = 2, key.cp = 2, key.dp = 2, key.ep = 4, key.etp = 2;  // 8 expert ranks on a stage of 8
  CHECK(expert_grid_folds(key));
  key.ep = 8;  // 16 on 8
  CHECK_FALSE(expert_grid_folds(key));
  key.sequence_parallel = false;
  CHECK_FALSE(moe_tp_has_sequence_parallel(key));
  key.tp = 1;
  CHECK(moe_tp_has_sequence_parallel(key));
}

TEST_CASE("biased experts and a clamped GLU (GPT-OSS) add their passes and launches as Megatron-Core runs them",
          "[moe]") {
  const ModelSpec plain = small_moe();
  std::string text = kSmallMoe;
  const std::string drop = "token_drop: true";
  text.replace(text.find(drop), drop.size(), drop + ", expert_bias: true, activation_clamp: 7.0");
  const ModelSpec oss = parse_model(text, "oss.yaml");
  CHECK(oss.moe.expert_bias);
  CHECK(oss.moe.activation_clamp == 7.0);
  // quick-GELU's GLU gates as SwiGLU does: three matrices, the same GEMMs.
  std::string quick = text;
  quick.replace(quick.find("activation: swiglu"), 18, "activation: quick_geglu");
  const ModelSpec quick_oss = parse_model(quick, "oss.yaml");
  CHECK(quick_oss.activation == Activation::kQuickGeglu);
  CHECK(is_gated(quick_oss.activation));
  CHECK(gemm_flops(moe_mlp_work(quick_oss, 4096, 1, LayerOptions{}).gemms) ==
        gemm_flops(moe_mlp_work(oss, 4096, 1, LayerOptions{}).gemms));
  std::string unknown = text;
  unknown.replace(unknown.find("activation: swiglu"), 18, "activation: geglu");
  CHECK_THAT(spec_error([&] { parse_model(unknown, "oss.yaml"); }),
             Catch::Contains("field 'activation'") && Catch::Contains("quick_geglu"));
  LayerOptions options;
  options.ep = 4;  // 2 local experts
  const MoeWork a = moe_mlp_work(plain, 4096, 1, options), b = moe_mlp_work(oss, 4096, 1, options);
  // 4096 tokens x top 2 = 8192 expert rows (token dropping: no imbalance). The down projection's
  // bias in fp32: 28 bytes an output of width 1024, 14 bf16 elements; the clamp: 8 elements an
  // activation output of width 2048.
  CHECK(b.elements - a.elements == Approx(14.0 * 8192 * 1024 + 8.0 * 8192 * 2048).epsilon(1e-12));
  // Launches: 2 an expert, the concatenation and the cast (6); two clamps and a concatenation (3).
  CHECK(b.kernels - a.kernels == 9);
  // The host also splits the output and the weights by expert (2) and chunks the GLU's input (1).
  CHECK(b.host_ops - a.host_ops == 12);
  // The GEMMs and the all-to-alls are the same.
  CHECK(gemm_flops(b.gemms) == gemm_flops(a.gemms));
  CHECK(b.token_bytes == a.token_bytes);
  // Each alone.
  ModelSpec bias_only = oss;
  bias_only.moe.activation_clamp = 0;
  CHECK(moe_mlp_work(bias_only, 4096, 1, options).kernels - a.kernels == 6);
  // Bad values name the field.
  std::string bad = text;
  bad.replace(bad.find("7.0"), 3, "-1");
  CHECK_THAT(spec_error([&] { parse_model(bad, "oss.yaml"); }),
             Catch::Contains("oss.yaml") && Catch::Contains("moe.activation_clamp") && Catch::Contains("positive"));
  bad = text;
  bad.replace(bad.find("expert_bias: true"), 17, "expert_bias: 3");
  CHECK_THAT(spec_error([&] { parse_model(bad, "oss.yaml"); }), Catch::Contains("moe.expert_bias"));
}

TEST_CASE("a MoE model file states its MoE layers and agrees with its moe block", "[moe][specs]") {
  std::string text = kSmallMoe;
  const std::string dense_layers = "dense_layers: 1";
  std::string wrong = text;
  wrong.replace(wrong.find(dense_layers), dense_layers.size(), "dense_layers: 2");
  CHECK_THAT(spec_error([&] { parse_model(wrong, "m.yaml"); }),
             Catch::Contains("m.yaml") && Catch::Contains("1 dense transformer layers but moe.dense_layers is 2"));
  std::string too_many = text;
  too_many.replace(too_many.find("top_k: 2"), 8, "top_k: 9");
  CHECK_THAT(spec_error([&] { parse_model(too_many, "m.yaml"); }), Catch::Contains("moe.top_k"));
}

TEST_CASE("the search tries cp and ep only where Megatron-LM can run them", "[moe][cp][search]") {
  const ModelSpec m = small_moe();
  ClusterSpec cluster = fasop::testing::PresetSpecs("llama3-8b", "dgx-h100").cluster;
  cluster.nodes.assign(1, 0);  // 8 GPUs
  SearchSpaceOptions space = SearchSpaceOptions::beyond_fasop();
  space.sequence_parallel = {false};  // experts with tp > 1 still get it: Megatron-LM requires it
  space.cp = {1, 2};
  space.ep = {1, 2, 4, 8};
  int with_cp = 0, with_ep = 0;
  for (const PlanKey& key : enumerate_plan_keys(m, cluster, space)) {
    CHECK(key.tp * key.cp * key.dp * key.pp == 8);
    CHECK((key.tp * key.cp * key.dp) % key.ep == 0);
    CHECK(m.moe.experts % key.ep == 0);
    CHECK((key.tp == 1 || key.sequence_parallel));
    CHECK(!key.uneven_dp);
    validate_plan_key(m, cluster, [&] {
      PlanKey placed = key;
      placed.node_order = {0};
      return placed;
    }());
    with_cp += key.cp > 1;
    with_ep += key.ep > 1;
  }
  CHECK(with_cp > 0);
  CHECK(with_ep > 0);
  // A dense model never gets ep > 1.
  const ModelSpec dense = fasop::testing::PresetSpecs("llama3-8b", "dgx-h100").model;
  for (const PlanKey& key : enumerate_plan_keys(dense, cluster, space)) CHECK(key.ep == 1);
  // --fix cp=2 keeps only cp 2.
  space.fixed.cp = 2;
  for (const PlanKey& key : enumerate_plan_keys(m, cluster, space)) CHECK(key.cp == 2);
}

TEST_CASE("a search says why it left context and expert parallelism or virtual stages out", "[cp][search]") {
  auto result = [](int cp, int ep, double step_s, bool oom) {
    CandidateResult r;
    r.plan.key.cp = cp, r.plan.key.ep = ep, r.plan.key.tp = 1, r.plan.key.dp = 8 / cp, r.plan.key.pp = 1;
    r.plan.key.mbs = 1;
    r.estimate.step_time_s = step_s;
    r.estimate.memory.is_oom = oom;
    return r;
  };
  SearchSpaceOptions space;
  space.cp = {1, 2};
  space.ep = {1, 4};
  const std::vector<CandidateResult> ranked = {result(1, 1, 10, false), result(2, 1, 11, true)};
  CHECK(unused_dimension_notes(ranked, space, "bf16") ==
        "cp: not used: the best plan with cp > 1 (cp 2, ep 1, tp 1, dp 4, pp 1, mbs 1) takes 11 s a step, +10.0% against "
        "10 s, and does not fit in memory\n"
        "ep: not used: no layout with ep > 1 could run (ep must divide the experts and a stage's tp x cp x dp GPUs)\n");
  space.cp = {1};
  space.ep = {1};
  CHECK(unused_dimension_notes(ranked, space, "bf16").empty());
  // Precisions: the best trains in fp8; the model's own (bf16) plan is 25% slower.
  std::vector<CandidateResult> by_precision = {result(1, 1, 8, false), result(1, 1, 10, false)};
  by_precision[0].plan.key.precision = "fp8";
  space.precisions = {"", "fp8"};
  CHECK(unused_dimension_notes(by_precision, space, "bf16") ==
        "bf16 (the model's): not used: its best plan takes 10 s a step, +25.0% against 8 s\n");
  // Virtual stages: the best plan runs plain 1F1B, the best interleaved one is 5% slower.
  space.precisions = {};
  space.virtual_stages = {1, 2};
  std::vector<CandidateResult> interleaved = {result(1, 1, 10, false), result(1, 1, 10.5, false)};
  interleaved[0].plan.key.pp = interleaved[1].plan.key.pp = 2;
  interleaved[1].plan.key.virtual_stages = 2;
  CHECK(unused_dimension_notes(interleaved, space, "bf16") ==
        "v: not used: the best plan with v > 1 (cp 1, ep 1, tp 1, dp 8, pp 2, mbs 1, v 2) takes 10.5 s a step, +5.0% "
        "against 10 s\n");
}

TEST_CASE("which GPUs train in a precision, and a plan file keeps the one a search chose", "[precision]") {
  auto gpu = [](const std::string& cluster) { return fasop::testing::PresetSpecs("llama3-8b", cluster).cluster.node_types[0].gpu_data; };
  CHECK(!gpu("aws-v100").runs_precision("bf16"));  // V100: fp16 tensor cores only
  CHECK(gpu("aws-v100").runs_precision("fp16"));
  CHECK(!gpu("aws-a100-80g").runs_precision("fp8"));  // A100: no fp8
  CHECK(gpu("aws-a100-80g").runs_precision("bf16"));
  CHECK(gpu("dgx-h100").runs_precision("fp8"));
  CHECK(!gpu("dgx-h100").runs_precision("mxfp8"));  // block scaling: Blackwell only
  CHECK(gpu("dgx-b200").runs_precision("mxfp8"));
  CHECK(!gpu("dgx-h100").runs_precision("nvfp4"));  // no fp4 tensor cores
  CHECK(gpu("dgx-b200").runs_precision("nvfp4"));
  CHECK(gpu("dgx-gb300").runs_precision("nvfp4"));

  PlanFile plan;
  plan.model = "qwen3-30b-a3b";
  plan.cluster = "dgx-h100";
  plan.policy = "analytic";
  plan.nodes = {{"dgx-h100", 2}};
  plan.global_batch = 512;
  plan.key.mbs = 1, plan.key.tp = 1, plan.key.dp = 8, plan.key.pp = 1;
  plan.key.cp = 2, plan.key.ep = 8, plan.key.precision = "fp8";
  plan.node_order = {"dgx-h100", "dgx-h100"};
  plan.partition = {50};
  plan.estimate.iterations = 1;
  const std::string text = plan_file_yaml(plan);
  CHECK_THAT(text, Catch::Contains("cp: 2") && Catch::Contains("ep: 8") && Catch::Contains("precision: fp8"));
  CHECK(text.find("etp:") == std::string::npos);  // 1: not written
  const PlanFile back = parse_plan_file(text, "p.yaml");
  CHECK(back.key.cp == 2);
  CHECK(back.key.ep == 8);
  CHECK(back.key.etp == 1);
  CHECK(back.key.precision == "fp8");
  std::string wrong = text;
  wrong.replace(wrong.find("precision: fp8"), 14, "precision: fp4");
  CHECK_THAT(spec_error([&] { parse_plan_file(wrong, "p.yaml"); }),
             Catch::Contains("p.yaml") && Catch::Contains("precision") && Catch::Contains("unknown precision 'fp4'"));
}

TEST_CASE("EP all-to-all overlap hides both passes' all-to-alls behind both passes' compute", "[moe]") {
  // Forward: GPU 2 ms, host 1 ms, all-to-alls 3 ms (5 ms in all); backward: GPU 4, host 1, 3 (7).
  LayerTime t;
  t.forward = {5e-3, 2e-3, 1e-3, 0, 0, 3e-3};
  t.backward = {7e-3, 4e-3, 1e-3, 0, 0, 3e-3};
  LayerTime hidden = t;
  overlap_ep_comm(hidden, 0.1);
  // 6 ms of all-to-alls under 2 + 4 = 6 ms of compute: all hidden, at 10% of it (0.6 ms) as a
  // slowdown, split half and half as the all-to-alls are.
  CHECK(hidden.forward.ep_comm_s == Approx(0.3e-3));
  CHECK(hidden.forward.seconds == Approx(2.3e-3));
  CHECK(hidden.backward.ep_comm_s == Approx(0.3e-3));
  CHECK(hidden.backward.seconds == Approx(4.3e-3));
  // Host-bound passes hide by their host time: forward host 5 ms, so compute = 5 + 4 = 9 ms.
  t.forward.host_s = 5e-3;
  t.forward.seconds = 8e-3;
  // All-to-alls of 12 ms (forward 3, backward 9): 9 hidden, 3 + 0.9 exposed, a quarter forward.
  t.backward.ep_comm_s = 9e-3;
  t.backward.seconds = 13e-3;
  overlap_ep_comm(t, 0.1);
  CHECK(t.forward.ep_comm_s == Approx(0.975e-3));
  CHECK(t.forward.seconds == Approx(5.975e-3));
  CHECK(t.backward.ep_comm_s == Approx(2.925e-3));
  CHECK(t.backward.seconds == Approx(6.925e-3));
}

TEST_CASE("FSDP of a MoE model gathers dense weights over cp x dp and each MoE layer's experts over their own group",
          "[moe][analytic]") {
  // small-moe on one made-up node of 8 GPUs (1e12 bit/s, no latency), dp 8, ep 4, ZeRO-3
  // without prefetch, so every collective waits: the dense ring spans 8 GPUs, the experts'
  // 8 / ep 4 = 2. A gather is half a ring all-reduce of 2-byte elements, (n - 1) / n x 8 x 2
  // p bits / bandwidth; the gradients' reduce-scatter (2 bytes) is as long.
  ModelSpec m = small_moe();
  m.dtype = "fp16";  // the made-up GPU's precision
  NodeType node = made_up_node();
  node.intra_node_latency_s = 0;
  const double bw = node.intra_node_bandwidth_bits_per_s;
  ClusterSpec cluster = fasop::testing::made_up_cluster(node, 1);
  LayerOptions options;
  options.ep = 4;
  ProfileSpec profile = analytic_profile(m, node, {1}, {1}, options);
  AnalyticOptions no_prefetch;
  no_prefetch.execution.zero3_prefetch = false;
  AnalyticPolicy policy(no_prefetch);
  PlanKey key{.mbs = 1, .tp = 1, .dp = 8, .pp = 1, .node_order = {0}};
  key.ep = 4, key.zero_stage = 3;
  validate_plan_key(m, cluster, key);
  PlanContext ctx = make_plan_context(m, cluster, {&profile}, policy, key);
  const int n = m.num_units();
  ctx.unit_compute_s[0].assign(n, 3e-3);
  ctx.unit_layer_comm_s[0].assign(n, 0);
  const MemoryModel& memory = *ctx.partition_memory;
  const double dense = memory.stage_params_prefix(0).back(), experts = memory.expert_params_prefix.back();
  // Each MoE layer's 2 local experts of 3 x 1024 x 2048; the rest are dense weights.
  CHECK(experts == 2 * 2 * 3 * 1024.0 * 2048);
  const double gathers = 7.0 / 8 * 8 * 2 * dense / bw + 1.0 / 2 * 8 * 2 * experts / bw;
  const std::vector<int> whole{n};
  std::vector<StageTiming> t = policy.stage_timings(ctx, whole);
  const double Cf = n * 1e-3;
  CHECK(t[0].forward_s == Approx(Cf + gathers).epsilon(1e-9));
  CHECK(t[0].backward_s == Approx(2 * Cf + 2 * gathers).epsilon(1e-9));
  // Nothing left for after the pipeline: the reduce-scatters ran in the backward passes.
  CHECK(policy.dp_allreduce_s(ctx, whole)[0] == 0);
  // The search now plans it too.
  SearchSpaceOptions space = SearchSpaceOptions::beyond_fasop();
  space.ep = {4};
  space.zero_stages = {3};
  CHECK(!enumerate_plan_keys(m, cluster, space).empty());
}

TEST_CASE("recomputing layernorm and moe_act costs their element-wise passes again in the backward pass",
          "[moe][analytic]") {
  ModelSpec m = small_moe();
  m.dtype = "fp16";  // the made-up GPU's precision: 2-byte activations
  const RecomputeModules modules = kRecomputeLayernorm | kRecomputeMoeAct;
  LayerOptions options;
  options.ep = 4;
  // The MoE unit at mbs 1, tp 1: two norms read and write 4096 x 1024 (4 x 4,194,304 elements);
  // the experts' SwiGLU 3 x (4096 x top 2) x 2048. 67,108,864 elements, 134,217,728 bytes, 3 kernels.
  const PassWork moe = recomputed_elementwise_work(m, m.units[2], 1, 1, options, modules);
  CHECK(moe.memory_bytes == 134217728.0);
  CHECK(moe.kernels == 3);
  CHECK(moe.host_ops == 3);
  // The dense unit: the norms alone.
  const PassWork dense = recomputed_elementwise_work(m, m.units[1], 1, 1, options, modules);
  CHECK(dense.memory_bytes == 33554432.0);
  CHECK(dense.kernels == 2);
  // Sequence parallelism at tp 2 halves both: the norms' tokens and the tokens each GPU routes.
  LayerOptions sp = options;
  sp.sequence_parallel = true;
  CHECK(recomputed_elementwise_work(m, m.units[2], 2, 1, sp, modules).memory_bytes == 134217728.0 / 2);
  // Core attention, the default, is priced apart; the embedding recomputes nothing.
  CHECK(recomputed_elementwise_work(m, m.units[2], 1, 1, options, kRecomputeCoreAttn).memory_bytes == 0);
  CHECK(recomputed_elementwise_work(m, m.units[0], 1, 1, options, modules).memory_bytes == 0);

  // A plan on the made-up node (memory at 0.5 x 1e12 B/s, 1 us a kernel, 2 us an op the host
  // dispatches): the MoE unit's 134,217,728 bytes take 268.435456 us and its 3 kernels 3 us
  // (the host's 6 us hide under them); the dense unit's 67.108864 + 2 us. The stage's backward
  // pass grows by 69.108864 + 2 x 271.435456 = 611.979776 us, its forward not at all.
  const NodeType node = made_up_node();
  const ClusterSpec cluster = fasop::testing::made_up_cluster(node, 1);
  const ProfileSpec profile = analytic_profile(m, node, {1}, {1}, options);
  const AnalyticPolicy policy;
  auto context = [&](RecomputeModules recomputed) {
    PlanKey key{.mbs = 1, .tp = 1, .dp = 8, .pp = 1, .node_order = {0}};
    key.ep = 4;
    if (recomputed) key.set_recompute(RecomputeMode::kSelective), key.recompute_modules = recomputed;
    PlanContext ctx = make_plan_context(m, cluster, {&profile}, policy, key);
    ctx.unit_compute_s[0].assign(m.num_units(), 3e-3);
    ctx.unit_layer_comm_s[0].assign(m.num_units(), 1e-3);  // say, all-to-alls in the units' times
    return ctx;
  };
  const PlanContext without = context(0), with = context(modules);
  const std::vector<int> whole{m.num_units()};
  const StageTiming plain = policy.stage_timings(without, whole)[0], recomputed = policy.stage_timings(with, whole)[0];
  CHECK(recomputed.forward_s == plain.forward_s);
  CHECK(recomputed.backward_s - plain.backward_s == Approx(611.979776e-6).epsilon(1e-9));
  // It is compute: the units' communication is not repeated.
  const StagePassParts a = policy.pass_parts(without, whole)[0], b = policy.pass_parts(with, whole)[0];
  CHECK(b.layer_comm_s == a.layer_comm_s);
  CHECK(b.compute_s - a.compute_s == Approx(611.979776e-6).epsilon(1e-9));
}
