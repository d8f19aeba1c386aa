// Megatron-Core's selective recomputation modules against hand calculations: the activation
// bytes each module drops from a layer, the forward FLOPs its backward repeats, the modules a
// model cannot recompute, plan files, validation cases and Megatron-LM's flags.
#include <catch2/catch.hpp>

#include <algorithm>

#include "costmodel/analytic_policy.h"
#include "costmodel/parallel_dims_checks.h"
#include "emit/megatron_args.h"
#include "profiles/model_flops.h"
#include "profiles/recomputed_flops.h"
#include "specs/plan_file.h"
#include "specs/recompute_modules.h"
#include "test_support.h"

using namespace fasop;
using fasop::testing::preset_model;
using fasop::testing::spec_error;

namespace {

/// A transformer layer's activation bytes (tp 1, one sequence) with `modules` recomputed.
double layer_bytes(const ModelSpec& m, const LayerUnit& unit, RecomputeModules modules) {
  ActivationMode mode;
  mode.selective = modules;
  return unit_activation_bytes(m, unit, 1, 1, mode);
}

const LayerUnit& first_moe_layer(const ModelSpec& m) {
  return *std::find_if(m.units.begin(), m.units.end(), [](const LayerUnit& u) { return u.moe; });
}

}  // namespace

TEST_CASE("recompute modules: Megatron-Core's names, in its order, and unknown ones", "[recompute]") {
  std::string unknown;
  const auto modules = recompute_modules_named({"mla_up_proj", "moe_act"}, &unknown);
  REQUIRE(modules);
  CHECK(*modules == (kRecomputeMlaUpProj | kRecomputeMoeAct));
  CHECK(recompute_modules_text(*modules) == "moe_act,mla_up_proj");  // Megatron-Core's order
  CHECK(recompute_module_names(~0u) == std::vector<std::string>{"core_attn", "moe_act", "layernorm", "mla_up_proj",
                                                               "mlp", "moe", "shared_experts"});
  CHECK_FALSE(recompute_modules_named({"moe_act", "attention"}, &unknown));
  CHECK(unknown == "attention");
  PlanKey key;
  key.selective_recompute = true;
  CHECK(recompute_text(key) == "selective");  // core attention: Megatron-Core's default
  key.recompute_modules = kRecomputeLayernorm | kRecomputeMoeAct;
  CHECK(recompute_text(key) == "selective:moe_act/layernorm");
  key.recompute = true;
  CHECK(recompute_text(key) == "full");
}

TEST_CASE("recompute modules a model has nothing of are refused, the reason given", "[recompute]") {
  const ModelSpec llama = preset_model("llama2-7b"), oss = preset_model("gpt-oss-120b"), ds = preset_model("deepseek-v3");
  CHECK(recompute_modules_fault(ds, kRecomputeMlaUpProj | kRecomputeMlp | kRecomputeSharedExperts) == "");
  CHECK_THAT(recompute_modules_fault(llama, kRecomputeMlaUpProj), Catch::Contains("multi-latent attention"));
  CHECK_THAT(recompute_modules_fault(llama, kRecomputeMoeAct), Catch::Contains("moe_act") && Catch::Contains("no experts"));
  CHECK_THAT(recompute_modules_fault(oss, kRecomputeSharedExperts), Catch::Contains("no shared expert"));
  CHECK_THAT(recompute_modules_fault(oss, kRecomputeMlp), Catch::Contains("every layer is MoE"));
  CHECK_THAT(recompute_modules_fault(oss, 0), Catch::Contains("names no module"));
  // The EP all-to-all overlap does not run while the MoE block is recomputed (TransformerConfig).
  PlanKey key;
  key.pp = 1, key.ep = 8, key.selective_recompute = true, key.recompute_modules = kRecomputeMoe;
  CHECK_THAT(ep_overlap_fault(key), Catch::Contains("recomputes the MoE block"));
  key.recompute_modules = kRecomputeMoeAct;
  CHECK(ep_overlap_fault(key) == "");
}

TEST_CASE("DeepSeek-V3: the bytes each module drops from a MoE layer", "[recompute][mla][moe]") {
  const ModelSpec m = preset_model("deepseek-v3");
  const LayerUnit& layer = first_moe_layer(m);
  const double none = layer_bytes(m, layer, 0);
  // mla_up_proj: the queries and keys (128 heads x 192 each) and values (128 x 128) of 4,096
  // tokens in bf16: 2 x 4,096 x 128 x (2 x 192 + 128) = 536,870,912 bytes; the output stays.
  CHECK(none - layer_bytes(m, layer, kRecomputeMlaUpProj) == 536870912.0);
  // moe_act: the activation's output, 2 bytes x 2,048 for each of the busiest GPU's
  // 4,096 x 8 x 1.1 routed tokens: 147,639,500.8 bytes.
  CHECK(none - layer_bytes(m, layer, kRecomputeMoeAct) == Approx(147639500.8).epsilon(1e-12));
  // layernorm: the two norms' outputs, 2 x 2 bytes x 4,096 x 7,168 = 117,440,512.
  CHECK(none - layer_bytes(m, layer, kRecomputeLayernorm) == 117440512.0);
  // shared_experts: its gate, up and product, 6 bytes x 4,096 x 2,048 = 50,331,648.
  CHECK(none - layer_bytes(m, layer, kRecomputeSharedExperts) == 50331648.0);
  // moe: the router's fp32 scores (4 x 4,096 x 256 = 4,194,304), the routed tokens
  // (36,044.8 x (2 x 7,168 + 6 x 2,048) = 959,656,755.2) and the shared expert's 50,331,648.
  CHECK(none - layer_bytes(m, layer, kRecomputeMoe) == Approx(4194304.0 + 959656755.2 + 50331648.0).epsilon(1e-12));
  // Modules add up where they do not overlap; core attention drops nothing under fused attention.
  CHECK(none - layer_bytes(m, layer, kRecomputeMlaUpProj | kRecomputeMoeAct | kRecomputeCoreAttn) ==
        Approx(536870912.0 + 147639500.8).epsilon(1e-12));
}

