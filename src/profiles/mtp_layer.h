#pragma once
// Multi-token prediction (DeepSeek-V3's MTP modules, Megatron-Core's MultiTokenPredictionBlock):
// the work they add to the post-process unit they share the output head with.
#include "profiles/analytic_profile.h"
#include "specs/model_spec.h"

namespace fasop {

/// One MTP module's forward work on one GPU of a tensor-parallel group of `tp`: the next tokens'
/// embedding lookup, the norms of the embedding and of the hidden state, eh_proj (the two
/// concatenated, 2h -> h, column-parallel), the transformer layer, then the head and loss again
/// (`head`: the post-process unit's own). ASSUMPTION: eh_proj's input gather under sequence
/// parallelism and the MTP embedding's gradient sync with the first stage are not priced.
LayerWork mtp_module_work(const ModelSpec& m, int tp, int mbs, const LayerOptions& options, const LayerWork& head);

/// Adds `from`'s work to `into` (GEMMs, traffic, launches, collectives of the same sizes).
void append_pass(PassWork& into, const PassWork& from);

}  // namespace fasop
