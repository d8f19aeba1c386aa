#pragma once
// Megatron-LM's pipeline layout (--pipeline-model-parallel-layout, Megatron-Bridge's
// pipeline_model_parallel_layout): which layers each model chunk builds, read from its text.
// The inverse of what emit/megatron_partition.h writes.
#include <string>
#include <vector>

namespace fasop {

/// A layout read from text: each model chunk's layers, one character a layer ('E' embedding,
/// 't' transformer layer, 'm' multi-token-prediction layer, 'L' loss), chunks in Megatron's
/// order (chunk c lives on pipeline rank c % pp, virtual stage c / pp).
struct PipelineLayout {
  std::vector<std::string> chunks;
};

/// Reads Megatron's notation: chunks joined by '|', "x*n" repeats one character, "(...)*n"
/// repeats a group, commas are cosmetic; unrolled exactly as Megatron-LM's
/// PipelineParallelLayerLayout.parse_str_to_list does (megatron/core/transformer/
/// pipeline_parallel_layer_layout.py). Returns false with `error` set for an unknown character
/// or a layout that unrolls past 100,000 layers.
bool parse_pipeline_layout(const std::string& text, PipelineLayout* layout, std::string* error);

/// Pipeline units per pipeline rank (the embedding and the loss count as one unit each, as a
/// plan's partition counts them) of a layout for `pp` ranks of a model with `transformer_layers`
/// layers and `mtp_layers` multi-token-prediction modules, after Megatron's checks
/// (validate_layer_layout): the chunks are pp x `virtual_stages`, the embedding comes first and
/// the loss last, once each, and the transformer layers number the model's. A rank's units are
/// those of all its chunks, so the embedding lands on rank 0 and the loss on rank pp - 1. The
/// MTP modules ('m') must stand just before the loss, as many as the model has: the cost model
/// prices them with the post-process unit (no units of their own). Returns an empty vector with
/// `error` set when a check fails.
std::vector<int> layout_units_per_rank(const PipelineLayout& layout, int pp, int virtual_stages,
                                       int transformer_layers, int mtp_layers, std::string* error);

}  // namespace fasop
