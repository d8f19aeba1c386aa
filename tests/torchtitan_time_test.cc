// The torchtitan stack's step-time terms against hand counts: its Llama block's element-wise
// traffic eager and compiled, its per-op selective checkpointing's recomputed matmuls and
// element-wise work, its switches on the layer options, a fit moving both attention shares, its
// SDPA attention kernel, and PyTorch's ring attention (all-gathered chunks, merges).
#include <catch2/catch.hpp>

#include "profiles/analytic_profile.h"
#include "profiles/model_flops.h"
#include "profiles/op_selective_recompute.h"
#include "profiles/pytorch_ring_attention.h"
#include "specs/gpu_parameters.h"
#include "specs/gpu_spec.h"
#include "test_support.h"

using namespace fasop;
using fasop::testing::made_up_node;
using fasop::testing::preset_model;

namespace {

const LayerUnit& first_layer(const ModelSpec& m) {
  for (const LayerUnit& u : m.units)
    if (u.role == LayerRole::kTransformer) return u;
  FAIL("no transformer layer");
  return m.units[0];
}

LayerOptions torchtitan(bool compiled) {
  MemorySettings settings;
  settings.stack = TrainingStack::kTorchtitan;
  settings.compiled = compiled;
  return with_training_stack({}, settings);
}

}  // namespace

TEST_CASE("torchtitan's settings choose its layers and switches", "[torchtitan][time]") {
  MemorySettings settings;
  CHECK(with_training_stack({}, settings).stack == Stack::kMegatron);
  settings.stack = TrainingStack::kTorchtitan;
  CHECK(with_training_stack({}, settings).stack == Stack::kTorchtitan);
  CHECK_FALSE(with_training_stack({}, settings).execution.tp_comm_overlap);
  settings.compiled = settings.compiled_loss = settings.async_tp = true;
  const LayerOptions options = with_training_stack({}, settings);
  CHECK(options.stack == Stack::kTorchtitanCompiled);
  CHECK(options.compiled_loss);
  CHECK(options.execution.tp_comm_overlap);  // async tp: the collectives beside the GEMMs
}

TEST_CASE("torchtitan's block moves what its ops read and write, eager and compiled", "[torchtitan][time]") {
  const ModelSpec m = preset_model("llama3-8b");
  REQUIRE(m.hidden == 4096);
  REQUIRE(m.kv_width() == 1024);
  REQUIRE(m.ffn_hidden == 14336);
  const double tokens = m.sequence, bytes = 2;  // one sequence, bf16
  const LayerWork eager = layer_work(m, first_layer(m), 1, 1, torchtitan(false));
  const LayerWork compiled = layer_work(m, first_layer(m), 1, 1, torchtitan(true));
  // Per token, in 16-bit elements: norms and adds 42 h eager against 9 h compiled, rotary 10
  // against 2 of the 4,096 + 1,024 query and key widths, the MLP's SiLU and product 5 against 3
  // of its 14,336; the attention's copies (2 h) and repeat_kv's (2 h) the same in both.
  const double per_token = (42 - 9) * 4096.0 + (10 - 2) * 5120.0 + (5 - 3) * 14336.0;
  CHECK(eager.forward.memory_bytes - compiled.forward.memory_bytes == Approx(per_token * tokens * bytes).epsilon(1e-12));
  CHECK(eager.backward.memory_bytes == Approx(2 * eager.forward.memory_bytes).epsilon(1e-12));
  // Compiled: 9 h + 2 x 5,120 + 3 x 14,336 + 4 h per token, plus fp8-free bf16 (no casts).
  CHECK(compiled.forward.memory_bytes == Approx((13 * 4096.0 + 2 * 5120.0 + 3 * 14336.0) * tokens * bytes).epsilon(1e-12));
  // The same matmuls and attention either way.
  CHECK(eager.forward.gemm_flops() == compiled.forward.gemm_flops());
  CHECK(eager.forward.attention_flops == compiled.forward.attention_flops);
}

