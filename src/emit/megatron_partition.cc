#include "emit/megatron_partition.h"

#include <set>

#include "emit/interleaved_chunks.h"
#include "emit/plan_checks.h"
#include "specs/spec_error.h"

namespace fasop {
namespace {

/// The units of each stage, after checking that the partition covers the model exactly once:
/// a plan edited by hand or saved for another model must not emit a silently wrong layout.
std::vector<std::vector<const LayerUnit*>> stage_units(const PlanFile& plan, const ModelSpec& model) {
  const std::vector<int> parts = stage_boundaries(plan, model);
  std::vector<std::vector<const LayerUnit*>> stages(plan.key.pp);
  for (int s = 0; s < plan.key.pp; ++s)
    for (int u = parts[s]; u < parts[s + 1]; ++u) stages[s].push_back(&model.units[u]);
  return stages;
}

/// Transformer layers among `units`: what Megatron counts per rank (embeddings and heads are
/// built by the rank's pre_process and post_process, not counted as layers).
int transformer_count(const std::vector<const LayerUnit*>& units) {
  int n = 0;
  for (const LayerUnit* u : units) n += u->role == LayerRole::kTransformer;
  return n;
}

int model_transformer_count(const ModelSpec& model, const std::string& segment) {
  int n = 0;
  for (const LayerUnit& u : model.units) n += u.role == LayerRole::kTransformer && u.segment == segment;
  return n;
}

int segment_units(const ModelSpec& model, const std::string& segment) {
  int n = 0;
  for (const LayerUnit& u : model.units) n += u.segment == segment;
  return n;
}

/// The transformer layers of each stage joined by '-': --balance, indexed by pipeline rank.
std::string layers_per_stage(const PlanFile& plan, const ModelSpec& model) {
  std::string balance;
  for (const auto& stage : stage_units(plan, model)) {
    if (!balance.empty()) balance += '-';
    balance += std::to_string(transformer_count(stage));
  }
  return balance;
}

/// Megatron's GPT/BERT builds the embedding on the first pipeline rank (pre_process) and the
/// output head and loss on the last (post_process): a decoder-only plan must say the same.
void require_embedding_first_loss_last(const PlanFile& plan, const ModelSpec& model) {
  int embeddings = 0, posts = 0;
  for (const LayerUnit& u : model.units) {
    embeddings += u.role == LayerRole::kEmbedding;
    posts += u.role == LayerRole::kPostProcess;
  }
  if (embeddings != 1 || posts != 1 || model.units.front().role != LayerRole::kEmbedding ||
      model.units.back().role != LayerRole::kPostProcess)
    throw SpecError(plan_where(plan) + "model '" + model.name +
                    "' must have one embedding unit first and one post_process unit last for Megatron-LM's "
                    "layout (E ... L); fix the model's layers");
}

/// Megatron's T5 builds the encoder's embedding on rank 0 and the decoder's on the split rank
/// (the fork's training.py get_model: pre_process = rank == 0 or rank == split_rank), so the
/// model must list the encoder's units, then the decoder's, each segment starting with its one
/// embedding (a post_process unit, if any, ending it).
void require_t5_segments(const PlanFile& plan, const ModelSpec& model) {
  std::vector<std::string> order;
  bool roles_fit = true;
  for (size_t i = 0; i < model.units.size(); ++i) {
    const LayerUnit& u = model.units[i];
    const bool starts = i == 0 || u.segment != model.units[i - 1].segment;
    const bool ends = i + 1 == model.units.size() || u.segment != model.units[i + 1].segment;
    if (starts) order.push_back(u.segment);
    roles_fit = roles_fit && starts == (u.role == LayerRole::kEmbedding) &&
                (u.role != LayerRole::kPostProcess || ends);
  }
  if (!roles_fit || order != std::vector<std::string>{"encoder", "decoder"})
    throw SpecError(plan_where(plan) + "model '" + model.name +
                    "' must list its encoder units, then its decoder units, each segment starting with its "
                    "one embedding unit, for Megatron-LM's T5 split rank; fix the model's layers");
}

/// The transformer layers of one model chunk of Megatron's even interleaved split, which splits
/// each rank's layers into v equal chunks (chunk c of rank r is model chunk c x pp + r): what the
/// fork's --num-layers-per-virtual-pipeline-stage says, and only a partition of layers / pp per
/// stage (embedding first, loss last) describes.
int interleaved_chunk_layers(const PlanFile& plan, const ModelSpec& model) {
  const PlanKey& key = plan.key;
  const int per_stage = model.num_transformer_layers() / key.pp;
  const auto stages = stage_units(plan, model);
  for (int s = 0; s < key.pp; ++s)
    if (transformer_count(stages[s]) != per_stage)
      throw SpecError(plan_where(plan) + "virtual stages " + std::to_string(key.virtual_stages) + " need " +
                      std::to_string(per_stage) + " layers on every stage (Megatron's even split); stage " +
                      std::to_string(s) + " has " + std::to_string(transformer_count(stages[s])) +
                      ". Re-plan with --fix vpp=1 or an even partition");
  if (per_stage % key.virtual_stages != 0)
    throw SpecError(plan_where(plan) + "virtual stages " + std::to_string(key.virtual_stages) +
                    " do not divide the " + std::to_string(per_stage) + " layers of a stage; re-plan with --fix vpp=1");
  return per_stage / key.virtual_stages;
}

/// A unit's letters in Megatron's layout: E the embedding, t a layer, L the loss (post-process)
/// after an m for each multi-token-prediction module.
std::string layout_letters(const LayerUnit& unit, const ModelSpec& model) {
  if (unit.role == LayerRole::kEmbedding) return "E";
  // The MTP modules, which the post-process unit carries, stand just before the loss.
  if (unit.role == LayerRole::kPostProcess) return std::string(model.mtp_layers, 'm') + "L";
  return "t";
}

/// `letters` in Megatron's notation, each run of a letter written "x*n": "Etttt" -> "Et*4".
std::string shortened(const std::string& letters) {
  std::string out;
  for (size_t i = 0; i < letters.size();) {
    size_t j = i;
    while (j < letters.size() && letters[j] == letters[i]) ++j;
    out += letters[i];
    if (j - i > 1) out += "*" + std::to_string(j - i);
    i = j;
  }
  return out;
}

/// Whether the plan's partition is Megatron's own even interleaved split: layers / pp on every
/// stage, which v divides.
bool even_interleaved_split(const PlanFile& plan, const ModelSpec& model) {
  const PlanKey& key = plan.key;
  const int layers = model.num_transformer_layers();
  if (layers % key.pp != 0 || (layers / key.pp) % key.virtual_stages != 0) return false;
  for (const auto& stage : stage_units(plan, model))
    if (transformer_count(stage) != layers / key.pp) return false;
  return true;
}

/// Upstream's layout, or Megatron's own even split for the interleaved schedule. The layout
/// places every layer, so --num-layers must equal its 't' count (checked by
/// validate_layer_layout), --decoder-first/last-pipeline-num-layers and
/// --account-for-embedding/loss-in-pipeline-split must be absent (TransformerConfig), and with
/// virtual stages it alone sets v (arguments.py: its chunks / pp).
std::vector<std::string> upstream_partition_args(const PlanFile& plan, const ModelSpec& model) {
  const PlanKey& key = plan.key;
  if (key.virtual_stages <= 1) return {"--pipeline-model-parallel-layout", megatron_pipeline_layout(plan, model)};
  if (even_interleaved_split(plan, model))
    return {"--num-virtual-stages-per-pipeline-rank", std::to_string(key.virtual_stages)};
  return {"--pipeline-model-parallel-layout", megatron_interleaved_layout(plan, model)};
}

/// The fork's --balance for GPT and BERT. With virtual stages the fork builds balance[r] / v
/// layers a chunk at offset c x layers / v + r x that (transformer.py), ignoring the other ranks'
/// --balance: right for the even split only. It names the chunk's layers, not v
/// (--num-layers-per-virtual-pipeline-stage), and asserts pp > 2 (arguments.py).
std::vector<std::string> fasop_partition_args(const PlanFile& plan, const ModelSpec& model) {
  const PlanKey& key = plan.key;
  if (key.virtual_stages <= 1) return {"--balance", fasop_balance(plan, model)};
  if (key.pp <= 2)
    throw SpecError(plan_where(plan) + "virtual_stages " + std::to_string(key.virtual_stages) + " with pp " +
                    std::to_string(key.pp) + ": FASOP's Megatron fork asserts \"pipeline-model-parallel size should "
                    "be greater than 2 with interleaved schedule\" (Megatron-LM-2/megatron/arguments.py); re-plan "
                    "with --fix vpp=1 or pp 3 or more, or emit for upstream Megatron-LM (--megatron-flavor upstream)");
  const int chunk = interleaved_chunk_layers(plan, model);
  return {"--num-layers-per-virtual-pipeline-stage", std::to_string(chunk), "--balance", fasop_balance(plan, model)};
}

/// T5: upstream refuses to pipeline it; the fork takes the split rank and --balance for both the
/// encoder's and the decoder's ranks.
std::vector<std::string> t5_partition_args(const PlanFile& plan, const ModelSpec& model, MegatronFlavor flavor) {
  const PlanKey& key = plan.key;
  const int encoder = model_transformer_count(model, "encoder"), decoder = model_transformer_count(model, "decoder");
  if (flavor == MegatronFlavor::kFasop && key.pp <= 1 && encoder != decoder)
    // The fork's _get_num_layers returns args.num_layers (= --encoder-num-layers) for the decoder
    // too when there is no pipeline.
    throw SpecError(plan_where(plan) + "FASOP's Megatron fork builds --encoder-num-layers (" + std::to_string(encoder) +
                    ") decoder layers with pp 1, not the model's " + std::to_string(decoder) +
                    " (transformer.py _get_num_layers); re-plan with --fix pp=2 or more, or emit for upstream "
                    "Megatron-LM (--megatron-flavor upstream)");
  if (key.pp <= 1) return {};
  if (flavor == MegatronFlavor::kUpstream)
    throw SpecError(plan_where(plan) + "pp " + std::to_string(key.pp) +
                    ": upstream Megatron-LM's T5 (examples/t5/pretrain_t5.py) raises \"Pipeline parallelism is "
                    "not supported for T5\"; re-plan T5 with --fix pp=1, or emit for FASOP's fork "
                    "(--megatron-flavor fasop)");
  if (key.virtual_stages > 1)
    throw SpecError(plan_where(plan) + "virtual_stages " + std::to_string(key.virtual_stages) +
                    ": FASOP's Megatron fork asserts \"Interleaved schedule not supported for model with both "
                    "encoder and decoder\" (training.py get_model); re-plan T5 with --fix vpp=1");
  return {"--pipeline-model-parallel-split-rank", std::to_string(t5_split_rank(plan, model)), "--balance",
          fasop_balance(plan, model)};
}

}  // namespace

bool is_encoder_decoder(const ModelSpec& model) {
  std::set<std::string> segments;
  for (const LayerUnit& u : model.units)
    if (!u.segment.empty()) segments.insert(u.segment);
  return model.family == ModelFamily::kT5 || segments.size() > 1;
}

std::string megatron_pipeline_layout(const PlanFile& plan, const ModelSpec& model) {
  if (is_encoder_decoder(model))
    throw SpecError(plan_where(plan) + "Megatron-LM's --pipeline-model-parallel-layout has no encoder layers "
                    "(PipelineParallelLayerLayout.validate_layer_layout raises NotImplementedError); "
                    "T5 cannot be laid out this way");
  require_embedding_first_loss_last(plan, model);
  std::string layout;
  for (const auto& stage : stage_units(plan, model)) {
    std::string letters;
    for (const LayerUnit* u : stage) letters += layout_letters(*u, model);
    layout += (layout.empty() ? "" : "|") + shortened(letters);
  }
  return layout;
}

std::string megatron_interleaved_layout(const PlanFile& plan, const ModelSpec& model) {
  require_embedding_first_loss_last(plan, model);
  // Each rank's units (its embedding or loss among them) split into v chunks
  // (interleaved_chunk_units). A rank with fewer units than chunks leaves some empty, which
  // Megatron's layout allows (an empty TransformerBlock passes its input on). The chunks' letters
  // in model order: the embedding opens the first chunk, the loss closes the last.
  const std::vector<int> sizes = interleaved_chunk_units(plan);
  std::vector<std::string> chunks(sizes.size());
  for (size_t k = 0, unit = 0; k < sizes.size(); ++k)
    for (int i = 0; i < sizes[k]; ++i, ++unit) chunks[k] += layout_letters(model.units[unit], model);
  // A run of equal chunks is written "(...|)*k"; the last chunk on its own.
  std::string layout;
  for (size_t i = 0; i + 1 < chunks.size();) {
    size_t j = i;
    while (j + 1 < chunks.size() && chunks[j] == chunks[i]) ++j;
    layout += j - i > 1 ? "(" + shortened(chunks[i]) + "|)*" + std::to_string(j - i) : shortened(chunks[i]) + "|";
    i = j;
  }
  return layout + shortened(chunks.back());
}

std::string fasop_balance(const PlanFile& plan, const ModelSpec& model) {
  // T5's encoder ranks and decoder ranks are both indexed by pipeline rank, so the value is the
  // same per-stage count once the stages are known to keep the segments apart.
  if (is_encoder_decoder(model))
    t5_split_rank(plan, model);
  else
    require_embedding_first_loss_last(plan, model);
  return layers_per_stage(plan, model);
}

int t5_split_rank(const PlanFile& plan, const ModelSpec& model) {
  require_t5_segments(plan, model);
  if (plan.key.pp < 2)
    throw SpecError(plan_where(plan) + "pp " + std::to_string(plan.key.pp) +
                    " has no split rank: T5's encoder and decoder need a pipeline stage each");
  const auto stages = stage_units(plan, model);
  int encoder_stages = 0;
  for (size_t s = 0; s < stages.size(); ++s) {
    if (stages[s].front()->segment != stages[s].back()->segment)
      throw SpecError(plan_where(plan) + "partition stage " + std::to_string(s) +
                      " holds both encoder and decoder units; Megatron-LM runs T5's encoder and decoder on separate "
                      "pipeline ranks (--pipeline-model-parallel-split-rank). Re-plan (the search keeps segments "
                      "apart), or let the partition's first stages hold exactly the encoder's " +
                      std::to_string(segment_units(model, "encoder")) + " units");
    // The model lists the encoder first, so its stages are the first ones.
    encoder_stages += stages[s].front()->segment == "encoder";
  }
  return encoder_stages;
}

std::vector<std::string> megatron_partition_args(const PlanFile& plan, const ModelSpec& model,
                                                 MegatronFlavor flavor) {
  if (is_encoder_decoder(model)) return t5_partition_args(plan, model, flavor);
  if (plan.key.pp <= 1) return {};
  return flavor == MegatronFlavor::kFasop ? fasop_partition_args(plan, model) : upstream_partition_args(plan, model);
}

}  // namespace fasop
