#include "report/plan_compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "costmodel/step_breakdown.h"
#include "report/plan_table.h"

namespace fasop {

std::string plan_comparison_text(const ClusterSpec& cluster, const CandidateResult& a, const std::string& a_label,
                                 const CandidateResult& b, const std::string& b_label) {
  const StepBreakdown &x = a.estimate.breakdown, &y = b.estimate.breakdown;
  struct Row {
    const char* name;
    double a_s, b_s;
  };
  std::vector<Row> rows;
  for (const StepTermField& term : step_term_fields()) rows.push_back({term.name, x.*term.seconds, y.*term.seconds});
  // The terms that make the difference come first; equal ones keep the reports' order.
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& p, const Row& q) { return std::fabs(p.a_s - p.b_s) > std::fabs(q.a_s - q.b_s); });
  const int width = static_cast<int>(std::max<size_t>({a_label.size(), b_label.size(), 12}));
  std::string text = "  " + a_label + ": " + plan_summary(cluster, a) + "\n  " + b_label + ": " +
                     plan_summary(cluster, b) + "\n";
  char line[256];
  std::snprintf(line, sizeof line, "  %-14s %*s %*s %12s\n", "term (s)", width, a_label.c_str(), width, b_label.c_str(),
                "difference");
  text += line;
  for (const Row& row : rows) {
    if (row.a_s == 0 && row.b_s == 0) continue;
    std::snprintf(line, sizeof line, "  %-14s %*.4f %*.4f %+12.4f\n", row.name, width, row.a_s, width, row.b_s,
                  row.a_s - row.b_s);
    text += line;
  }
  std::snprintf(line, sizeof line, "  %-14s %*.4f %*.4f %+12.4f\n", "step", width, a.estimate.step_time_s, width,
                b.estimate.step_time_s, a.estimate.step_time_s - b.estimate.step_time_s);
  text += line;
  std::snprintf(line, sizeof line, "  %-14s %*.2f %*.2f %+12.2f\n", "peak GiB/GPU", width, a.estimate.memory.oom_gpumem_gib,
                width, b.estimate.memory.oom_gpumem_gib, a.estimate.memory.oom_gpumem_gib - b.estimate.memory.oom_gpumem_gib);
  return text + line;
}

}  // namespace fasop
