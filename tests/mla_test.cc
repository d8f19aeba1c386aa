// Multi-head latent attention against hand calculations: DeepSeek-V3's parameters per layer and
// in all (671B), what tensor parallelism splits and what it replicates, one layer's forward GEMM
// and attention FLOPs, ring attention's keys and values, the activations kept, and the model
// files refused with the field named.
#include <catch2/catch.hpp>

#include "costmodel/analytic_policy.h"
#include "costmodel/make_context.h"
#include "costmodel/parallel_dims_checks.h"
#include "profiles/analytic_profile.h"
#include "profiles/mla_layer.h"
#include "specs/spec_loader.h"
#include "test_support.h"

using namespace fasop;
using fasop::testing::spec_error;

namespace {

/// DeepSeek-V3's attention with a small rest, for the loader's errors.
std::string tiny_mla(const std::string& extra, const std::string& mla = "{q_lora_rank: 64, kv_lora_rank: 32, "
                                                                      "qk_head_dim: 16, qk_rope_head_dim: 8, v_head_dim: 16}") {
  return "name: tiny-mla\nhidden: 128\nheads: 8\nsequence: 64\nvocab: 1000\nglobal_batch: 8\nnorm: rmsnorm\n"
         "activation: swiglu\nmla: " + mla + "\n" + extra +
         "layers:\n  - {type: embedding, role: embedding}\n  - {type: transformer, role: transformer, repeat: 2}\n"
         "  - {type: post_process, role: post_process}\n";
}

}  // namespace

TEST_CASE("DeepSeek-V3's MLA parameters follow its closed form, split and replicated over tp", "[mla]") {
  ModelSpec m = fasop::testing::preset_model("deepseek-v3");
  CHECK(m.mtp_layers == 1);
  m.mtp_layers = 0;  // the main model first; its MTP module below
  REQUIRE(m.mla.enabled());
  CHECK(m.mla.q_lora_rank == 1536);
  CHECK(m.mla.kv_lora_rank == 512);
  CHECK(m.mla.q_head_dim() == 192);
  CHECK(m.kv_heads == 128);
  REQUIRE(m.units.size() == 63);
  const LayerUnit &dense = m.units[1], &moe = m.units[4];
  CHECK(!dense.moe);
  CHECK(moe.moe);
  // Split over tp: q up 1536 x 128 x (128 + 64) = 37,748,736; kv up 512 x 128 x (128 + 128) =
  // 16,777,216; output 128 x 128 x 7168 = 117,440,512. Whole on every rank: q down 7168 x 1536 =
  // 11,010,048; kv down 7168 x (512 + 64) = 4,128,768; the latents' RMSNorms 1536 + 512.
  CHECK(mla_split_params(m.mla, 7168, 128) == 171966464.0);
  CHECK(mla_down_params(m.mla, 7168) == 15138816.0);
  CHECK(mla_norm_params(m.mla, 1) == 2048.0);
  // One layer's attention: 187,107,328 at tp 1; at tp 8, 171,966,464 / 8 + 15,138,816 + 2,048.
  CHECK(mla_attention_params(m.mla, 7168, 128, 1, 1) == 187107328.0);
  CHECK(mla_attention_params(m.mla, 7168, 128, 8, 1) == 36636672.0);
  // A dense layer adds its 3 x 7168 x 18432 MLP (split) and two RMSNorms of 7168 (whole).
  CHECK(unit_params(m, dense, 1) == 187107328.0 + 396361728.0 + 14336);
  CHECK(unit_params(m, dense, 8) == (171966464.0 + 396361728.0) / 8 + 15138816 + 2048 + 14336);
  // A MoE layer: the attention, the shared expert (3 x 7168 x 2048, split), the router (256 x
  // 7168, whole) and the norms; the 256 routed experts apart (3 x 7168 x 2048 each).
  CHECK(unit_params(m, moe, 1) == 187107328.0 + 44040192 + 1835008 + 14336);
  CHECK(unit_params(m, moe, 8) == (171966464.0 + 44040192) / 8 + 15138816 + 2048 + 1835008 + 14336);
  CHECK(unit_expert_params(m, moe, 1, 1) == 256 * 44040192.0);
  // The whole model: 671,026,404,352 parameters (DeepSeek-V3's "671B", MTP module not counted).
  double total = 0;
  for (const LayerUnit& unit : m.units) total += unit_params(m, unit, 1) + unit_expert_params(m, unit, 1, 1);
  CHECK(total == 671026404352.0);
}

