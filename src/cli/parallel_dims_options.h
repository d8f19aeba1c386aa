#pragma once
// search --cp and --ep: the context- and expert-parallel degrees a search tries (their defaults,
// their checks) and the analytic profiles their layouts are timed with.
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "cli/planner_options.h"

namespace fasop {

/// The degrees `search --cp` and `--ep` ask for (empty: the defaults of apply_parallel_dims).
struct ParallelDimsOptions {
  std::vector<int> cp;
  std::vector<int> ep;
  void add_to(CLI::App& command);
};

/// Sets setup's search space's cp and ep: --cp and --ep (or --fix cp=N, ep=N), else cp 1 and,
/// for a model with experts whose node types (with nodes in `counts`) are all timed
/// analytically, ep 1 and every power of two dividing its experts up to 64; then loads their
/// profiles. Degrees > 1 need analytic layer times (a one-line error otherwise). `counts`: the
/// nodes of each type (a shape search's inventory limits).
void apply_parallel_dims(const ParallelDimsOptions& options, const PlannerOptions& planner, PlannerSetup& setup,
                         const std::vector<int>& counts);

}  // namespace fasop
