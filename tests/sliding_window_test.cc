// Sliding-window attention against hand calculations: the share of the score matrix a window
// leaves, which layers Megatron-Core windows, GPT-OSS 120B's parameters and its attention work
// windowed and not, the model files refused with the field named, the plans refused with the
// reason, and Megatron-LM's flags.
#include <catch2/catch.hpp>

#include "costmodel/analytic_policy.h"
#include "costmodel/parallel_dims_checks.h"
#include "emit/megatron_args.h"
#include "profiles/analytic_profile.h"
#include "specs/sliding_window.h"
#include "specs/spec_loader.h"
#include "test_support.h"

using namespace fasop;
using fasop::testing::preset_model;
using fasop::testing::spec_error;

namespace {

/// A small decoder with `window` as its sliding_window field (empty: none).
std::string tiny_model(const std::string& window, const std::string& extra = "") {
  return "name: tiny\nhidden: 128\nheads: 8\nsequence: 64\nvocab: 1000\nglobal_batch: 8\nnorm: rmsnorm\n"
         "activation: swiglu\n" + (window.empty() ? "" : "sliding_window: " + window + "\n") + extra +
         "layers:\n  - {type: embedding, role: embedding}\n  - {type: transformer, role: transformer, repeat: 4}\n"
         "  - {type: post_process, role: post_process}\n";
}

}  // namespace

TEST_CASE("a window leaves each query itself and the tokens before it, up to the window", "[window]") {
  // 8 tokens, a window of 2: queries 0 and 1 meet 1 and 2 keys, the other six 3 each: 21 of 64.
  CHECK(causal_pair_share(8, 2) == 21.0 / 64);
  // GPT-OSS: 4,096 tokens, a window of 128: 128 x 129 / 2 + 3,968 x 129 = 520,128 pairs.
  CHECK(causal_pair_share(4096, 128) == Approx(520128.0 / (4096.0 * 4096)).epsilon(1e-15));
  // No window, or one as long as the sequence: the causal half fused kernels are priced at.
  CHECK(causal_pair_share(4096, 0) == 0.5);
  CHECK(causal_pair_share(4096, 4096) == 0.5);
  // Megatron-Core's layer numbers (1-based): full_every 2 windows the odd layers.
  SlidingWindow window{128, 2};
  CHECK(window.windows_layer(1));
  CHECK_FALSE(window.windows_layer(2));
  CHECK(window.windows_layer(35));
  CHECK_FALSE(window.windows_layer(36));
  CHECK(SlidingWindow{128, 0}.windows_layer(2));  // every layer
  CHECK_FALSE(SlidingWindow{}.windows_layer(1));
}

TEST_CASE("GPT-OSS 120B: its windowed layers, its parameters and its attention work", "[window][moe]") {
  const ModelSpec m = preset_model("gpt-oss-120b");
  REQUIRE(m.units.size() == 38);
  // Layers 1, 3, ... (units 1, 3, ...) windowed, each with a profile of its own.
  CHECK(m.units[1].attention_window == 128);
  CHECK(m.units[1].type == "moe_layer_window");
  CHECK(m.units[2].attention_window == 0);
  CHECK(m.units[2].type == "moe_layer");
  CHECK(m.units[36].type == "moe_layer");
  // 116.8B parameters (OpenAI's model card: 116.83B with the biases and sinks it has and the
  // model leaves out): embedding and head 201,088 x 2,880 each; a layer's attention
  // 2,880 x (4,096 + 2 x 512) + 4,096 x 2,880, 128 experts of 3 x 2,880 x 2,880, the router
  // 2,880 x 128 and two RMSNorms; the final RMSNorm.
  double params = 0;
  for (const LayerUnit& unit : m.units) params += unit_params(m, unit, 1) + unit_expert_params(m, unit, 1, 1);
  const double layer = 2880.0 * (4096 + 1024) + 4096.0 * 2880 + 128 * 3 * 2880.0 * 2880 + 2880 * 128 + 2 * 2880;
  CHECK(params == Approx(2 * 201088.0 * 2880 + 36 * layer + 2880).epsilon(1e-12));
  CHECK(params == Approx(116.8e9).epsilon(1e-3));
  // A windowed layer's fused attention: 3.1% of the score matrix where a full one takes half;
  // everything else alike.
  const LayerWork windowed = layer_work(m, m.units[1], 1, 1, {});
  const LayerWork full = layer_work(m, m.units[2], 1, 1, {});
  CHECK(full.forward.attention_flops == 4 * 4096.0 * 4096 * 4096 * 0.5);  // 4 b s^2 (64 x 64) / 2
  CHECK(windowed.forward.attention_flops == Approx(4 * 4096.0 * 520128 * 4096 / 4096).epsilon(1e-12));
  CHECK(windowed.forward.gemm_flops() == full.forward.gemm_flops());
  CHECK(windowed.backward.attention_flops == 2.5 * windowed.forward.attention_flops);
}

