#pragma once
#include <string>

#include "costmodel/step_breakdown.h"

namespace fasop {

/// "compute 9.124154, bubble 1.143944, ..., embedding 0.000000 s": every term at 6 decimals in
/// step_term_fields' order, a line break and `indent` after every `per_line` terms.
std::string step_breakdown_text(const StepBreakdown& breakdown, int per_line, const std::string& indent);

/// The terms that take any time, at 3 significant digits, as a sum: "step 12.4 s = compute 9.12
/// + bubble 1.14 + tp comm 0.445 s" (the timeline's caption).
std::string step_breakdown_sum_text(const StepBreakdown& breakdown);

}  // namespace fasop
