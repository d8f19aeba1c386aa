#include "report/step_breakdown_text.h"

#include <algorithm>

#include "report/number_format.h"
#include "report/svg_text.h"

namespace fasop {
namespace {

/// "tp_comm" -> "tp comm".
std::string spoken(const char* name) {
  std::string text = name;
  std::replace(text.begin(), text.end(), '_', ' ');
  return text;
}

}  // namespace

std::string step_breakdown_text(const StepBreakdown& breakdown, int per_line, const std::string& indent) {
  std::string out;
  int written = 0;
  for (const StepTermField& term : step_term_fields()) {
    if (written > 0) out += written % per_line == 0 ? ",\n" + indent : ", ";
    out += spoken(term.name) + " " + fixed(breakdown.*term.seconds, 6);
    ++written;
  }
  return out + " s\n";
}

std::string step_breakdown_sum_text(const StepBreakdown& breakdown) {
  std::string out = "step " + format_number("%.3g", breakdown.total_s()) + " s =";
  bool first = true;
  for (const StepTermField& term : step_term_fields()) {
    const double seconds = breakdown.*term.seconds;
    if (seconds <= 0) continue;
    out += std::string(first ? " " : " + ") + spoken(term.name) + " " + format_number("%.3g", seconds);
    first = false;
  }
  return out + " s";
}

}  // namespace fasop
