#include "specs/recompute_modules.h"

#include <utility>

#include "specs/model_spec.h"
#include "specs/yaml_field.h"

namespace fasop {

namespace {

/// Megatron-Core's names, in the order its docstring lists them.
constexpr std::pair<RecomputeModule, const char*> kModuleNames[] = {
    {kRecomputeCoreAttn, "core_attn"}, {kRecomputeMoeAct, "moe_act"},         {kRecomputeLayernorm, "layernorm"},
    {kRecomputeMlaUpProj, "mla_up_proj"}, {kRecomputeMlp, "mlp"},             {kRecomputeMoe, "moe"},
    {kRecomputeSharedExperts, "shared_experts"},
};

}  // namespace

std::vector<std::string> recompute_module_names(RecomputeModules modules) {
  std::vector<std::string> names;
  for (const auto& [bit, name] : kModuleNames)
    if (modules & bit) names.emplace_back(name);
  return names;
}

std::string recompute_modules_text(RecomputeModules modules, const std::string& separator) {
  std::string text;
  for (const std::string& name : recompute_module_names(modules)) text += (text.empty() ? "" : separator) + name;
  return text;
}

std::optional<RecomputeModules> recompute_modules_named(const std::vector<std::string>& names, std::string* unknown) {
  RecomputeModules modules = 0;
  for (const std::string& name : names) {
    bool found = false;
    for (const auto& [bit, known] : kModuleNames)
      if (name == known) modules |= bit, found = true;
    if (!found) {
      if (unknown) *unknown = name;
      return std::nullopt;
    }
  }
  return modules;
}

const char* recompute_module_choices() { return "core_attn, moe_act, layernorm, mla_up_proj, mlp, moe, shared_experts"; }

RecomputeModules recompute_modules_field(const Field& field, bool selective) {
  if (!selective) field.fail("names what selective recomputation recomputes; set recompute: selective, or drop it");
  std::vector<std::string> names;
  for (const Field& item : field.items("a list of module names, e.g. [mla_up_proj, moe_act]", true))
    names.push_back(item.text());
  std::string unknown;
  const std::optional<RecomputeModules> modules = recompute_modules_named(names, &unknown);
  if (!modules) field.fail("unknown module '" + unknown + "'; use " + recompute_module_choices());
  return *modules;
}

std::string recompute_modules_fault(const ModelSpec& model, RecomputeModules modules) {
  if (modules == 0) return "names no module; give at least one of " + std::string(recompute_module_choices());
  if ((modules & kRecomputeMlaUpProj) && !model.mla.enabled())
    return "mla_up_proj needs multi-latent attention, which model '" + model.name +
           "' does not have (Megatron-Core refuses it); drop it";
  const bool experts = model.moe.enabled();
  for (RecomputeModule bit : {kRecomputeMoeAct, kRecomputeMoe, kRecomputeSharedExperts})
    if ((modules & bit) && !experts)
      return recompute_modules_text(bit) + " recomputes nothing in model '" + model.name +
             "', which has no experts; drop it";
  if ((modules & kRecomputeSharedExperts) && model.moe.shared_expert_ffn_hidden <= 0)
    return "shared_experts recomputes nothing in model '" + model.name + "', which has no shared expert; drop it";
  bool dense_layer = false;
  for (const LayerUnit& unit : model.units) dense_layer |= unit.role == LayerRole::kTransformer && !unit.moe;
  if ((modules & kRecomputeMlp) && !dense_layer)
    return "mlp recomputes nothing in model '" + model.name + "', whose every layer is MoE (recompute moe); drop it";
  return "";
}

}  // namespace fasop
