#include "emit/atorch_split_points.h"

#include "emit/plan_checks.h"
#include "specs/spec_error.h"

namespace fasop {
namespace {

/// ATorch wraps the model in PiPPy's LossWrapper, which holds it as `module`, before it traces it
/// for a pipeline (mixed_parallel with a loss_func, as training has): the traced names start so.
const char* kLossWrapperPrefix = "module.";

/// The first module layer `index` of `segment` calls in ATorch's traced graph, from transformers'
/// modeling_{gpt2,bert,t5,llama}.py: GPT-2's ln_1 (an nn.LayerNorm); BERT's attention (BertAttention,
/// which ATorch registers as shardable, hence a leaf of its trace); T5's and LLaMA's query
/// projection (an nn.Linear after an RMS norm that the trace goes through).
std::string first_module_of_layer(ModelFamily family, const std::string& segment, int index) {
  const std::string i = std::to_string(index);
  switch (family) {
    case ModelFamily::kGpt2: return "transformer.h." + i + ".ln_1";
    case ModelFamily::kBert: return "bert.encoder.layer." + i + ".attention";
    case ModelFamily::kT5: return segment + ".block." + i + ".layer.0.SelfAttention.q";
    case ModelFamily::kLlama: return "model.layers." + i + ".self_attn.q_proj";
  }
  throw SpecError("unknown model family");
}

/// The first module after the last layer, where a stage holding only the post-process unit
/// starts: GPT-2's final LayerNorm, BERT's pooler, LLaMA's head (its final RMS norm is traced
/// through). T5 has no post-process unit (its last layers hold it).
std::string first_module_of_post_process(const PlanFile& plan, ModelFamily family) {
  switch (family) {
    case ModelFamily::kGpt2: return "transformer.ln_f";
    case ModelFamily::kBert: return "bert.pooler.dense";
    case ModelFamily::kLlama: return "lm_head";
    case ModelFamily::kT5: break;
  }
  throw SpecError(plan_where(plan) + "field 'partition': a stage starts at a post-process unit, which the " +
                  family_name(family) + " family has no module for; re-plan (the model file's units changed?)");
}

/// The split before unit `boundary`, where a stage starts.
AtorchSplit split_before(const PlanFile& plan, const ModelSpec& model, const std::vector<int>& layer, int boundary) {
  const LayerUnit& unit = model.units[boundary];
  if (unit.role == LayerRole::kPostProcess) return {first_module_of_post_process(plan, model.family), ""};
  if (unit.role == LayerRole::kTransformer)
    return {first_module_of_layer(model.family, unit.segment, layer[boundary]), ""};
  // An embedding inside the model (T5's decoder embedding): the stage starts at the next layer.
  int u = boundary;
  while (u < model.num_units() && model.units[u].role != LayerRole::kTransformer) ++u;
  if (u == model.num_units())
    throw SpecError(plan_where(plan) + "field 'partition': the stage starting at unit " + std::to_string(boundary) +
                    " (" + unit.type + ") has no layer to split before; re-plan");
  const std::string module = first_module_of_layer(model.family, model.units[u].segment, layer[u]);
  return {module, "the stage starts at " + unit.type + " (unit " + std::to_string(boundary) +
                      "), a module the model calls twice, which a module name cannot tell apart; it starts at " +
                      module + " instead, and the stage before keeps the embedding lookup"};
}

}  // namespace

std::vector<AtorchSplit> atorch_split_points(const PlanFile& plan, const ModelSpec& model) {
  const std::vector<int> starts = stage_boundaries(plan, model);
  const std::vector<int> layer = model.segment_layer_indices();
  std::vector<AtorchSplit> splits;
  for (size_t s = 1; s + 1 < starts.size(); ++s) {
    AtorchSplit split = split_before(plan, model, layer, starts[s]);
    split.module = kLossWrapperPrefix + split.module;
    if (!splits.empty() && splits.back().module == split.module)
      throw SpecError(plan_where(plan) + "field 'partition': stage " + std::to_string(s - 1) +
                      " holds only an embedding that ATorch cannot split off (both stages would start at " +
                      split.module + "); re-plan with that stage merged into a neighbour");
    splits.push_back(split);
  }
  return splits;
}

std::string atorch_split_spill(ModelFamily family) {
  switch (family) {
    case ModelFamily::kLlama:
      return "LLaMA's RMS norms (LlamaRMSNorm) are no torch.nn modules and ATorch traces through them, so the norm "
             "before a stage's first module (input_layernorm, or model.norm before lm_head) runs at the end of the "
             "stage before";
    case ModelFamily::kT5:
      return "T5's RMS norms (T5LayerNorm) are no torch.nn modules and ATorch traces through them, so the "
             "layer.0.layer_norm of a stage's first block runs at the end of the stage before";
    case ModelFamily::kGpt2:
    case ModelFamily::kBert: return "";
  }
  return "";
}

}  // namespace fasop
