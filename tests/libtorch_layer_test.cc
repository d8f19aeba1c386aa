// The LibTorch profiler's transformer layer counted op by op (profiles/libtorch_layer.h), by
// hand from src/profiler/layer_profiler.cc, and what the analytic model makes of the counts.
#include <catch2/catch.hpp>

#include "profiles/analytic_profile.h"
#include "profiles/libtorch_layer.h"
#include "specs/model_spec.h"
#include "test_support.h"

using namespace fasop;

namespace {

ModelSpec gpt2xl() {
  ModelSpec m;
  m.hidden = 1600, m.heads = 25, m.kv_heads = 25, m.ffn_hidden = 6400, m.sequence = 1024, m.vocab = 50257;
  m.dtype = "fp16", m.family = ModelFamily::kGpt2, m.flash_attention = true, m.causal = true;
  return m;
}

ModelSpec llama3_8b() {
  ModelSpec m;
  m.hidden = 4096, m.heads = 32, m.kv_heads = 8, m.ffn_hidden = 14336, m.sequence = 8192, m.vocab = 128256;
  m.dtype = "bf16", m.family = ModelFamily::kLlama, m.flash_attention = true, m.causal = true;
  m.norm = Norm::kRmsNorm, m.activation = Activation::kSwiglu;
  return m;
}

const LayerUnit kLayer{"transformer", LayerRole::kTransformer};

}  // namespace

TEST_CASE("GPT-2 XL's layer as the LibTorch profiler runs it, counted by hand", "[analytic][libtorch]") {
  // 1,024 tokens: H = T h = 1,638,400 (also the heads' width at tp 1), F = T f = 6,553,600.
  const double H = 1024.0 * 1600, F = 1024.0 * 6400;
  const EagerLayerCount c = libtorch_transformer_count(gpt2xl(), kLayer, 1, 1);
  // Forward: 2 LayerNorms (read, write), 4 GEMMs, GeLU (2 F), 2 residual adds (3 H each).
  CHECK(c.forward.kernels == 2 + 4 + 1 + 2);
  // Host: those 9 and, for attention, 3 narrows, 3 views, 3 transposes, the attention call, and
  // its output's transpose and reshape.
  CHECK(c.forward.host_ops == 9 + 9 + 1 + 2);
  CHECK(c.forward.elements == Approx(2 * 2 * H + 2 * F + 2 * 3 * H));
  // Backward: 8 GEMMs; per LayerNorm its input's gradient and its weight's (2); narrow's 3
  // fills, 3 copies and 2 sums; the norms' inputs' two gradients summed (2); GeLU's backward;
  // 8 weight gradients accumulated (2 norms x scale and bias, QKV, output, up, down).
  CHECK(c.backward.kernels == 8 + 4 + 8 + 2 + 1 + 8);
  CHECK(c.backward.host_ops == 42);
  // Traffic: norms 2 x (3 H + 2 H x 2 strided); attention's dO . O read (2 H); narrow: fills 3 x
  // 3 H, copies 2 x 3 H x 2 strided, sums 2 x 3 x 3 H; input sums 2 x 3 H; GeLU 3 F; weights
  // 3 x (1600 x 6400 + 2 x 1600 x 6400) elements read twice and written.
  const double weights = 1600.0 * 6400 + 2 * 1600.0 * 6400;
  CHECK(c.backward.elements == Approx(14 * H + 2 * H + (9 + 12 + 18) * H + 6 * H + 3 * F + 3 * weights));
}

TEST_CASE("Llama 3 8B's layer at tp 8: RMSNorm, repeated key/value heads and SwiGLU", "[analytic][libtorch]") {
  // 8,192 tokens; per GPU 4 query heads and 1 key/value head of 128.
  const double T = 8192, H = T * 4096, Q = T * 512, KV = T * 128, F = T * 1792, QKV = Q + 2 * KV;
  const EagerLayerCount c = libtorch_transformer_count(llama3_8b(), kLayer, 8, 1);
  // Forward: each RMSNorm is 6 kernels (pow, mean, add, rsqrt, two broadcast multiplies) moving
  // 3 H + 2 x 2 H x 2 strided; 5 GEMMs; k and v repeated (2 x 2 Q x 2 strided); silu and the
  // product (5 F); 2 residual adds.
  CHECK(c.forward.kernels == 12 + 5 + 2 + 2 + 2);
  CHECK(c.forward.host_ops == 12 + 5 + 9 + 2 + 1 + 2 + 2 + 2);
  CHECK(c.forward.elements == Approx(2 * 11 * H + 8 * Q + 5 * F + 6 * H));
  // Backward: 10 GEMMs; 11 kernels an RMSNorm; the repeats summed (2); narrow's 8; inputs used
  // twice (the norms' inputs read by the residual, pow and the multiply: 4; SwiGLU's: 1); silu's
  // backward and the product's 2; 7 weights.
  CHECK(c.backward.kernels == 10 + 22 + 2 + 8 + 5 + 3 + 7);
  const double weights = 4096.0 * (2 * 512 + 2 * 128) + 3 * 4096.0 * 1792;
  CHECK(c.backward.elements == Approx(2 * 27 * H + 2 * Q + 2 * (Q + KV) * 2 + 13 * QKV + 5 * 3 * H + 9 * F +
                                      3 * weights));
}

TEST_CASE("the libtorch stack takes the profiler's counts and launches no collective", "[analytic][libtorch]") {
  const ModelSpec m = llama3_8b();
  LayerOptions options;
  options.stack = Stack::kLibtorch;
  const LayerWork w = layer_work(m, kLayer, 8, 1, options);
  const EagerLayerCount c = libtorch_transformer_count(m, kLayer, 8, 1);
  // The fused attention's kernel (1) and its backward's two are the analytic model's; no rotary.
  CHECK(w.forward.kernels == c.forward.kernels + 1);
  CHECK(w.backward.kernels == c.backward.kernels + 2);
  CHECK(w.forward.host_ops == 35);
  CHECK(w.forward.memory_bytes == Approx(c.forward.elements * 2));
  CHECK(w.forward.tp_collectives == 2);
  // Host time: the 35 ops at H100's dispatch cost; the two all-reduces are not dispatched (the
  // profiler times one GPU's shard).
  const testing::PresetSpecs h100("llama3-8b", "aws-h100");
  const NodeType& node = h100.cluster.node_types.at(0);
  CHECK(pass_time(w.forward, 8, node, "bf16", options).host_s ==
        Approx(35 * node.gpu_data.launch.dispatch_s_of("libtorch")));
  options.stack = Stack::kMegatron;  // Megatron's fused layer: a host op a kernel, collectives too
  const LayerWork fused = layer_work(m, kLayer, 8, 1, options);
  CHECK(fused.forward.host_ops == fused.forward.kernels);
}
