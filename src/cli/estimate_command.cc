#include "cli/estimate_command.h"

#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/planner_options.h"
#include "cli/saved_plan.h"
#include "costmodel/make_context.h"
#include "costmodel/parallel_dims_checks.h"
#include "report/fasop_csv.h"
#include "report/plan_table.h"
#include "report/plans_json.h"
#include "search/search_space.h"
#include "specs/assumed_gpu_data.h"
#include "specs/plan_degrees.h"
#include "specs/spec_error.h"

namespace fasop {
namespace {

struct EstimateOptions {
  PlannerOptions planner;
  PlanKey key;
  std::vector<std::string> nodes;
  std::vector<int> stage_dp;
  std::vector<int> stage_tp;
  bool uneven_dp = false;
  bool speed_split = false;
  std::string placement;
  std::string partition;
  bool json = false;
  bool as_given = false;
  std::string plan;  ///< --plan: re-estimate a saved plan
};

/// estimate --plan: the saved plan on its specs (or --cluster's, --profile-dir's), estimated again.
void run_saved(const EstimateOptions& options, CLI::App& command) {
  for (const char* own : {"--model", "--mbs", "--tp", "--dp", "--pp", "--nodes", "--stage-dp", "--stage-tp", "--uneven-dp", "--speed-split", "--placement",
                          "--partition", "--heterogeneous", "--zero", "--recompute", "--recompute-modules", "--policy"})
    if (command.count(own)) throw SpecError(std::string("--plan: the plan gives ") + own + "; leave it out");
  for (const char* what_if : {"--global-batch", "--seq-length", "--train-tokens", "--iterations", "--deadline"})
    if (command.count(what_if))
      throw SpecError(std::string("--plan re-estimates the saved plan as it was made, without ") + what_if +
                      "; give the model and degrees instead of --plan to estimate a what-if");
  PlanOverrides overrides;
  overrides.cluster = options.planner.cluster;
  overrides.profile_dir = options.planner.profile_dir;
  LoadedPlan loaded = load_plan(options.plan, overrides);
  if (options.json) {
    std::cout << estimate_json(loaded.setup->model, loaded.setup->cluster, loaded.result);
    return;
  }
  std::cout << "plan " << options.plan << ": model " << loaded.setup->model.name << " on cluster "
            << loaded.setup->cluster.name << "\n"
            << estimate_text(loaded.setup->model, loaded.setup->cluster, loaded.result)
            << estimate_change(loaded.file, loaded.result);
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) items.push_back(item);
  return items;
}

std::vector<int> parse_partition(const std::string& text) {
  std::vector<int> partition;
  for (const std::string& item : split(text)) {
    try {
      size_t used = 0;
      partition.push_back(std::stoi(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      throw SpecError("--partition: '" + item + "' is not a whole number; give units per stage, e.g. 5,4,3");
    }
  }
  return partition;
}

std::vector<int> parse_placement(const std::string& text, const ClusterSpec& cluster) {
  if (text.empty()) return cyclic_placements(cluster).front();
  std::vector<int> order;
  for (std::string name : split(text)) {
    // "32xp5.48xlarge", as search prints a placement: 32 nodes of that type in a row.
    long long repeat = 1;
    const size_t x = name.find('x');
    if (cluster.find_node_type(name) < 0 && x != std::string::npos && x > 0 &&
        name.find_first_not_of("0123456789") == x && cluster.find_node_type(name.substr(x + 1)) >= 0) {
      repeat = std::stoll(name.substr(0, std::min<size_t>(x, 9)));
      name = name.substr(x + 1);
      if (repeat < 1 || repeat > 100000)
        throw SpecError("--placement: " + std::to_string(repeat) + " nodes of '" + name + "'; give 1 to 100000");
    }
    const int type = cluster.find_node_type(name);
    if (type < 0) {
      std::string known;
      for (const NodeType& t : cluster.node_types) known += (known.empty() ? "" : ", ") + t.name;
      throw SpecError("--placement: unknown node type '" + name + "' in cluster '" + cluster.name +
                      "'; use " + known + " (or NxTYPE for N nodes of TYPE)");
    }
    order.insert(order.end(), static_cast<size_t>(repeat), type);
  }
  return order;
}

/// Whether the run's steps at `step_time_s` finish within --deadline ("" without one).
std::string deadline_verdict_line(const PlannerSetup& setup, double step_time_s) {
  if (setup.deadline_s <= 0) return "";
  const double run_s = step_time_s * setup.run.steps;
  char line[160];
  std::snprintf(line, sizeof line, "deadline             %.4g days: the run takes %.4g days, %s\n", setup.deadline_s / 86400,
                run_s / 86400, run_s <= setup.deadline_s ? "within it" : "past it: more GPUs, or fewer tokens");
  return line;
}

void run(EstimateOptions options, CLI::App& command) {
  if (!options.plan.empty()) return run_saved(options, command);
  for (const char* needed : {"--model", "--mbs", "--tp", "--dp", "--pp"})
    if (!command.count(needed)) throw SpecError(std::string(needed) + " is required (or --plan PLAN)");
  std::unique_ptr<PlannerSetup> setup = PlannerSetup::load_specs(options.planner);
  // --nodes: a shape of the cluster's inventory, as `search --pareto` tries them.
  const std::vector<int> counts = setup->shape_to_nodes(options.nodes);
  // --precision NAME: the plan trains in it (its layers timed from the GPUs' data).
  const std::vector<std::string>& precisions = options.planner.fasop.precision_names;
  if (precisions.size() > 1) throw SpecError("--precision: estimate prices one plan in one precision; give one name");
  for (const std::string& name : precisions)
    if (const NodeType* lacking = setup->node_type_without(counts, name))
      throw SpecError("--precision " + name + ": the " + lacking->gpu + " of node type '" + lacking->name +
                      "' does not train in it (" + missing_precision_text(name) + "); choose a precision it runs");
  if (precisions.size() == 1 && precisions[0] != setup->model.dtype) {
    setup->model.dtype = options.key.precision = precisions[0];
    options.planner.analytic_profiles = true;
  }
  // --moe-dispatcher NAME: the plan's token dispatcher.
  if (options.planner.moe_dispatchers.size() > 1)
    throw SpecError("--moe-dispatcher: estimate prices one plan with one token dispatcher; give one name");
  options.key.moe_dispatcher = moe_dispatchers_named(options.planner.moe_dispatchers).front();
  if (options.key.moe_dispatcher != MoeDispatcher::kAlltoall) options.planner.analytic_profiles = true;
  setup->load_profiles(options.planner, counts, &options.key);
  options.key.node_order = parse_placement(options.placement, setup->cluster);
  if (!options.planner.zero_stages.empty()) options.key.zero_stage = options.planner.zero_stages.front();
  // CLI11 admits only none, selective and full.
  if (!options.planner.recompute.empty()) options.key.set_recompute(*recompute_mode_named(options.planner.recompute.front()));
  if (!options.planner.recompute_modules.empty()) {
    // CLI11 admits only the modules' names; they mean selective recomputation.
    // (choose_policy refused them beside another --recompute.)
    if (options.planner.recompute.empty()) options.key.set_recompute(RecomputeMode::kSelective);
    options.key.recompute_modules = *recompute_modules_named(options.planner.recompute_modules, nullptr);
  }
  options.key.sequence_parallel = options.planner.sequence_parallel;
  if (!options.planner.virtual_stages.empty()) options.key.virtual_stages = options.planner.virtual_stages.front();
  options.key.stage_dp = options.stage_dp;
  options.key.stage_tp = options.stage_tp;
  // Only a plan that splits its batch unevenly is marked so: an even one stays as it was.
  options.key.uneven_dp = options.uneven_dp && splits_batch_unevenly(setup->model.global_batch, options.key);
  options.key.speed_split = options.speed_split;
  validate_plan_key(setup->model, setup->cluster, options.key);
  if (options.planner.ep_comm_overlap)
    if (std::string fault = ep_overlap_fault(options.key); !fault.empty()) throw SpecError(fault);
  if (std::string fault = moe_dispatcher_fault(setup->model, setup->cluster, options.key); !fault.empty())
    throw SpecError(fault);
  std::vector<int> partition = options.partition.empty() ? std::vector<int>{} : parse_partition(options.partition);
  PartitionTiming timing = options.as_given ? PartitionTiming::kExact : PartitionTiming::kAsFasopReports;
  std::vector<int> timed;
  CandidateResult result = evaluate_candidate(setup->input, options.key, partition, timing, &timed);
  if (options.json) {
    std::cout << estimate_json(setup->model, setup->cluster, result);
    return;
  }
  std::cout << run_header_lines(*setup) << estimate_text(setup->model, setup->cluster, result)
            << deadline_verdict_line(*setup, result.estimate.step_time_s) << memory_assumptions_line(options.planner, *setup)
            << assumed_gpu_data_lines(setup->cluster)
            << moe_dispatch_line(*setup, result.plan.key);
  if (timed != result.plan.partition)
    std::cout << "\nnote: FASOP reaches this partition by a last greedy move it never re-times: its\n"
                 "figures (reproduced above) are the stage times of "
              << partition_text(timed) << ".\nPass --as-given to time the partition itself.\n";
}

}  // namespace

void add_estimate_command(CLI::App& app) {
  auto options = std::make_shared<EstimateOptions>();
  CLI::App* command = app.add_subcommand("estimate", "estimate one plan's step time, cost and memory");
  options->planner.add_to(*command, false);
  command->add_option("--plan", options->plan,
                      "a plan file (search --save-plan) to estimate again, on its own specs or on --cluster's");
  command->add_option("--mbs", options->key.mbs, "micro-batch size");
  command->add_option("--tp", options->key.tp, "tensor-parallel degree");
  command->add_option("--dp", options->key.dp, "data-parallel degree");
  command->add_option("--pp", options->key.pp, "pipeline stages");
  for (const PlanDegree& degree : plan_degrees())
    command->add_option(std::string("--") + degree.name, options->key.*degree.value, degree.help);
  command->add_option("--nodes", options->nodes,
                      "plan on N nodes of TYPE (node type or GPU name) of the cluster, the others 0: a cluster "
                      "shape as `search --pareto` tries; repeatable")
      ->type_name("TYPE=N");
  command->add_option("--stage-dp", options->stage_dp,
                      "data-parallel degree of each stage, e.g. 4,4,8 (Metis-style; --dp is the largest)")
      ->delimiter(',');
  command->add_option("--stage-tp", options->stage_tp,
                      "tensor-parallel degree of each stage, e.g. 1,1,4,4 (Sailor-style; --tp is the largest; "
                      "a node type's stages share one)")
      ->delimiter(',');
  command->add_flag("--uneven-dp", options->uneven_dp,
                    "let dp (and mbs) not divide the global batch: replicas take floor or ceil of their share "
                    "(Sailor-style)");
  command->add_flag("--speed-split", options->speed_split,
                    "split each stage's micro-batch over its replicas by their speed where they sit on several "
                    "node types (Metis-style; analytic policy)");
  command->add_option("--placement", options->placement,
                      "node types in rank order, comma-separated, NxTYPE for N in a row as search prints them, "
                      "e.g. 8xp5.48xlarge,1xg6e.48xlarge (default: the cluster's order)");
  command->add_option("--partition", options->partition,
                      "units per stage, comma-separated (default: the best partition found)");
  command->add_flag("--json", options->json, "print one JSON object");
  command->add_flag("--as-given", options->as_given,
                    "time --partition as given, even where FASOP's reported figures time another");
  command->callback([options, command] { run(*options, *command); });
}

}  // namespace fasop
