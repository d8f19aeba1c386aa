#include "report/dimension_notes.h"

#include <algorithm>
#include <cstdio>

namespace fasop {
namespace {

std::string layout_text(const PlanKey& k) {
  return "cp " + std::to_string(k.cp) + ", ep " + std::to_string(k.ep) + ", tp " + std::to_string(k.tp) + ", dp " +
         std::to_string(k.dp) + ", pp " + std::to_string(k.pp) + ", mbs " + std::to_string(k.mbs) +
         (k.virtual_stages > 1 ? ", v " + std::to_string(k.virtual_stages) : "");
}

std::string note(const char* name, const std::vector<CandidateResult>& ranked, int (*degree)(const PlanKey&),
                 const char* cannot_run) {
  const CandidateResult& best = ranked.front();
  auto with = std::find_if(ranked.begin(), ranked.end(), [&](const CandidateResult& r) { return degree(r.plan.key) > 1; });
  if (with == ranked.end()) return std::string(name) + ": not used: no layout with " + name + " > 1 could run (" + cannot_run + ")\n";
  const double best_s = best.estimate.step_time_s, with_s = with->estimate.step_time_s;
  char line[512];
  std::snprintf(line, sizeof line, "%s: not used: the best plan with %s > 1 (%s) takes %.4g s a step, %+.1f%% against %.4g s%s\n",
                name, name, layout_text(with->plan.key).c_str(), with_s, (with_s / best_s - 1) * 100, best_s,
                with->estimate.memory.is_oom && !best.estimate.memory.is_oom ? ", and does not fit in memory" : "");
  return line;
}

}  // namespace

std::string unused_dimension_notes(const std::vector<CandidateResult>& ranked, const SearchSpaceOptions& space,
                                   const std::string& model_dtype) {
  if (ranked.empty()) return "";
  auto tried = [](const std::vector<int>& degrees) {
    return std::any_of(degrees.begin(), degrees.end(), [](int d) { return d > 1; });
  };
  const PlanKey& best = ranked.front().plan.key;
  std::string notes;
  if (tried(space.cp) && best.cp == 1)
    notes += note("cp", ranked, [](const PlanKey& k) { return k.cp; },
                  "2 x cp must split the sequence and tp x cp divide the GPUs");
  if (tried(space.ep) && best.ep == 1)
    notes += note("ep", ranked, [](const PlanKey& k) { return k.ep; },
                  "ep must divide the experts and a stage's tp x cp x dp GPUs");
  if (tried(space.virtual_stages) && best.virtual_stages == 1)
    notes += note("v", ranked, [](const PlanKey& k) { return k.virtual_stages; },
                  "the interleaved schedule needs pp > 1 and whole rounds of pp micro-batches");
  // Each precision tried that the best plan does not train in ("": the model's own).
  for (const std::string& precision : space.precisions) {
    if (space.precisions.size() < 2 || precision == best.precision) continue;
    auto with = std::find_if(ranked.begin(), ranked.end(),
                             [&](const CandidateResult& r) { return r.plan.key.precision == precision; });
    if (with == ranked.end()) continue;
    const double best_s = ranked.front().estimate.step_time_s, with_s = with->estimate.step_time_s;
    char line[256];
    std::snprintf(line, sizeof line, "%s: not used: its best plan takes %.4g s a step, %+.1f%% against %.4g s\n",
                  (precision.empty() ? model_dtype + " (the model's)" : precision).c_str(), with_s, (with_s / best_s - 1) * 100,
                  best_s);
    notes += line;
  }
  return notes;
}

}  // namespace fasop