TEST_CASE("torchtitan's loss: fp32 cross entropy eager, the 16-bit logits read when compiled", "[torchtitan][time]") {
  const ModelSpec m = preset_model("llama3-8b");
  const LayerUnit& head = m.units.back();
  REQUIRE(head.role == LayerRole::kPostProcess);
  LayerOptions eager = torchtitan(true), fused = eager;
  fused.compiled_loss = true;
  const double logits = double(m.sequence) * m.vocab;  // unpadded: torchtitan pads no vocabulary
  const double norm = 4.0 * m.sequence * m.hidden * 2;
  // Eager: the upcast (2 + 4 bytes) and 16 bytes of fp32 passes forward; compiled: two reads of 2.
  CHECK(layer_work(m, head, 1, 1, eager).forward.memory_bytes == Approx(norm + 22 * logits).epsilon(1e-12));
  CHECK(layer_work(m, head, 1, 1, fused).forward.memory_bytes == Approx(norm + 4 * logits).epsilon(1e-12));
}

TEST_CASE("torchtitan's per-op checkpointing repeats every other matmul and the element-wise ops", "[torchtitan][time]") {
  const ModelSpec m = preset_model("llama3-8b");
  const double forward = model_flops_per_step(m, 1) / 3;
  // wk, wo and w3 of each of the 32 layers: 2 x 8,192 tokens x 4,096 x (1,024 + 4,096 + 14,336).
  CHECK(op_selective_gemm_share(m) * forward == Approx(32 * 2.0 * 8192 * 4096 * (1024 + 4096 + 14336)).epsilon(1e-12));
  // Its element-wise work is the block's forward traffic, without the matmuls and attention.
  const LayerOptions options = torchtitan(false);
  const PassWork again = op_selective_elementwise_work(m, first_layer(m), 1, 2, options);
  const PassWork forward_pass = layer_work(m, first_layer(m), 1, 2, options).forward;
  CHECK(again.memory_bytes == forward_pass.memory_bytes);
  CHECK(again.gemms.empty());
  CHECK(again.attention_flops == 0);
  CHECK(again.kernels == forward_pass.kernels - int(forward_pass.gemms.size()) - 1);
  CHECK(op_selective_elementwise_work(m, m.units.back(), 1, 2, options).memory_bytes == 0);
}

TEST_CASE("a fit of attention_shares moves both attention shares, their ratio kept", "[torchtitan][fit]") {
  GpuSpec gpu = made_up_node().gpu_data;  // fp16: 0.4 forward, 0.25 backward
  set_parameter(gpu, "fp16", "attention_shares", 0.2);
  CHECK(gpu.efficiency("fp16").attention_peak_share == 0.2);
  CHECK(gpu.efficiency("fp16").attention_backward_peak_share == Approx(0.125).epsilon(1e-12));
  CHECK(get_parameter(gpu, "fp16", "attention_shares") == 0.2);
}

TEST_CASE("a fit of sdpa_attention_shares moves PyTorch SDPA's two shares alone", "[torchtitan][fit]") {
  GpuSpec gpu = made_up_node().gpu_data;
  PrecisionEfficiency& e = gpu.precisions["fp16"];
  e.sdpa_attention_peak_share = 0.3, e.sdpa_attention_backward_peak_share = 0.24;
  set_parameter(gpu, "fp16", "sdpa_attention_shares", 0.15);
  CHECK(gpu.efficiency("fp16").sdpa_attention_peak_share == 0.15);
  CHECK(gpu.efficiency("fp16").sdpa_attention_backward_peak_share == Approx(0.12).epsilon(1e-12));
  CHECK(gpu.efficiency("fp16").attention_peak_share == 0.4);  // the fused kernel's untouched
}

