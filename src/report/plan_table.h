#pragma once
#include <string>
#include <vector>

#include "search/search.h"
#include "specs/cluster_spec.h"
#include "specs/model_spec.h"

namespace fasop {

/// The best `count` plans as an aligned text table, for people.
std::string best_plans_table(const ClusterSpec& cluster, const std::vector<CandidateResult>& results,
                             size_t count);

/// One plan on one line: time, cost, cluster shape, degrees and partition.
std::string plan_summary(const ClusterSpec& inventory, const CandidateResult& result);

/// "12.5M": a step count, short.
std::string format_iterations(double iterations);

/// One estimated plan in words: the step time, its parts, cost, memory and every stage.
std::string estimate_text(const ModelSpec& model, const ClusterSpec& cluster, const CandidateResult& result);

/// One estimated plan as a JSON object (FASOP's figures under FASOP's names, and the stages).
std::string estimate_json(const ModelSpec& model, const ClusterSpec& cluster, const CandidateResult& result);

}  // namespace fasop
