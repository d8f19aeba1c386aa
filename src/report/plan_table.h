#pragma once
#include <string>
#include <vector>

#include "search/search.h"
#include "specs/cluster_spec.h"
#include "specs/model_spec.h"

namespace fasop {

/// The JSON members of the degrees beyond tp, dp and pp that are above 1, each after ", ":
/// `, "cp": 2, "ep": 8, "etp": 2`; "" for a plan without them (its JSON reads as before).
std::string context_expert_json(const PlanKey& key);

/// The best `count` plans as an aligned text table, for people.
std::string best_plans_table(const ClusterSpec& cluster, const std::vector<CandidateResult>& results,
                             size_t count);

/// One plan on one line: time, cost, cluster shape, degrees and partition.
std::string plan_summary(const ClusterSpec& inventory, const CandidateResult& result);

/// "12.5M": a step count, short.
std::string format_iterations(double iterations);

/// One estimated plan in words: the step time, its parts, cost, memory and every stage.
std::string estimate_text(const ModelSpec& model, const ClusterSpec& cluster, const CandidateResult& result);


}  // namespace fasop