TEST_CASE("torchtitan's attention runs at the GPU's SDPA shares, Megatron's at the fused kernel's", "[torchtitan][time]") {
  NodeType node = made_up_node();  // 100 TFLOP/s fp16; fused 0.4 forward, 0.25 backward
  PrecisionEfficiency& e = node.gpu_data.precisions["fp16"];
  e.sdpa_attention_peak_share = 0.2, e.sdpa_attention_backward_peak_share = 0.1;
  PassWork pass;
  pass.attention_flops = 1e12;
  LayerOptions megatron, titan = torchtitan(true);
  CHECK(pass_time(pass, 1, node, "fp16", megatron).gpu_s == Approx(1e12 / (100e12 * 0.4)).epsilon(1e-12));
  CHECK(pass_time(pass, 1, node, "fp16", titan).gpu_s == Approx(1e12 / (100e12 * 0.2)).epsilon(1e-12));
  pass.backward = true;
  CHECK(pass_time(pass, 1, node, "fp16", megatron).gpu_s == Approx(1e12 / (100e12 * 0.25)).epsilon(1e-12));
  CHECK(pass_time(pass, 1, node, "fp16", titan).gpu_s == Approx(1e12 / (100e12 * 0.1)).epsilon(1e-12));
}

TEST_CASE("GPU data without SDPA shares gives the fused kernel's, a later precision the first's", "[torchtitan][specs]") {
  const std::string head =
      "name: Y\nmemory_gib: 80\npeak_tflops: {bf16: 1000, fp8: 2000}\nmemory_bandwidth_bytes_per_s: 3.0e12\nprecisions:\n";
  const GpuSpec plain = parse_gpu_spec(
      head + "  bf16: {attention_peak_share: 0.6, attention_backward_peak_share: 0.45}\n  fp8: {gemm_peak_share: 0.6}\n", "y.yaml");
  CHECK(plain.efficiency("bf16").sdpa_attention_peak_share == 0.6);
  CHECK(plain.efficiency("bf16").sdpa_attention_backward_peak_share == 0.45);
  const GpuSpec hopper = parse_gpu_spec(head +
                                            "  bf16: {attention_peak_share: 0.6, attention_backward_peak_share: 0.45, "
                                            "sdpa_attention_peak_share: 0.374, sdpa_attention_backward_peak_share: 0.324}\n"
                                            "  fp8: {attention_peak_share: 0.7, attention_backward_peak_share: 0.5}\n",
                                            "y.yaml");
  CHECK(hopper.efficiency("bf16").sdpa_attention_peak_share == 0.374);
  CHECK(hopper.efficiency("fp8").sdpa_attention_peak_share == 0.374);  // the first precision's
  CHECK(hopper.efficiency("fp8").attention_peak_share == 0.7);
  CHECK_THROWS_WITH(parse_gpu_spec(head + "  bf16: {sdpa_attention_peak_share: 0.3}\n", "y.yaml"),
                    Catch::Contains("y.yaml") && Catch::Contains("give both or neither"));
}

TEST_CASE("PyTorch's ring attention: its merges and fp32 accumulation counted by hand", "[torchtitan][cp]") {
  // cp 2, one element of output and of each key/value chunk, bf16. Forward: the first block's
  // upcast (2 + 4), one step's upcast and merge (6 + 12 + 8 + 12), the cast back (4 + 2), and
  // keys and values concatenated to send (2 x (2 + 2)).
  const RingMergeWork forward = ring_merge_forward(2, 1, 1, 2);
  CHECK(forward.bytes == 6 + 38 + 6 + 8);
  CHECK(forward.kernels == 15);
  // Backward, per output element: the zeroed fp32 query gradient (4), two additions (4 + 2 + 4
  // each), the cast back (6); per key/value element: their zeroed gradients (2 x 4), one
  // concatenation to send (2 x 4), two steps of two additions and the fp32 concatenation
  // (2 x 2 x (10 + 8)), the casts back (2 x 6).
  const RingMergeWork backward = ring_merge_backward(2, 1, 1, 2);
  CHECK(backward.bytes == (4 + 20 + 6) + (8 + 8 + 72 + 12));
  CHECK(backward.kernels == 15);
}

