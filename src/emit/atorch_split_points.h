#pragma once
// Where ATorch's pipeline cuts a plan's model. ATorch traces the model with torch.fx down to the
// modules it can shard (nn.Linear, nn.Embedding, BertAttention, ...) and torch.nn's own layers, and
// cuts the traced graph before the nodes that call the modules named in `insert_before_modules`
// (mixed_parallel's pipe_config). A transformer layer (GPT2Block, LlamaDecoderLayer) is no node of
// that graph, so a stage starts at the first module its first layer calls. The graph is of the
// model in PiPPy's LossWrapper, hence names such as "module.transformer.h.17.ln_1".
#include <string>
#include <vector>

#include "specs/model_spec.h"
#include "specs/plan_file.h"

namespace fasop {

/// One split point: ATorch inserts a pipe_split before the traced call of `module`.
struct AtorchSplit {
  std::string module;  ///< qualified name in the wrapped Hugging Face model, e.g. "module.transformer.h.17.ln_1"
  std::string note;    ///< non-empty when the split is not where the plan's stage starts
};

/// The split before each stage after the first (pp - 1 of them, in model order). A stage that
/// starts at T5's decoder embedding starts at the decoder's first block instead (the embedding is
/// the module the encoder also calls, which a module name cannot tell apart), with a note. Throws
/// SpecError when the partition does not cover the model in pp stages, or when two stages would
/// start at the same module.
std::vector<AtorchSplit> atorch_split_points(const PlanFile& plan, const ModelSpec& model);

/// What runs on the stage before a split although the plan puts it after: the family's
/// normalisation before a layer's first module when ATorch traces through it (LLaMA's and T5's
/// RMS norms are no torch.nn modules), or "" when the split is exact (GPT-2, BERT).
std::string atorch_split_spill(ModelFamily family);

}  // namespace fasop
