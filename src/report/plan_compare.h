#pragma once
// Two plans side by side, term by term: why one is faster (search --explain, plan compare).
#include <string>

#include "search/search.h"
#include "specs/cluster_spec.h"

namespace fasop {

/// The step's terms of `a` and `b` (named `a_label` and `b_label`) and their difference, the
/// largest difference first, then their memory peaks: a few lines of text. Both need their
/// breakdown (an estimate made with it).
std::string plan_comparison_text(const ClusterSpec& cluster, const CandidateResult& a, const std::string& a_label,
                                 const CandidateResult& b, const std::string& b_label);

}  // namespace fasop