TEST_CASE("an MLA layer's forward GEMMs and attention FLOPs at one micro-batch", "[mla]") {
  const ModelSpec m = fasop::testing::preset_model("deepseek-v3");
  const LayerUnit& dense = m.units[1];
  // tp 1, one 4096-token sequence: per token 2 x (171,966,464 + 15,138,816) for the attention's
  // projections and 2 x 3 x 7168 x 18432 for the MLP: 1,166,934,016 FLOPs, x 4096.
  const LayerWork one = layer_work(m, dense, 1, 1);
  CHECK(one.forward.gemm_flops() == Approx(4096 * 1166934016.0).epsilon(1e-12));
  CHECK(one.forward.gemm_flops() == Approx(4779761729536.0).epsilon(1e-12));
  // Flash attention, causal: 2 x 4096 x 4096 x 128 heads x (192 + 128) x 1/2.
  CHECK(one.forward.attention_flops == Approx(687194767360.0).epsilon(1e-12));
  // The five projections' shapes: the down-projections 4096 x 1536 and x 576 of 7168, the
  // up-projections 128 x 192 of 1536 and 128 x 256 of 512, the output 7168 of 128 x 128.
  const MlaWork w = mla_attention_work(m, 4096, 1, {});
  REQUIRE(w.gemms.size() == 5);
  CHECK((w.gemms[0].n == 1536 && w.gemms[0].k == 7168));
  CHECK((w.gemms[1].n == 576 && w.gemms[1].k == 7168));
  CHECK((w.gemms[2].n == 24576 && w.gemms[2].k == 1536));
  CHECK((w.gemms[3].n == 32768 && w.gemms[3].k == 512));
  CHECK((w.gemms[4].n == 7168 && w.gemms[4].k == 16384));
  CHECK(w.weights_per_gpu == 187105280.0);

  // tp 8 with sequence parallelism: each rank runs the down-projections on its 512 tokens with
  // the whole weights, and 1/8 of the up-projections, output and MLP on all 4096.
  LayerOptions sp;
  sp.sequence_parallel = true;
  const LayerWork eight = layer_work(m, dense, 8, 1, sp);
  CHECK(eight.forward.gemm_flops() ==
        Approx(512 * 2 * 15138816.0 + 4096 * 2 * (171966464.0 + 396361728.0) / 8).epsilon(1e-12));
  CHECK(eight.forward.attention_flops == Approx(687194767360.0 / 8).epsilon(1e-12));
  CHECK(mla_attention_work(m, 4096, 8, sp).weights_per_gpu == 15138816.0 + 171966464.0 / 8);
  // Without sequence parallelism every rank projects all 4096 tokens down.
  CHECK(mla_projection_flops_per_token(m.mla, 7168, 128, 8, false) == 2 * 15138816.0 + 2 * 171966464.0 / 8);
  CHECK(layer_work(m, dense, 8, 1).forward.gemm_flops() ==
        Approx(4096 * (2 * 15138816.0 + 2 * (171966464.0 + 396361728.0) / 8)).epsilon(1e-12));
}

TEST_CASE("MLA's ring attention passes full-width keys and values, its activations", "[mla][cp]") {
  const ModelSpec m = fasop::testing::preset_model("deepseek-v3");
  const LayerUnit& dense = m.units[1];
  LayerOptions options;
  options.cp = 2;
  // cp 2: one step passing 2048 tokens' keys (128 x 192) and values (128 x 128) in bf16.
  const LayerWork ring = layer_work(m, dense, 1, 1, options);
  CHECK(ring.forward.cp_ring_steps == 1);
  CHECK(ring.forward.cp_ring_step_bytes == 2048 * 128 * 320 * 2.0);
  CHECK(ring.backward.cp_ring_step_bytes == 2 * 2048 * 128 * 320 * 2.0);
  // Activations of a dense MLA layer at tp 1, one sequence: the two RMSNorms' inputs and outputs
  // (8sbh; no dropout masks, DeepSeek-V3 trains without) and their fp32 rstd (8 bytes a token),
  // the MLA attention's latents (4 x (1536 + 512) + 2 x 64 bytes a token) and queries, keys,
  // values and output (2 x 128 x (2 x 192 + 2 x 128)), the SwiGLU MLP's 6sbf.
  const double s = 4096;
  const double expected = 8 * s * 7168 + 8 * s + 8320 * s + 2 * s * 128 * 640 + 6 * s * 18432;
  CHECK(unit_activation_bytes(m, dense, 1, 1, ActivationMode{}) == Approx(expected).epsilon(1e-12));
  CHECK(expected == 1393065984.0);
}