TEST_CASE("a dense layer's mlp module drops its MLP's activations", "[recompute]") {
  const ModelSpec m = preset_model("llama2-7b");
  const LayerUnit& layer = m.units[1];
  // SwiGLU's gate, up and product: 6 bytes x 4,096 tokens x 11,008 = 270,532,608.
  CHECK(layer_bytes(m, layer, 0) - layer_bytes(m, layer, kRecomputeMlp) == 6.0 * 4096 * 11008);
}

TEST_CASE("the forward FLOPs a module's recomputation repeats", "[recompute][mla]") {
  const ModelSpec m = preset_model("deepseek-v3");
  const double forward = model_flops_per_step(m, 1) / 3;
  // mla_up_proj: each of the 61 layers' up-projections, 2 x 4,096 x 128 heads x (1,536 x 192 +
  // 512 x (128 + 128)) = 446,676,598,784 FLOPs.
  CHECK(recomputed_gemm_share(m, kRecomputeMlaUpProj) * forward == Approx(61 * 446676598784.0).epsilon(1e-12));
  // mlp: the 3 dense layers' SwiGLU MLPs, 2 x 4,096 x 7,168 x 3 x 18,432 each.
  CHECK(recomputed_gemm_share(m, kRecomputeMlp) * forward == Approx(3 * 2.0 * 4096 * 7168 * 3 * 18432).epsilon(1e-12));
  // Element-wise modules repeat no GEMM.
  CHECK(recomputed_gemm_share(m, kRecomputeMoeAct | kRecomputeLayernorm) == 0);
  // The time factor adds a third of the share (the forward is a third of a pass's compute).
  ActivationMode mode;
  mode.selective = kRecomputeMlaUpProj;
  CHECK(recompute_time_factor(m, mode) == Approx(1 + recomputed_gemm_share(m, kRecomputeMlaUpProj) / 3));
}

TEST_CASE("plan files and validation cases carry the modules, Megatron-LM gets them", "[recompute][emit][plan]") {
  const ModelSpec m = preset_model("deepseek-v3");
  PlanFile plan;
  plan.model = "deepseek-v3";
  plan.cluster = "dgx-b200";
  plan.policy = "analytic";
  plan.global_batch = 4096;
  plan.key.mbs = 1, plan.key.tp = 1, plan.key.dp = 16, plan.key.pp = 16, plan.key.ep = 8;
  plan.key.selective_recompute = true;
  plan.key.recompute_modules = kRecomputeMlaUpProj | kRecomputeMoeAct;
  plan.nodes = {{"dgx-b200", 32}};
  plan.node_order = std::vector<std::string>(32, "dgx-b200");
  plan.partition = std::vector<int>(16, 4);
  plan.partition[15] = int(m.units.size()) - 60;
  plan.estimate.iterations = 1000;
  const std::string yaml = plan_file_yaml(plan);
  CHECK_THAT(yaml, Catch::Contains("recompute: selective\nrecompute_modules: [moe_act, mla_up_proj]\n"));
  CHECK(parse_plan_file(yaml, "p.yaml").key.recompute_modules == plan.key.recompute_modules);
  std::string none = yaml;
  none.replace(none.find("recompute: selective"), 20, "recompute: none");
  CHECK_THAT(spec_error([&] { parse_plan_file(none, "p.yaml"); }),
             Catch::Contains("recompute_modules") && Catch::Contains("recompute: selective"));
  std::string unknown = yaml;
  unknown.replace(unknown.find("moe_act"), 7, "moe_ffn");
  CHECK_THAT(spec_error([&] { parse_plan_file(unknown, "p.yaml"); }),
             Catch::Contains("unknown module 'moe_ffn'") && Catch::Contains("mla_up_proj"));
  // Megatron-LM: selective granularity and the modules, a token each (nargs='+').
  const std::vector<std::string> args = megatron_args(plan, m, MegatronFlavor::kUpstream);
  const auto at = std::find(args.begin(), args.end(), "--recompute-granularity");
  REQUIRE(at != args.end());
  CHECK(std::vector<std::string>(at, at + 5) ==
        std::vector<std::string>{"--recompute-granularity", "selective", "--recompute-modules", "moe_act", "mla_up_proj"});
  // The default module writes no --recompute-modules.
  plan.key.recompute_modules = kDefaultRecomputeModules;
  const std::vector<std::string> plain = megatron_args(plan, m, MegatronFlavor::kUpstream);
  CHECK(std::find(plain.begin(), plain.end(), "--recompute-modules") == plain.end());
}