TEST_CASE("torchtitan's ring gathers repeated keys and values beside the first sub-attention", "[torchtitan][cp]") {
  const ModelSpec m = preset_model("llama3-8b");
  LayerOptions options = torchtitan(true);
  options.cp = 8;
  const LayerWork ring = layer_work(m, first_layer(m), 1, 1, options);
  const double tokens = m.sequence / 8.0;
  // Keys and values repeated to the queries' 4,096 (repeat_kv before the kernel), bf16; backward
  // gathered again and their gradients passed on in fp32.
  CHECK(ring.forward.cp_ring_steps == 7);
  CHECK(ring.forward.cp_gather_chunk_bytes == 2 * tokens * 4096 * 2);
  CHECK(ring.forward.cp_ring_step_bytes == 0);
  CHECK(ring.backward.cp_gather_chunk_bytes == 2 * tokens * 4096 * 2);
  CHECK(ring.backward.cp_ring_step_bytes == 2 * tokens * 4096 * 4);
  CHECK(ring.forward.cp_merge_bytes == ring_merge_forward(8, tokens * 4096, tokens * 4096, 2).bytes);
  CHECK(ring.backward.cp_merge_bytes == ring_merge_backward(8, tokens * 4096, tokens * 4096, 2).bytes);
  // Timed: a 0.08 s attention hides the gather under its first eighth only. 7 chunks of 250 MB
  // on NVLink (1e12 bit/s, 1 us): 14.007 ms, 10 ms of it hidden (slowing the attention by 10%).
  NodeType node = made_up_node();
  PrecisionEfficiency& e = node.gpu_data.precisions["fp16"];
  e.sdpa_attention_peak_share = 0.2, e.sdpa_attention_backward_peak_share = 0.1;
  PassWork pass;
  pass.attention_flops = 0.08 * 100e12 * 0.2;
  pass.cp_ring_steps = 7;
  pass.cp_gather_chunk_bytes = 2.5e8;
  const double gather_s = 7 * (1e-6 + 2.5e8 * 8 / 1e12);
  CHECK(pass_time(pass, 1, node, "fp16", options).cp_comm_s == Approx(gather_s - 0.01 + 0.1 * 0.01).epsilon(1e-9));
  // Megatron-LM's ring passes a chunk a step beside each sub-attention: all of it hidden.
  PassWork te = pass;
  te.cp_gather_chunk_bytes = 0, te.cp_ring_step_bytes = 2.5e8;
  LayerOptions megatron;
  megatron.cp = 8;
  te.attention_flops = 0.08 * 100e12 * 0.4;
  CHECK(pass_time(te, 1, node, "fp16", megatron).cp_comm_s == Approx(0.1 * gather_s).epsilon(1e-9));
}

TEST_CASE("torchtitan's float8 tensor parallelism all-gathers in float8, reduce-scatters in bf16", "[torchtitan][time]") {
  ModelSpec m = preset_model("llama3-8b");
  m.dtype = "fp8";
  LayerOptions options = torchtitan(true);
  options.sequence_parallel = true;
  const double bf16_bytes = double(m.sequence) * 4096 * 2;  // the hidden states a collective gathers or reduces, in bf16
  const LayerWork titan = layer_work(m, first_layer(m), 2, 1, options);
  // Half a ring of 1-byte elements and half of 2-byte ones: an all-reduce of 3/4 the bf16 bytes.
  CHECK(titan.forward.tp_collective_bytes == Approx(0.75 * bf16_bytes).epsilon(1e-12));
  CHECK(titan.backward.tp_collective_bytes == Approx(0.75 * bf16_bytes).epsilon(1e-12));
  LayerOptions megatron;
  megatron.sequence_parallel = true;
  CHECK(layer_work(m, first_layer(m), 2, 1, megatron).forward.tp_collective_bytes == Approx(bf16_bytes).epsilon(1e-12));
  m.dtype = "bf16";
  CHECK(layer_work(m, first_layer(m), 2, 1, options).forward.tp_collective_bytes == Approx(bf16_bytes).epsilon(1e-12));
}

