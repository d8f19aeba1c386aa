#pragma once
// Why a search did not use a dimension it tried: context or expert parallelism, or the
// interleaved schedule, beside the fastest plan, as a user weighing them wants to see it.
#include <string>
#include <vector>

#include "search/search.h"

namespace fasop {

/// For cp, ep and virtual stages (v), where the search tried degrees beyond 1 (`space`) and the first plan of
/// `ranked` (the search's order) has 1: a line with the first plan that uses one, its step time
/// and how much slower it is, or that no layout with it could run; and for each precision tried
/// (SearchSpaceOptions::precisions) that the first plan does not train in, its best plan's step
/// time. Empty where nothing applies.
/// `model_dtype` names the model's own precision in the text.
std::string unused_dimension_notes(const std::vector<CandidateResult>& ranked, const SearchSpaceOptions& space,
                                   const std::string& model_dtype);

}  // namespace fasop
