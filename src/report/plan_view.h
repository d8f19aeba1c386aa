#pragma once
// A saved plan for people (`fasop-cpp plan show`): its specs, layout, every stage's layers,
// GPUs, compute and memory, and the estimate.
#include <string>
#include <vector>

#include "search/search.h"
#include "specs/cluster_spec.h"
#include "specs/model_spec.h"
#include "specs/plan_file.h"

namespace fasop {

/// The layers of units [first, first + count) of `model` in words, runs of one type grouped:
/// "embedding, transformer 0-16" (transformer layers numbered within their segment).
std::string stage_layers_text(const ModelSpec& model, int first, int count);

/// The plan as text: `result` is its estimate on `cluster` (shaped as the plan's nodes).
std::string plan_view_text(const PlanFile& plan, const ModelSpec& model, const ClusterSpec& cluster,
                           const CandidateResult& result);

/// Row labels of the plan's timeline: "stage 0: A10 x2, embedding, transformer 0-1".
std::vector<std::string> stage_labels(const ModelSpec& model, const ClusterSpec& cluster, const CandidateResult& result);

}  // namespace fasop