TEST_CASE("torchtitan's async tp leaves the backward's reduce-scatters of summed gradients exposed", "[torchtitan][time]") {
  ModelSpec m = preset_model("llama3-8b");
  m.dtype = "fp8";
  MemorySettings settings;
  settings.stack = TrainingStack::kTorchtitan;
  settings.compiled = settings.async_tp = true;
  LayerOptions options = with_training_stack({}, settings);
  options.sequence_parallel = true;
  // A region's pair: a float8 all-gather (1 byte an element) and a bf16 reduce-scatter (2): the
  // reduce-scatter takes 2/3 of the pair's time, and backward it reduces q, k and v's (w1 and
  // w3's) summed input gradient, which micro-pipelining does not fuse. Forward all is fused.
  const LayerWork fp8 = layer_work(m, first_layer(m), 2, 1, options);
  CHECK(fp8.forward.tp_unhidden_share == 0);
  CHECK(fp8.backward.tp_unhidden_share == Approx(2.0 / 3).epsilon(1e-12));
  m.dtype = "bf16";
  CHECK(layer_work(m, first_layer(m), 2, 1, options).backward.tp_unhidden_share == Approx(0.5).epsilon(1e-12));
  LayerOptions megatron;
  megatron.sequence_parallel = true;
  megatron.execution.tp_comm_overlap = true;  // Transformer Engine's overlap hides its reduce-scatters too
  CHECK(layer_work(m, first_layer(m), 2, 1, megatron).backward.tp_unhidden_share == 0);
  // Timed: 1 GB of collectives on a made-up node beside 1 s of GEMMs, half of it unhideable.
  NodeType node = made_up_node();
  PassWork pass;
  pass.backward = true;
  pass.gemms.push_back({1e4, 1e4, 2.5e4});  // 5e12 FLOPs at 50 TFLOP/s: 0.1 s
  pass.tp_collectives = 1;
  pass.tp_collective_bytes = 1e9;
  pass.tp_unhidden_share = 0.5;
  const double comm_s = 2 * 1e-6 + 8e9 / 1e12;  // tp 2: 2 (r - 1) latencies, 2 (r - 1) / r x bytes
  const PassTime t = pass_time(pass, 2, node, "fp16", megatron);
  CHECK(t.tp_comm_s == Approx(0.5 * comm_s + 0.1 * 0.5 * comm_s).epsilon(1e-9));
}

TEST_CASE("torchtitan's float8 training leaves the output layer in bf16", "[torchtitan][time]") {
  ModelSpec m = preset_model("llama3-8b");
  m.dtype = "fp8";
  const NodeType h100 = fasop::testing::PresetSpecs("llama3-8b", "dgx-h100").cluster.node_types[0];
  const LayerUnit& head = m.units.back();
  REQUIRE(head.role == LayerRole::kPostProcess);
  const LayerOptions titan = torchtitan(true);
  const LayerWork work = layer_work(m, head, 1, 1, titan);
  CHECK(work.forward.high_precision_gemms);
  CHECK(work.backward.high_precision_gemms);
  CHECK(work.forward.weight_bytes == 4096.0 * 128256 * 2);  // bf16 weights, unpadded vocabulary
  // Its passes cost what a bf16 model's would: GEMMs and the rest in bf16 alike.
  ModelSpec bf16 = m;
  bf16.dtype = "bf16";
  CHECK(pass_time(work.forward, 1, h100, "fp8", titan).seconds ==
        Approx(pass_time(layer_work(bf16, head, 1, 1, titan).forward, 1, h100, "bf16", titan).seconds).epsilon(1e-12));
  // Megatron's stack prices its head in the training precision (as its fits have it); a
  // torchtitan block runs its GEMMs in fp8.
  CHECK_FALSE(layer_work(m, head, 1, 1, {}).forward.high_precision_gemms);
  CHECK_FALSE(layer_work(m, first_layer(m), 1, 1, titan).forward.high_precision_gemms);
}