TEST_CASE("model files with an mla block are checked, the field named", "[mla][specs]") {
  const ModelSpec tiny = parse_model(tiny_mla(""), "tiny.yaml");
  CHECK(tiny.mla.v_head_dim == 16);
  CHECK(tiny.kv_heads == 8);
  CHECK_THAT(spec_error([] { parse_model(tiny_mla("", "{q_lora_rank: 64, kv_lora_rank: 32, qk_head_dim: 16, v_head_dim: 16}"), "t.yaml"); }),
             Catch::Contains("qk_rope_head_dim"));
  CHECK_THAT(spec_error([] { parse_model(tiny_mla("", "{q_lora_rank: 64, kv_lora_rank: 0, qk_head_dim: 16, "
                                                      "qk_rope_head_dim: 8, v_head_dim: 16}"), "t.yaml"); }),
             Catch::Contains("kv_lora_rank"));
  CHECK_THAT(spec_error([] { parse_model(tiny_mla("", "{q_lora_rank: 64, kv_lora_rank: 32, qk_head_dim: 16, "
                                                      "qk_rope_head_dim: 8, v_head_dim: 16, rope_theta: 1}"), "t.yaml"); }),
             Catch::Contains("rope_theta"));
  CHECK_THAT(spec_error([] { parse_model(tiny_mla("", "1536"), "t.yaml"); }), Catch::Contains("mla"));
  CHECK_THAT(spec_error([] { parse_model(tiny_mla("kv_heads: 2\n"), "t.yaml"); }),
             Catch::Contains("kv_heads") && Catch::Contains("must equal heads"));
  CHECK_THAT(spec_error([] { parse_model(tiny_mla("head_dim: 16\n"), "t.yaml"); }),
             Catch::Contains("head_dim") && Catch::Contains("remove head_dim"));
  // FASOP's policy has no formula for it.
  PlanKey key;
  CHECK_THAT(spec_error([&] { validate_parallel_dims_policy(tiny, key, "fasop"); }),
             Catch::Contains("multi-head latent attention"));
  validate_parallel_dims_policy(tiny, key, "analytic");
}

TEST_CASE("DeepSeek-V3's multi-token-prediction module: its parameters and its work with the loss", "[mla][mtp]") {
  ModelSpec m = fasop::testing::preset_model("deepseek-v3");
  m.mtp_layers = 0;
  const LayerUnit& post = m.units.back();
  REQUIRE(post.role == LayerRole::kPostProcess);
  const double without = unit_params(m, post, 1), without_experts = unit_expert_params(m, post, 1, 1);
  const LayerWork head = layer_work(m, post, 1, 1);
  m.mtp_layers = 1;
  CHECK(m.mtp_transformer_unit().moe);  // like the last layer: MoE
  // The module: its embedding 7168 x 129,280 = 926,679,040; eh_proj 2 x 7168 x 7168 =
  // 102,760,448; its two norms and final norm 3 x 7168; a MoE layer 232,996,864 (above) and its
  // 256 experts 11,274,289,152.
  CHECK(unit_params(m, post, 1) - without == 926679040.0 + 102760448 + 21504 + 232996864);
  CHECK(unit_expert_params(m, post, 1, 1) - without_experts == 11274289152.0);
  // The model: 683,563,151,360 parameters; DeepSeek's 685B counts the module's own copy of the
  // output head too (926,679,040 more: 684.49B).
  double total = 0;
  for (const LayerUnit& unit : m.units) total += unit_params(m, unit, 1) + unit_expert_params(m, unit, 1, 1);
  CHECK(total == 683563151360.0);
  // Its forward GEMMs: the head twice, eh_proj (4,096 tokens x 7168 x 14,336 x 2) and the layer's.
  const LayerWork with = layer_work(m, post, 1, 1);
  const LayerWork layer = layer_work(m, m.mtp_transformer_unit(), 1, 1);
  const double eh_proj = 2.0 * m.sequence * 7168 * 14336;
  CHECK(with.forward.gemm_flops() == Approx(2 * head.forward.gemm_flops() + layer.forward.gemm_flops() + eh_proj));
  CHECK(with.forward.attention_flops == layer.forward.attention_flops);
  CHECK(with.backward.gemm_flops() == Approx(2 * with.forward.gemm_flops()));
  // The fasop policy refuses it, on a dense model too.
  ModelSpec dense = fasop::testing::preset_model("llama2-7b");
  dense.mtp_layers = 1;
  CHECK_THAT(spec_error([&] { validate_parallel_dims_policy(dense, PlanKey{}, "fasop"); }),
             Catch::Contains("multi-token prediction"));
}
