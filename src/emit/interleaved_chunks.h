#pragma once
// How an interleaved plan's stages split into model chunks, one convention for every emitter
// (Megatron-LM's layout, torchtitan's stage module lists): the plan gives each pipeline rank its
// units; the schedule runs them as v chunks a rank, chunk c of rank r being model chunk c x pp + r.
#include <vector>

#include "specs/model_spec.h"
#include "specs/plan_file.h"

namespace fasop {

/// Units of each model chunk (pp x v numbers, in model order): each rank's units split into v
/// chunks as evenly as they go, the larger first; the last rank, where it has fewer units than
/// chunks, leaves its first ones empty, so that the loss still closes the last chunk.
std::vector<int> interleaved_chunk_units(const PlanFile& plan);

}  // namespace fasop
