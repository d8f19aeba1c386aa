#pragma once
// Where a published layout ranks when fasop-cpp searches the system it ran on: the case's GPUs,
// batch, precision, recomputation and communication switches, every layout the search tries
// (tp, pp, dp, ep, the micro-batch, virtual stages, the case's dispatcher beside alltoall), and
// the published layout priced as validate prices it.
#include <vector>

#include "search/search.h"
#include "validate/validate.h"

namespace fasop {

/// A published layout's place among a search of its system.
struct LayoutRank {
  ValidationResult published;       ///< the case as validate predicts it (its own layer placement)
  /// The published layout as the search priced it (its partition the search's), or, where the
  /// search's space lacks it, the case's prediction.
  double searched_s = 0;
  bool in_space = false;            ///< the search tried the published layout
  int rank = 0;                     ///< 1 + the searched plans that fit and are priced faster than searched_s
  size_t candidates = 0;            ///< plans the search priced
  double fastest_s = 0;             ///< the fastest plan that fits (searched_s where none is faster)
  std::vector<CandidateResult> top; ///< the search's fastest, at most `top` of them
};

/// Searches `c`'s system (its node type, its GPUs, its model and batch) for the layouts of
/// Megatron-Core with the case's precision, recomputation, ZeRO (its distributed optimizer or
/// FSDP), communication switches and token dispatcher (beside alltoall), and ranks the
/// published layout among them, each with the partition the search finds best for it.
LayoutRank rank_published_layout(const ValidationCase& c, size_t top = 5);

/// "case: published tp 1 pp 16 dp 16 ep 8 mbs 1 (hybridep) 24.37 s measured, 20.94 s priced: rank
/// 3 of 1234", the top plans under it, one a line, and where the published layout ranks below
/// them, what the fastest changes of it ("mbs 4 (published 1)").
std::string layout_rank_text(const LayoutRank& rank);

/// What `faster` changes of `published`'s layout, e.g. "mbs 4 (published 1), alltoall (hybridep)";
/// "" where nothing.
std::string layout_changes(const PlanKey& published, const PlanKey& faster);

}  // namespace fasop
