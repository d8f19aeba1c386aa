#include "cli/parallel_dims_options.h"

#include <algorithm>
#include <iostream>

#include "cli/planner_options.h"
#include "costmodel/parallel_dims_checks.h"
#include "specs/spec_error.h"

namespace fasop {
namespace {

bool beyond_one(const std::vector<int>& degrees) {
  return std::any_of(degrees.begin(), degrees.end(), [](int d) { return d != 1; });
}

/// The precisions of --precision NAME,... (the model's own as ""), those some GPU lacks left out
/// with a line on stderr; the model's own alone without the option.
std::vector<std::string> searched_precisions(const PlannerOptions& planner, const PlannerSetup& setup,
                                             const std::vector<int>& counts, bool analytic) {
  const std::vector<std::string>& names = planner.fasop.precision_names;
  if (names.empty()) return {""};
  std::vector<std::string> precisions;
  std::vector<std::pair<std::string, std::string>> left_out;  // name, why
  for (const std::string& name : names) {
    if (const NodeType* lacking = setup.node_type_without(counts, name)) {
      left_out.push_back({name, "the " + (lacking->gpu_data.name.empty() ? lacking->gpu : lacking->gpu_data.name) +
                                    " does not run it (" + missing_precision_text(name) + ")"});
      continue;
    }
    const std::string precision = name == setup.model.dtype ? "" : name;
    if (std::find(precisions.begin(), precisions.end(), precision) == precisions.end()) precisions.push_back(precision);
  }
  // None left: one line that says why each was left out; else a line each on stderr.
  if (precisions.empty()) {
    std::string why;
    for (const auto& [name, reason] : left_out) why += (why.empty() ? "" : "; ") + name + ": " + reason;
    throw SpecError("--precision: no precision given runs on every GPU of cluster '" + setup.cluster.name + "' (" +
                    why + "); give one its GPUs list in peak_tflops");
  }
  if (!planner.quiet)
    for (const auto& [name, reason] : left_out)
      std::cerr << "search: --precision " << name << ": left out: " << reason << "\n";
  const bool other = precisions.size() > 1 || !precisions[0].empty();
  if (other && !analytic)
    throw SpecError("--precision NAME: other precisions need the analytic policy and layer times from the GPUs' data, "
                    "but cluster '" + setup.cluster.name + "' has node types timed by a measured profile or without GPU "
                    "data; pass --policy analytic --analytic-profiles");
  std::sort(precisions.begin(), precisions.end());
  return precisions;
}

}  // namespace

void ParallelDimsOptions::add_to(CLI::App& command) {
  command.add_option("--cp", cp,
                     "context-parallel degrees to try, e.g. 1,2,4 (analytic layer times; default 1)")
      ->delimiter(',')
      ->check(whole_number("", 1));
  command.add_option("--ep", ep,
                     "expert-parallel degrees to try for a model with experts, e.g. 1,8 (default: 1 and every power "
                     "of two dividing its experts up to 64, where its layers are timed analytically)")
      ->delimiter(',')
      ->check(whole_number("", 1));
}

void apply_parallel_dims(const ParallelDimsOptions& options, const PlannerOptions& planner, PlannerSetup& setup,
                         const std::vector<int>& counts) {
  SearchSpaceOptions& space = setup.input.space;
  const FixedDims& fixed = space.fixed;
  if ((fixed.cp && !options.cp.empty()) || (fixed.ep && !options.ep.empty()))
    throw SpecError("--fix cp=/ep= and --cp/--ep: give the degree once, in either");
  std::vector<int> cp = !options.cp.empty() ? options.cp : fixed.cp ? std::vector<int>{fixed.cp} : std::vector<int>{1};
  std::vector<int> ep = !options.ep.empty() ? options.ep : fixed.ep ? std::vector<int>{fixed.ep} : std::vector<int>{1};
  const bool given = beyond_one(cp) || beyond_one(ep);
  const bool analytic = setup.policy_name == "analytic" && setup.all_analytic(planner, counts);
  if (given && !analytic)
    throw SpecError("--cp/--ep: context and expert parallelism need the analytic policy and layer times from the GPUs' "
                    "data, but cluster '" + setup.cluster.name + "' has node types timed by a measured profile or "
                    "without GPU data; pass --policy analytic --analytic-profiles, or use cp 1 and ep 1");
  if (beyond_one(ep) && !setup.model.moe.enabled())
    throw SpecError("--ep: model '" + setup.model.name + "' has no experts (no 'moe' block); use ep 1");
  // A cp the model cannot run, or an ep that cannot split the experts, is the user's mistake,
  // not a layout the cluster lacks.
  for (int degree : cp)
    if (std::string fault = context_degree_fault(setup.model, degree); !fault.empty()) throw SpecError(fault);
  for (int degree : ep)
    if (std::string fault = expert_degree_fault(setup.model, degree); !fault.empty()) throw SpecError(fault);
  if (options.ep.empty() && !fixed.ep && setup.model.moe.enabled() && analytic)
    ep = default_expert_degrees(setup.model.moe.experts);
  std::vector<std::string> precisions = searched_precisions(planner, setup, counts, analytic);
  std::sort(cp.begin(), cp.end());
  cp.erase(std::unique(cp.begin(), cp.end()), cp.end());
  std::sort(ep.begin(), ep.end());
  ep.erase(std::unique(ep.begin(), ep.end()), ep.end());
  space.cp = cp;
  space.ep = ep;
  space.precisions = precisions;
  setup.load_parallel_profiles(planner, counts);
}

}  // namespace fasop
