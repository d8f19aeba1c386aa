#pragma once
// Plan files meet the planner: a searched or estimated plan becomes a PlanFile, and a plan
// file becomes the specs it names, loaded and checked, with its estimate made again.
#include <memory>
#include <string>

#include "cli/planner_options.h"
#include "search/search.h"
#include "specs/plan_file.h"

namespace fasop {

/// The plan file of `result`, planned with `options` on `setup`.
PlanFile make_plan_file(const PlannerOptions& options, const PlannerSetup& setup, const CandidateResult& result);

/// A plan file loaded with its specs (the cluster shaped as the plan's nodes) and estimated again.
struct LoadedPlan {
  PlanFile file;
  PlannerOptions options;
  std::unique_ptr<PlannerSetup> setup;
  CandidateResult result;
};

/// What a loaded plan may take from elsewhere than its file (empty: the plan's own).
struct PlanOverrides {
  std::string cluster;      ///< estimate the plan on another cluster file
  std::string profile_dir;
  /// A folder where the plan's relative spec paths are looked for too (the directory a run
  /// was launched from, for the run directory's copy of its plan).
  std::string spec_dir;
};

/// Reads, checks and estimates the plan at `path`. Throws SpecError when the file is missing or
/// malformed, or when its model or cluster cannot hold the plan any more (a node type gone, fewer
/// nodes than the plan uses, a model with other units or batch), naming the file and the fix.
LoadedPlan load_plan(const std::string& path, const PlanOverrides& overrides = {});

/// The plan estimated again from its setup as it is now (profiles made again from the
/// cluster's node types: after their GPU data changed, as in calibrate --from-run).
CandidateResult estimate_again(LoadedPlan& loaded);

/// Writes `plan` to `path` atomically.
void save_plan(const std::string& path, const PlanFile& plan);

/// One line when `fresh` differs from the estimate saved in `plan`, else "".
std::string estimate_change(const PlanFile& plan, const CandidateResult& fresh);

}  // namespace fasop