TEST_CASE("model files with a sliding window are checked, the field named", "[window][specs]") {
  const ModelSpec every = parse_model(tiny_model("{tokens: 16}"), "m.yaml");
  for (int u = 1; u <= 4; ++u) CHECK(every.units[u].attention_window == 16);
  const ModelSpec odd = parse_model(tiny_model("{tokens: 16, full_every: 2}"), "m.yaml");
  CHECK(odd.units[1].attention_window == 16);
  CHECK(odd.units[2].attention_window == 0);
  CHECK(odd.units[3].type == "transformer_window");
  CHECK_THAT(spec_error([] { parse_model(tiny_model("{tokens: 0}"), "m.yaml"); }),
             Catch::Contains("m.yaml") && Catch::Contains("sliding_window.tokens"));
  CHECK_THAT(spec_error([] { parse_model(tiny_model("{tokens: 16, every: 2}"), "m.yaml"); }),
             Catch::Contains("sliding_window") && Catch::Contains("every"));
  CHECK_THAT(spec_error([] { parse_model(tiny_model("{tokens: 16}", "causal: false\n"), "m.yaml"); }),
             Catch::Contains("sliding_window") && Catch::Contains("causal"));
}

TEST_CASE("plans with a sliding window: refused where not priced, Megatron-LM's flags", "[window][emit]") {
  ModelSpec m = preset_model("gpt-oss-120b");
  ClusterSpec cluster = fasop::testing::PresetSpecs("llama3-8b", "dgx-h100").cluster;
  cluster.nodes.assign(1, 0);
  PlanKey key;
  key.mbs = 1, key.tp = 1, key.dp = 4, key.cp = 2, key.pp = 1;
  key.node_order = {0};
  CHECK_THAT(spec_error([&] { validate_parallel_dims(m, cluster, key); }),
             Catch::Contains("--cp") && Catch::Contains("sliding-window"));
  const ModelSpec dense = parse_model(tiny_model("{tokens: 16}"), "m.yaml");
  CHECK_THAT(spec_error([&] { validate_parallel_dims_policy(dense, PlanKey{}, "fasop"); }),
             Catch::Contains("sliding_window") && Catch::Contains("--policy analytic"));
  PlanFile plan;
  plan.global_batch = 1280;
  plan.key.mbs = 1, plan.key.tp = 1, plan.key.dp = 8, plan.key.pp = 1, plan.key.ep = 8;
  plan.partition = {38};
  const std::vector<std::string> args = megatron_args(plan, m, MegatronFlavor::kUpstream);
  const auto at = std::find(args.begin(), args.end(), "--window-size");
  REQUIRE(at != args.end());
  CHECK(std::vector<std::string>(at, at + 4) ==
        std::vector<std::string>{"--window-size", "128,0", "--window-attn-skip-freq", "2"});
  // FASOP's fork has no window (a dense windowed model, whose experts do not stop it first).
  PlanFile dense_plan;
  dense_plan.global_batch = 8;
  dense_plan.key.mbs = 1, dense_plan.key.tp = 1, dense_plan.key.dp = 8, dense_plan.key.pp = 1;
  dense_plan.partition = {6};
  CHECK_THROWS_WITH(megatron_args(dense_plan, dense, MegatronFlavor::kFasop),
                    Catch::Contains("fork") && Catch::Contains("--window-size"));
}
