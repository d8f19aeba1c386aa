// The torchtitan stack's step-time terms against hand counts: its Llama block's element-wise
// traffic eager and compiled, its per-op selective checkpointing's recomputed matmuls and
// element-wise work, its switches on the layer options, and a fit moving both attention shares.
#include <catch2/catch.hpp>

#include "profiles/analytic_profile.h"
#include "profiles/model_flops.h"
#include "profiles/op_selective_recompute.h"
#include "specs/gpu_parameters.h"
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
