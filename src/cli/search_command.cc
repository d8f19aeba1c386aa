#include "cli/search_command.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <limits>
#include <memory>
#include <sstream>

#include "cli/parallel_dims_options.h"
#include "cli/planner_options.h"
#include "cli/progress_line.h"
#include "cli/saved_plan.h"
#include "costmodel/analytic_policy.h"
#include "costmodel/run_length.h"
#include "costmodel/speed_split_checks.h"
#include "report/atomic_file.h"
#include "report/batch_split_note.h"
#include "report/dimension_notes.h"
#include "report/fasop_csv.h"
#include "report/inventory_ceiling.h"
#include "report/number_format.h"
#include "report/pareto_report.h"
#include "report/plan_compare.h"
#include "report/plans_json.h"
#include "report/plan_table.h"
#include "search/bounded_pareto.h"
#include "search/pareto_search.h"
#include "search/profile_gaps.h"
#include "specs/assumed_gpu_data.h"
#include "specs/plan_degrees.h"
#include "specs/spec_error.h"

namespace fasop {
namespace {

struct SearchOptions {
  PlannerOptions planner;
  std::string out_dir = "main_logs";
  size_t top = 5;
  int threads = 0;
  std::vector<std::string> nodes;  ///< --nodes TYPE=N: the cluster's shape for a plain search
  bool explain = false;            ///< --explain: the best plan against the best without --fix, term by term
  // --pareto
  std::vector<std::string> max_nodes;
  PlanConstraints constraints;
  bool front_only = false;
  size_t table_rows = 100000;  ///< --table-rows: a plain search's CSV holds the fastest N (0: all)
  size_t hold_limit = 250000;
  bool refine_all = false;
  bool exhaustive = false;
  bool per_stage_dp = false;
  bool per_stage_tp = false;
  bool uneven_dp = false;
  bool speed_split = false;
  // Budgets (any search) and subsets
  double min_throughput = 0;     ///< iterations per second; 0: none
  double max_cost_per_step = 0;  ///< USD per step; 0: none
  double tolerance_percent = 0;  ///< --tolerance: PlanConstraints::tolerance in percent
  bool use_subset = false;
  std::string objective;  ///< "time" or "cost"; empty: cost under a throughput floor, else time
  // --save-plan
  std::string save_plan;
  size_t rank = 1;
  bool json = false;  ///< --json: the ranked plans as JSON on stdout, not the text tables
  std::string csv_style = "fasop";  ///< --csv-style: fasop (FASOP's cells) or plain numbers
  std::string add_exp_name;         ///< FASOP's --add_exp_name: appended to the reports' names
  ParallelDimsOptions parallel;     ///< --cp, --ep
};

/// The tables' style: FASOP's cells unless --csv-style plain; the columns beyond FASOP's where
/// the policy searches beyond its space.
CsvStyle csv_style(const SearchOptions& options, const PlannerSetup& setup) {
  return CsvStyle{setup.input.memory_aware, options.csv_style == "fasop", setup.model.dtype};
}

/// --json: the first `count` of `ranked` and the files written, as one JSON document.
void print_json(const PlannerSetup& setup, const char* ranking, size_t candidates,
                const std::vector<CandidateResult>& ranked, size_t count, std::vector<std::string> files,
                const SearchOptions& options) {
  if (!options.save_plan.empty()) files.push_back(options.save_plan);
  SearchJsonHeader header{setup.model.name, setup.cluster.name, ranking, candidates, std::move(files)};
  std::cout << search_json(header, setup.cluster, ranked, count);
}

/// --save-plan: the rank-th of `ranked` (best first) as a plan file.
void save_ranked_plan(const SearchOptions& options, const PlannerSetup& setup, const std::vector<CandidateResult>& ranked,
                      const char* ranking) {
  if (options.save_plan.empty()) return;
  if (options.rank > ranked.size())
    throw SpecError("--rank " + std::to_string(options.rank) + ": there are only " + std::to_string(ranked.size()) +
                    " plans " + ranking);
  save_plan(options.save_plan, make_plan_file(options.planner, setup, ranked[options.rank - 1]));
}

/// The first rule a --fix degree breaks on its own or with the others fixed, in words; "" when
/// each is possible by itself (then only their combination fails).
std::string fixed_degree_fault(const PlannerSetup& setup) {
  const FixedDims& fixed = setup.input.space.fixed;
  const ModelSpec& model = setup.model;
  const int batch = model.global_batch, layers = model.num_transformer_layers();
  const int most_tp = largest_tp(setup.cluster, setup.input.space);
  auto tps = [&] {
    std::string text;
    for (int tp : divisors(most_tp)) text += (text.empty() ? "" : ", ") + std::to_string(tp);
    return text;
  };
  if (fixed.tp) {
    int node_gpus = 0;
    for (const NodeType& type : setup.cluster.node_types) node_gpus = std::max(node_gpus, type.gpus_per_node);
    const std::string raise = most_tp < node_gpus ? "; --max-tp raises the bound" : "";
    if (fixed.tp > most_tp)
      return "tp " + std::to_string(fixed.tp) + " is more than the " + std::to_string(most_tp) +
             " GPUs a tensor-parallel group may span here (tp takes " + tps() + raise + ")";
    if (most_tp % fixed.tp != 0)
      return "tp " + std::to_string(fixed.tp) + " does not divide the " + std::to_string(most_tp) +
             " GPUs a tensor-parallel group may span here (tp takes " + tps() + raise + ")";
    if (setup.policy_name == "analytic" && (model.heads % fixed.tp != 0 || model.kv_heads % fixed.tp != 0))
      return "tp " + std::to_string(fixed.tp) + " does not divide the " + std::to_string(model.heads) + " heads and " +
             std::to_string(model.kv_heads) + " key/value heads of " + model.name;
  }
  if (fixed.mbs && batch % fixed.mbs != 0)
    return "mbs " + std::to_string(fixed.mbs) + " does not divide the global batch of " + std::to_string(batch) +
           " (--global-batch changes it)";
  if (fixed.dp && batch % fixed.dp != 0)
    return "dp " + std::to_string(fixed.dp) + " does not divide the global batch of " + std::to_string(batch);
  if (fixed.dp && fixed.mbs && batch % (fixed.dp * fixed.mbs) != 0)
    return "dp x mbs = " + std::to_string(fixed.dp * fixed.mbs) + " does not divide the global batch of " +
           std::to_string(batch);
  if (fixed.pp && fixed.pp > layers)
    return "pp " + std::to_string(fixed.pp) + " is more stages than the " + std::to_string(layers) + " layers";
  const std::vector<int>& vpps = setup.input.space.virtual_stages;
  if (vpps.size() == 1 && vpps[0] > 1) {  // --fix vpp=V
    const int v = vpps[0];
    if (fixed.pp == 1) return "vpp " + std::to_string(v) + " needs pp > 1 (the interleaved schedule splits each stage)";
    if (fixed.pp && layers % (fixed.pp * v) != 0)
      return "pp x vpp = " + std::to_string(fixed.pp * v) + " model chunks do not divide the " + std::to_string(layers) +
             " layers";
  }
  const long long gpus = setup.cluster.num_gpus();
  const long long named = 1LL * std::max(fixed.tp, 1) * std::max(fixed.dp, 1) * std::max(fixed.pp, 1) * std::max(fixed.cp, 1);
  if (gpus % named != 0 || (fixed.tp && fixed.dp && fixed.pp && named != gpus))
    return "a layout uses all " + std::to_string(gpus) + " GPUs, tp x cp x dp x pp of them, and the degrees fixed make " +
           std::to_string(named) + (gpus % named != 0 ? ", which does not divide them" : "") +
           " (--nodes TYPE=N plans on fewer nodes)";
  return "";
}

/// No layout: with --fix, the degrees asked for; without, the cluster itself (every layout uses
/// all its GPUs, and tp, dp and pp are bounded by the node, the batch and the layers).
void require_layouts(const PlannerSetup& setup, const PlannerOptions& options, size_t layouts) {
  if (layouts > 0) return;
  const ModelSpec& model = setup.model;
  const std::string what = "no layout of model '" + model.name + "' on cluster '" + setup.cluster.name + "' (" +
                           std::to_string(setup.cluster.num_gpus()) + " GPUs)";
  const long long most = most_layout_gpus(setup.model, setup.cluster, setup.input.space);
  if (!options.fix.empty() && setup.cluster.num_gpus() <= most) {
    if (std::string fault = fixed_degree_fault(setup); !fault.empty()) throw SpecError("--fix: " + fault);
    throw SpecError(what + " has the degrees --fix asks for together: tp must divide the GPUs of a node (and the heads), "
                    "tp x dp x pp the GPUs, dp and mbs the global batch (" + std::to_string(model.global_batch) +
                    "), and vpp=V needs pp > 1, pp x V dividing the layers and whole rounds of pp micro-batches");
  }
  throw SpecError(what + ": a layout uses every GPU, tp x dp x pp of them, with tp at most " +
                  std::to_string(largest_tp(setup.cluster, setup.input.space)) + ", dp dividing the global batch (" +
                  std::to_string(model.global_batch) + ") and pp at most the layers (" +
                  std::to_string(model.num_transformer_layers()) + "), so at most " + std::to_string(most) +
                  " GPUs and only products of such degrees; give a cluster of fewer nodes, or search its shapes with "
                  "--pareto --max-nodes");
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

ProgressFn progress_printer(ProgressLine& line) {
  return [&line](size_t done, size_t total) {
    if (done == total) line.finish(std::to_string(done) + "/" + std::to_string(total) + " candidates");
    else if (line.due()) line.update(std::to_string(done) + "/" + std::to_string(total) + " candidates");
  };
}

/// A memory-aware search fails, writing nothing, when no plan fits: it says how far off the
/// least demanding plan is.
void require_a_fitting_plan(const PlannerSetup& setup, const std::vector<CandidateResult>& results) {
  if (results.empty() || !results.front().estimate.memory.is_oom) return;  // fitting plans sort first
  const CandidateResult* least = &results.front();
  for (const CandidateResult& r : results)
    if (r.estimate.memory.oom_gpumem_gib < least->estimate.memory.oom_gpumem_gib) least = &r;
  std::ostringstream message;
  message.precision(3);
  message << "no plan of model '" << setup.model.name << "' fits in the GPU memory of cluster '" << setup.cluster.name
          << "' (" << setup.cluster.source << "): of " << results.size()
          << " layouts, the least demanding needs " << least->estimate.memory.oom_gpumem_gib
          << " GiB on a GPU (tp " << least->plan.key.tp << ", dp " << least->plan.key.dp << ", pp "
          << least->plan.key.pp << context_expert_text(least->plan.key, ", ") << ", ZeRO-" << least->plan.key.zero_stage
          << (least->plan.key.recompute ? ", recomputation" : "") << "); add nodes or GPUs with more memory";
  throw SpecError(message.str());
}

/// The constraints of the budget flags: --max-step-time, --min-throughput and --deadline (over
/// the run's steps) bound the step time, --max-cost and --max-cost-per-step (x the run's steps) the run's cost.
PlanConstraints budget_constraints(const SearchOptions& options, const PlannerSetup& setup) {
  const double iterations = setup.input.iterations;
  PlanConstraints c = options.constraints;
  c.max_step_time_s = std::min(c.max_step_time_s, deadline_step_limit_s(setup));
  if (options.min_throughput > 0) c.max_step_time_s = std::min(c.max_step_time_s, 1 / options.min_throughput);
  if (options.max_cost_per_step > 0) c.max_cost_usd = std::min(c.max_cost_usd, options.max_cost_per_step * iterations);
  c.tolerance = options.tolerance_percent / 100;
  return c;
}

bool has_budget(const PlanConstraints& c) {
  return c.max_step_time_s < std::numeric_limits<double>::infinity() ||
         c.max_cost_usd < std::numeric_limits<double>::infinity();
}

std::string constraints_text(const PlanConstraints& c);

/// A measured profile that lacks a tp: that tp is left out of the search, said on stderr (a
/// warning, kept under --quiet). With --fix tp=N the layout's own error names the gap.
void skip_tps_profiles_lack(PlannerSetup& setup) {
  SearchSpaceOptions& space = setup.input.space;
  if (space.fixed.tp) return;
  for (const ProfileTpGap& gap :
       profile_tp_gaps(setup.model, setup.cluster, setup.input.profiles, largest_tp(setup.cluster, space))) {
    space.skipped_tp.push_back(gap.tp);
    std::cerr << "search: " << gap.profile_source << " has no times for layer type '" << gap.layer_type
              << "' at tp " << gap.tp << ": layouts with tp " << gap.tp
              << " are left out (measure them with `fasop-cpp profile layers` to search them)\n";
  }
}

/// --speed-split: the speed-split variants join the space, where the policy can price them.
void set_speed_split(const SearchOptions& options, PlannerSetup& setup) {
  validate_speed_split_policy(options.speed_split, setup.policy_name);
  setup.input.space.speed_split = options.speed_split;
}

/// `r` estimated again with its breakdown and stages (the search keeps them for few plans).
CandidateResult with_detail(const SearchInput& input, const CandidateResult& r) {
  return evaluate_candidate(input, r.plan.key, r.plan.partition);
}

/// "left off: FLAG: plan 1 with it takes ... s a step (+x%), y GiB/GPU (+z); WHAT\n" (its degrees
/// and micro-batch kept: a search with the flag may find a better plan).
std::string left_off_line(const std::string& flag, const CandidateResult& best, const CandidateResult& with,
                          const std::string& what) {
  const double base_s = best.estimate.step_time_s, with_s = with.estimate.step_time_s;
  char line[400];
  std::snprintf(line, sizeof line, "left off: %s: plan 1 with it takes %.6f s a step (%+.1f%%), %.1f GiB/GPU (%+.1f); %s\n",
                flag.c_str(), with_s, 100 * (with_s / base_s - 1), with.estimate.memory.oom_gpumem_gib,
                with.estimate.memory.oom_gpumem_gib - best.estimate.memory.oom_gpumem_gib, what.c_str());
  return line;
}

/// --tp-comm-overlap priced on the best plan where tp > 1 and every layer is timed from the GPUs'
/// data (a measured profile cannot say what it would give). The layer times change, so its specs
/// and profiles are loaded again with the flag. Megatron-LM runs it only with sequence
/// parallelism, so the plan gets that too. "" where it does not apply.
std::string tp_comm_overlap_line(const PlannerOptions& planner, const std::vector<std::string>& nodes,
                                 const std::vector<int>& counts, const PlannerSetup& setup, const CandidateResult& best) {
  const PlanKey& key = best.plan.key;
  // torchtitan overlaps tp only compiled, which the search does not price (planner_options.cc).
  const auto* analytic = dynamic_cast<const AnalyticPolicy*>(setup.input.policy);
  if (!analytic || planner.tp_comm_overlap || key.tp <= 1 || analytic->options().memory.stack == TrainingStack::kTorchtitan)
    return "";
  PlannerOptions with = planner;
  with.tp_comm_overlap = true;
  with.analytic_profiles = planner.analytic_profiles || needs_analytic_layers(key);
  if (!setup.all_analytic(with, counts))
    return "left off: --tp-comm-overlap: not priced, as a measured profile times the layers without it; "
           "--analytic-profiles prices it\n";
  std::unique_ptr<PlannerSetup> overlapped = PlannerSetup::load_specs(with);
  overlapped->shape_to_nodes(nodes);
  if (!key.precision.empty()) overlapped->model.dtype = key.precision;
  overlapped->load_profiles(with, counts, &key);
  PlanKey with_sp = key;
  with_sp.sequence_parallel = true;
  const std::string flag = key.sequence_parallel ? "--tp-comm-overlap" : "--tp-comm-overlap --sequence-parallel";
  return left_off_line(flag, best, evaluate_candidate(overlapped->input, with_sp, best.plan.partition),
                       key.sequence_parallel ? "Megatron-LM's flag of the same name"
                                             : "Megatron-LM's flags of the same names");
}

/// The switches the search left off, each priced on the best plan, a line each ("" where none
/// applies): sequence parallelism where tp > 1, and the distributed optimizer's parameter
/// all-gather overlapped with the next forward where the plan shards it (ZeRO 1 or 2, dp > 1).
std::string left_off_lines(const PlannerSetup& setup, const CandidateResult& best) {
  if (setup.policy_name != "analytic") return "";
  const PlanKey& key = best.plan.key;
  std::string lines;
  const std::vector<bool>& sp = setup.input.space.sequence_parallel;
  if (key.tp > 1 && std::find(sp.begin(), sp.end(), true) == sp.end()) {
    PlanKey with_sp = key;
    with_sp.sequence_parallel = true;
    lines += left_off_line("--sequence-parallel", best, evaluate_candidate(setup.input, with_sp, best.plan.partition),
                           "search with the flag to choose the degrees and micro-batch with it");
  }
  const auto* analytic = dynamic_cast<const AnalyticPolicy*>(setup.input.policy);
  if (analytic && !analytic->options().execution.overlap_param_gather && key.dp > 1 &&
      (key.zero_stage == 1 || key.zero_stage == 2)) {
    AnalyticOptions options = analytic->options();
    options.execution.overlap_param_gather = true;
    const AnalyticPolicy gathering(options);
    SearchInput input = setup.input;
    input.policy = &gathering;
    lines += left_off_line("--overlap-param-gather", best, evaluate_candidate(input, key, best.plan.partition),
                           "Megatron-LM's flag of the same name");
  }
  return lines;
}

/// " (the fastest 100000 of 3000000 plans; --table-rows 0 writes all, about 1.8 GB)" where the
/// table was cut to `rows` of `all`, its `bytes` measuring a row; "" where it was not.
std::string table_cut_text(size_t rows, size_t all, size_t bytes) {
  if (rows >= all || rows == 0) return "";
  char size[32];
  std::snprintf(size, sizeof size, "%.1f GB", double(bytes) / rows * all / 1e9);
  return " (the fastest " + std::to_string(rows) + " of " + std::to_string(all) +
         " plans; --table-rows 0 writes all, about " + size + ")";
}

/// "run: plan 1 trains the 3.58M steps in 580 days, $1918691\n", and with --deadline
/// " (14.0 days allowed)" before the newline.
std::string run_time_line(const PlannerSetup& setup, const CandidateResult& best) {
  const PlanEstimate& e = best.estimate;
  return "run: plan 1 trains the " + short_count(setup.run.steps) + " steps in " + duration_text(e.train_time_s) +
         ", $" + fixed(e.train_cost_usd, 0) +
         (setup.deadline_s > 0 ? " (" + duration_text(setup.deadline_s) + " allowed)" : "") + "\n";
}

/// --explain: why the best plan with --fix's degrees is slower than the best without them (or,
/// without --fix, why the second plan is slower than the first), term by term.
std::string explanation(const SearchOptions& options, const PlannerSetup& setup,
                        const std::vector<CandidateResult>& results) {
  if (!options.explain || results.empty()) return "";
  if (options.planner.fix.empty()) {
    if (results.size() < 2) return "explain: the search has one plan\n";
    return "explain: plan 2 against plan 1, term by term\n" +
           plan_comparison_text(setup.cluster, with_detail(setup.input, results[1]), "plan 2",
                                with_detail(setup.input, results[0]), "plan 1");
  }
  SearchInput free = setup.input;
  free.space.fixed = FixedDims{};
  std::vector<CandidateResult> unfixed = run_search(free, {});
  if (setup.input.memory_aware)
    unfixed.erase(std::remove_if(unfixed.begin(), unfixed.end(),
                                 [](const CandidateResult& r) { return r.estimate.memory.is_oom; }),
                  unfixed.end());
  if (unfixed.empty()) return "";
  std::string fixed;
  for (const std::string& f : options.planner.fix) fixed += (fixed.empty() ? "" : ",") + f;
  return "explain: the best plan with --fix " + fixed + " against the best without it, term by term\n" +
         plan_comparison_text(setup.cluster, with_detail(setup.input, results[0]), "fixed",
                              with_detail(free, unfixed[0]), "free");
}

void run_search_command(const SearchOptions& options) {
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<PlannerSetup> setup = PlannerSetup::load_specs(options.planner);
  const std::vector<int> counts = setup->shape_to_nodes(options.nodes);
  setup->load_profiles(options.planner, counts);
  apply_parallel_dims(options.parallel, options.planner, *setup, counts);
  setup->input.threads = options.threads;
  setup->input.space.per_stage_dp = options.per_stage_dp;
  setup->input.space.per_stage_tp = options.per_stage_tp;
  setup->input.space.uneven_dp = options.uneven_dp;
  set_speed_split(options, *setup);
  skip_tps_profiles_lack(*setup);
  if (setup->input.refine_top > 0) setup->input.refine_top = std::max<size_t>(options.top, 1);
  // Millions of layouts: hold what the table shows, not every stage of every plan.
  constexpr size_t kLayoutsWithDetail = 250000;
  setup->input.stage_detail_limit = kLayoutsWithDetail;
  // A cluster larger than any layout is refused at once, not after enumerating its placements.
  if (setup->cluster.num_gpus() > most_layout_gpus(setup->model, setup->cluster, setup->input.space)) require_layouts(*setup, options.planner, 0);
  ProgressLine line(!options.planner.quiet, "search");
  std::vector<CandidateResult> results = run_search(setup->input, progress_printer(line));
  require_layouts(*setup, options.planner, results.size());
  std::string name = setup->model.report_name;
  if (options.planner.heterogeneous || setup->cluster.is_heterogeneous()) name += "_heterogeneous";
  std::string path = options.out_dir + "/" + name + options.add_exp_name + ".csv";
  if (setup->input.memory_aware) require_a_fitting_plan(*setup, results);
  const PlanConstraints budget = budget_constraints(options, *setup);
  const size_t candidates = results.size();
  if (has_budget(budget)) {
    // Only the plans within the budget are ranked and written.
    const size_t all = results.size();
    results.erase(std::remove_if(results.begin(), results.end(),
                                 [&](const CandidateResult& r) { return !budget.admits(r.estimate); }),
                  results.end());
    if (results.empty())
      throw SpecError("no plan of the " + std::to_string(all) + " candidates on cluster '" + setup->cluster.name +
                      "' meets the budget (" + constraints_text(budget) +
                      "); relax it, or let the search leave nodes unused with --use-subset");
  }
  if (!options.save_plan.empty() && options.rank <= results.size() && results[options.rank - 1].estimate.stages.empty()) {
    // Its stages were dropped with every other plan's: the same partition estimated again.
    CandidateResult& saved = results[options.rank - 1];
    saved = evaluate_candidate(setup->input, saved.plan.key, saved.plan.partition);
  }
  save_ranked_plan(options, *setup, results, "in the search's ranking");
  // A table of millions of rows (a 4-type --stage-dp search) is cut to the fastest: --table-rows.
  const size_t rows = options.table_rows == 0 ? results.size() : std::min(results.size(), options.table_rows);
  const size_t table_bytes = write_fasop_csv_file(path, setup->cluster, results, csv_style(options, *setup), rows);
  if (options.json) return print_json(*setup, "fastest first", candidates, results, options.top, {path}, options);
  std::cout << run_header_lines(*setup) << "model " << setup->model.name << " on cluster " << setup->cluster.name << ": "
            << candidates << " candidates in " << seconds_since(start) << " s"
            << (has_budget(budget) ? " (" + std::to_string(results.size()) + " within " + constraints_text(budget) + ")" : "")
            << "\n"
            << (results.empty() ? ""
                                : left_off_lines(*setup, results.front()) +
                                      tp_comm_overlap_line(options.planner, options.nodes, counts, *setup, results.front()))
            << best_plans_table(setup->cluster, results, options.top)
            << (results.empty() ? "" : run_time_line(*setup, results.front()))
            << memory_assumptions_line(options.planner, *setup) << assumed_gpu_data_lines(setup->cluster)
            << (results.empty() ? "" : moe_dispatch_line(*setup, results.front().plan.key))
            << unused_dimension_notes(results, setup->input.space, setup->model.dtype)
            << batch_split_note(setup->model, setup->cluster, setup->input.space)
            << explanation(options, *setup, results) << "wrote " << path << table_cut_text(rows, results.size(), table_bytes)
            << "\n";
  if (!options.save_plan.empty())
    std::cout << "wrote " << options.save_plan << " (plan " << options.rank << " of the ranking)\n";
}

std::string constraints_text(const PlanConstraints& c) {
  std::string text;
  auto add = [&](const std::string& part) { text += (text.empty() ? "" : ", ") + part; };
  auto number = [](double v) {
    std::ostringstream out;
    out << v;
    return out.str();
  };
  if (c.max_step_time_s < std::numeric_limits<double>::infinity())
    add("step <= " + number(c.max_step_time_s) + " s (--max-step-time, --min-throughput, --deadline)");
  if (c.max_cost_usd < std::numeric_limits<double>::infinity())
    add("--max-cost " + number(c.max_cost_usd) + ": cost <= $" + number(c.max_cost_usd));
  if (c.exclude_oom) add("fits in memory");
  return text.empty() ? "none" : text;
}

/// What --tolerance promises of the plans a shape search kept (empty without it): of the front,
/// or (`objective`) of the best plans by one measure.
std::string tolerance_text(const PlanConstraints& c, const char* objective = nullptr) {
  if (c.tolerance <= 0) return "";
  std::ostringstream out;
  const double pct = c.tolerance * 100;
  out << " (--tolerance " << pct << "%: ";
  if (objective) out << "no plan left out is more than " << pct << "% " << objective << " than the last one kept)";
  else out << "every plan left out has one on the front at most " << pct << "% slower and " << pct << "% dearer)";
  return out.str();
}

/// Inventories of up to this many shapes have their candidates counted, to choose between the
/// exhaustive and the bounded search.
constexpr double kMostShapesToCount = 2000;

/// The shape search's input for `search --pareto` and `--use-subset`: the cluster's node counts
/// (or --max-nodes) as the inventory, a profile per node type, and the budget, where plans must
/// fit (a memory-aware policy: its out-of-memory plans cannot run) plans that fit.
ParetoInput inventory_input(const SearchOptions& options, PlannerSetup& setup) {
  ParetoInput input;
  input.limits = apply_node_counts(setup.cluster, "--max-nodes", options.max_nodes, inventory_limits(setup.cluster));
  setup.load_profiles(options.planner, input.limits);
  apply_parallel_dims(options.parallel, options.planner, setup, input.limits);
  setup.input.threads = options.threads;
  setup.input.space.per_stage_dp = options.per_stage_dp;
  setup.input.space.per_stage_tp = options.per_stage_tp;
  setup.input.space.uneven_dp = options.uneven_dp;
  set_speed_split(options, setup);
  skip_tps_profiles_lack(setup);
  input.search = setup.input;
  input.constraints = budget_constraints(options, setup);
  if (setup.input.memory_aware) input.constraints.exclude_oom = true;
  return input;
}

/// A bounded search's progress line: while it bounds, what is settled and what is open, and
/// the share of the walk's tree settled with the time left at that pace (an estimate: a box
/// closes whole once the front rules it out, so the pace changes); while it refines, the shapes
/// left and, from the pace so far, about how long they take.
std::string shape_progress_text(const ShapeProgress& p, double elapsed_s, double refine_start_s) {
  std::ostringstream out;
  out.precision(15);
  if (!p.refining) {
    out << p.shapes_estimated << " shapes estimated, " << p.settled << "/" << p.total << " settled, " << p.open_boxes
        << " boxes of shapes open, " << p.candidates << " candidates estimated";
    out.precision(3);
    if (p.best_first) {
      // Best first: boxes close all at once at the end, so the tree's pace foretells nothing; the
      // gap between the floors and the plans kept tells how far the walk has to go.
      const char* unit = p.objective_is_cost ? " $" : " s";
      if (p.objective_bound < std::numeric_limits<double>::infinity())
        out << "; the open boxes' lowest floor " << p.lowest_open_floor << unit << " a step against "
            << p.objective_bound << unit << " to be kept: the walk ends when the floor gets there";
    } else if (p.tree_settled > 0 && p.tree_settled < 1) {
      out << "; " << 100 * p.tree_settled << "% of the walk settled, about "
          << elapsed_s * (1 - p.tree_settled) / p.tree_settled << " s left at this pace, then the full partitioner";
    }
    return out.str();
  }
  out << "full partitioner: candidate " << p.refined << "/" << p.to_refine << " of those held";
  if (p.refined > 0) {
    out.precision(3);
    out << ", about " << (elapsed_s - refine_start_s) / p.refined * (p.to_refine - p.refined) << " s left";
  }
  return out.str();
}

/// Progress of a bounded search on `line`.
ShapeProgressFn shape_progress_printer(ProgressLine& line) {
  auto refine_start_s = std::make_shared<double>(-1);  // when the full partitioner began
  return [&line, refine_start_s](const ShapeProgress& p) {
    if (p.refining && *refine_start_s < 0) *refine_start_s = line.elapsed_s();
    if (line.due()) line.update(shape_progress_text(p, line.elapsed_s(), *refine_start_s));
  };
}

/// --use-subset: the plans on any subset of the cluster's nodes (the bounded pareto search over
/// its shapes), ranked by the objective under the budget: the cheapest that meets a throughput
/// floor, or the fastest within a cost.
void run_subset_command(const SearchOptions& options) {
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<PlannerSetup> setup = PlannerSetup::load_specs(options.planner);
  ParetoInput input = inventory_input(options, *setup);
  const bool by_cost = options.objective.empty()
                           ? input.constraints.max_step_time_s < std::numeric_limits<double>::infinity() &&
                                 !(input.constraints.max_cost_usd < std::numeric_limits<double>::infinity())
                           : options.objective == "cost";
  // Only the best plans are kept: a subset is ruled out once its floor cannot beat the last of
  // them on the objective alone, not only when a plan beats it on both time and cost.
  input.ranking = by_cost ? Ranking::kCheapest : Ranking::kFastest;
  input.keep = std::max<size_t>({options.top, options.rank, 1});
  FrontTracker front(input.constraints, input.ranking, input.keep);
  ProgressLine line(!options.planner.quiet, "search");
  ParetoStats stats = run_bounded_pareto_search(input, front, shape_progress_printer(line));
  line.finish(std::to_string(stats.candidates) + " candidates estimated");
  if (front.front().empty())
    throw SpecError("no plan on any subset of cluster '" + setup->cluster.name + "' meets the budget (" +
                    constraints_text(input.constraints) + "); relax it");
  const std::vector<CandidateResult>& ranked = front.front();  // best first
  std::string name = setup->model.report_name + (options.planner.heterogeneous ? "_heterogeneous" : "") + "_subset";
  std::string path = options.out_dir + "/" + name + options.add_exp_name + ".csv";
  save_ranked_plan(options, *setup, ranked, by_cost ? "kept, cheapest first" : "kept, fastest first");
  write_file_atomically(path, fasop_csv(setup->cluster, ranked, csv_style(options, *setup)));
  if (options.json)
    return print_json(*setup, by_cost ? "cheapest first" : "fastest first", stats.candidates, ranked, options.top,
                      {path}, options);
  const CandidateResult& best = ranked.front();
  std::cout << run_header_lines(*setup) << "model " << setup->model.name << " on subsets of cluster " << setup->cluster.name << " ("
            << shape_label(setup->cluster, input.limits) << "): " << stats.shapes_estimated << " of "
            << static_cast<long long>(shape_count(input.limits)) << " subsets estimated, " << stats.candidates
            << " candidates in " << seconds_since(start) << " s\n"
            << "budget: " << constraints_text(input.constraints) << "; objective: "
            << (by_cost ? "the cheapest plan" : "the fastest plan") << "\n"
            << "best: " << plan_summary(setup->cluster, best) << "\n  uses "
            << shape_label(setup->cluster, counts_of(setup->cluster, best.plan.key.node_order)) << " of "
            << shape_label(setup->cluster, input.limits) << "; " << 1 / best.estimate.step_time_s
            << " iterations/s, $" << best.estimate.price_per_step_usd << " a step\n"
            << "the " << ranked.size() << " best plans under the budget (" << (by_cost ? "cheapest" : "fastest")
            << " first)" << tolerance_text(input.constraints, by_cost ? "cheaper" : "faster") << ":\n"
            << best_plans_table(setup->cluster, ranked, std::min(options.top, ranked.size()))
            << inventory_ceiling_lines(setup->cluster, input.limits,
                                       {ranked.begin(), ranked.begin() + std::min(options.top, ranked.size())})
            << "wrote " << path << "\n";
  if (!options.save_plan.empty())
    std::cout << "wrote " << options.save_plan << " (plan " << options.rank << " of them)\n";
}

void run_pareto_command(const SearchOptions& options) {
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<PlannerSetup> setup = PlannerSetup::load_specs(options.planner);
  ParetoInput input = inventory_input(options, *setup);
  const PlanConstraints& constraints = input.constraints;
  // Each shape is planned: an inventory of several large node types has more than any search.
  constexpr double kMaxShapes = 1e7;
  if (const double shapes = shape_count(input.limits); shapes > kMaxShapes)
    throw SpecError("--pareto: the inventory " + shape_label(setup->cluster, input.limits) + " has " +
                    std::to_string(static_cast<long long>(std::min(shapes, 9e18))) + " cluster shapes, more than " +
                    std::to_string(static_cast<long long>(kMaxShapes)) + "; bound them with --max-nodes TYPE=N");
  input.hold_limit = options.hold_limit;
  input.refine_all = options.refine_all;
  // Small inventories are enumerated whole, with a table of every candidate (FASOP's report);
  // larger ones are searched by bounds, and the table holds the candidates that were estimated.
  const double shapes = shape_count(input.limits);
  ParetoSize size;
  bool exhaustive = options.exhaustive;
  if (!exhaustive && !options.front_only && shapes <= kMostShapesToCount) {
    size = count_pareto_candidates(input);
    exhaustive = size.candidates <= options.hold_limit;
  }
  if (exhaustive) {
    if (size.shapes == 0) size = count_pareto_candidates(input);
    require_layouts(*setup, options.planner, size.candidates);
  }

  // FASOP's name: <model>[_heterogeneous]_pareto, then --add_exp_name.
  std::string name = setup->model.report_name + (options.planner.heterogeneous ? "_heterogeneous" : "") + "_pareto" +
                     options.add_exp_name;
  std::string base = options.out_dir + "/" + name;
  ParetoReportOptions report_options;
  report_options.constraints = constraints;
  report_options.threads = options.threads;
  report_options.csv = csv_style(options, *setup);
  report_options.front_csv_path = base + "_front.csv";
  report_options.front_svg_path = base + "_front.svg";
  report_options.title = setup->model.name + " on " + setup->cluster.name + " (" +
                         shape_label(setup->cluster, input.limits) + " at most): cost of " +
                         format_iterations(setup->input.iterations) + " steps against time per step";
  if (!options.front_only) {
    report_options.table_path = base + ".csv";
    report_options.stream_table = exhaustive && size.candidates > options.hold_limit;
    if (report_options.stream_table)  // a warning, not progress: --quiet keeps it
      std::cerr << "search: " << size.candidates << " candidates exceed --hold-limit " << options.hold_limit
                << ": " << report_options.table_path << " is streamed in enumeration order, not sorted\n";
  }
  ParetoReport report(setup->cluster, report_options);
  ProgressLine line(!options.planner.quiet, "search");
  ParetoStats stats;
  if (exhaustive) {
    PassProgressFn progress = [&line, streamed = report_options.stream_table](int pass, size_t done, size_t total) {
      const char* what = pass == 1 ? "estimating" : streamed ? "refining and writing" : "refining";
      line.update("pass " + std::to_string(pass) + "/2, " + what + ": " + std::to_string(done) + "/" +
                  std::to_string(total) + " candidates");
    };
    stats = run_pareto_search(input, report, progress);
    line.finish(std::to_string(stats.candidates) + " candidates estimated");
  } else {
    auto text = [](double settled, double total, size_t candidates) {
      std::ostringstream out;
      out.precision(15);
      out << settled << "/" << total << " shapes settled, " << candidates << " candidates estimated";
      return out.str();
    };
    stats = run_bounded_pareto_search(input, report, shape_progress_printer(line));
    line.finish(text(shapes, shapes, stats.candidates));
    size.shapes = static_cast<size_t>(shapes);
    if (stats.candidates == 0 && constraints_text(options.constraints) == "none") require_layouts(*setup, options.planner, 0);
  }
  if (report.front().empty())  // a failed run writes no report
    throw SpecError("no plan of the " + std::to_string(exhaustive ? size.candidates : stats.candidates) +
                    " candidates " + (exhaustive ? "" : "that could reach the front ") + "meets the constraints (" +
                    constraints_text(constraints) + "); relax them (the cheapest and fastest plans without them: search --pareto without these flags)");
  const std::vector<CandidateResult>& front = report.front();
  // --save-plan --rank K saves the plan numbered K in the printed front and the SVG: cheapest first.
  save_ranked_plan(options, *setup, front, "on the front");
  report.finish();
  if (options.json) {
    std::vector<std::string> files;
    if (!report_options.table_path.empty()) files.push_back(report_options.table_path);
    files.push_back(report_options.front_csv_path);
    files.push_back(report_options.front_svg_path);
    return print_json(*setup, "cheapest first", report.candidates(), front, front.size(), files, options);
  }

  std::cout << run_header_lines(*setup);
  if (exhaustive)
    std::cout << "model " << setup->model.name << " on " << size.shapes << " cluster shapes of " << setup->cluster.name
              << ": " << report.candidates() << " candidates in " << seconds_since(start) << " s ("
              << (options.refine_all ? "every one" : std::to_string(stats.refined) + " that could reach the front")
              << " got the full partitioner)\n";
  else
    std::cout << "model " << setup->model.name << " on " << size.shapes << " cluster shapes of " << setup->cluster.name
              << " (searched by bounds: " << stats.shapes_estimated << " shapes estimated, the rest ruled out by "
              << "their floors): " << report.candidates() << " candidates estimated in " << seconds_since(start)
              << " s (" << stats.refined << " got the full partitioner)\n";
  std::cout
            << "constraints: " << constraints_text(constraints) << " (" << report.admitted() << " candidates meet them)\n";
  std::cout << "pareto front: " << front.size() << " plans, cheapest first" << tolerance_text(constraints) << "\n"
            << best_plans_table(setup->cluster, front, front.size()) << assumed_gpu_data_lines(setup->cluster)
            << "best under the constraints:\n  fastest:  " << plan_summary(setup->cluster, front.back())
            << "\n  cheapest: " << plan_summary(setup->cluster, front.front()) << "\n"
            << inventory_ceiling_lines(setup->cluster, input.limits, front);
  size_t oom = std::count_if(front.begin(), front.end(), [](const CandidateResult& r) { return r.estimate.memory.is_oom; });
  if (oom > 0)
    std::cout << oom << " of the front's plans fit only with ZeRO or not at all; --exclude-oom keeps plans that fit "
                 "without ZeRO\n";
  if (!report_options.table_path.empty()) std::cout << "wrote " << report_options.table_path << "\n";
  std::cout << "wrote " << report_options.front_csv_path << "\nwrote " << report_options.front_svg_path << "\n";
  if (!options.save_plan.empty())
    std::cout << "wrote " << options.save_plan << " (plan " << options.rank << " of the front, cheapest first as printed)\n";
}


}  // namespace

void add_search_command(CLI::App& app) {
  auto options = std::make_shared<SearchOptions>();
  CLI::App* command = app.add_subcommand("search", "search every plan (FASOP's space, or beyond it under the analytic policy) and write the table; --pareto: every cluster shape");
  options->planner.add_to(*command);
  options->parallel.add_to(*command);
  command->add_option("--out-dir", options->out_dir, "directory of the CSV report (default main_logs)")
      ->check([](const std::string& dir) { return dir.empty() ? std::string("must not be empty") : std::string(); });
  command->add_option("--top", options->top, "how many of the best plans to print (default 5)")
      ->check(whole_number("plans", 0));
  command->add_flag("--json", options->json,
                    "print the ranked plans (with --pareto, the front) as one JSON document instead of the tables");
  command->add_option("--csv-style", options->csv_style,
                      "cells of the CSV tables: fasop (FASOP's: oom_gpumem as tensor([9.8218]), as its pandas scripts "
                      "parse; default) or plain (plain numbers)")
      ->check(CLI::IsMember({"fasop", "plain"}));
  command->add_option("--add_exp_name", options->add_exp_name,
                      "FASOP's flag: a suffix of the reports' names (gpt2_heterogeneous<SUFFIX>.csv)")
      ->check([](const std::string& s) {
        return s.find('/') == std::string::npos ? std::string() : std::string("must not hold '/'");
      });
  command->add_option("--threads", options->threads, "threads (default: every CPU the process may use); the answer is the same at any count")
      ->check(whole_number("threads", 0));
  command->add_flag("--stage-dp", options->per_stage_dp,
                    "also try a data-parallel degree per node type (Metis-style; with type-block placements)");
  command->add_flag("--stage-tp", options->per_stage_tp,
                    "also try a tensor-parallel degree per node type (Sailor-style; with type-block placements "
                    "and the analytic policy)");
  command->add_flag("--uneven-dp", options->uneven_dp,
                    "also try dp and mbs that do not divide the global batch (Sailor-style; replicas take floor or "
                    "ceil of their share, the step waits for the largest)");
  command->add_flag("--speed-split", options->speed_split,
                    "also try, where a stage's replicas sit on several node types, splitting its micro-batch over "
                    "them by speed (Metis-style; analytic policy)");
  command->add_flag("--pareto", options->planner.pareto,
                    "search every cluster shape of the inventory (default: FASOP's 0..8 A100 and A10 nodes) "
                    "and write the cost-versus-time pareto front");
  command->add_option("--nodes", options->nodes,
                      "plan on N nodes of TYPE (node type or GPU name) of the cluster, the others 0, e.g. H100=2; "
                      "repeatable (--pareto and --use-subset take --max-nodes)")
      ->type_name("TYPE=N");
  command->add_flag("--explain", options->explain,
                    "also show, term by term, why the best plan with --fix's degrees is slower than the best without "
                    "them (without --fix: plan 2 against plan 1)");
  command->add_option("--max-nodes", options->max_nodes,
                      "with --pareto: at most N nodes of TYPE (node type or GPU name), e.g. A100=4; repeatable")
      ->type_name("TYPE=N");
  command->add_option("--max-step-time", options->constraints.max_step_time_s,
                      "keep plans of at most S seconds per step")
      ->type_name("S")->check(positive_number("seconds"));
  command->add_option("--min-throughput", options->min_throughput,
                      "keep plans of at least IT_PER_S iterations per second (Sailor's throughput floor)")
      ->type_name("IT_PER_S")->check(positive_number("iterations per second"));
  command->add_option("--max-cost", options->constraints.max_cost_usd,
                      "keep plans whose whole run (--iterations steps) costs at most DOLLARS")
      ->type_name("DOLLARS")->check(positive_number("dollars"));
  command->add_option("--max-cost-per-step", options->max_cost_per_step,
                      "keep plans whose step costs at most USD (Sailor's budget per iteration)")
      ->type_name("USD")->check(positive_number("dollars"));
  command->add_option("--tolerance", options->tolerance_percent,
                      "with --pareto or --use-subset: leave out plans that a kept one is within PCT% of, in time "
                      "and in cost (default 0: the exact front or best plan); fewer shapes are estimated")
      ->type_name("PCT")->check(percentage_below_100());
  command->add_flag("--use-subset", options->use_subset,
                    "plan on any subset of the cluster's nodes (whole nodes), leaving the rest unused where that "
                    "is cheaper or faster: the best plan under the budget, without writing the full pareto sweep");
  command->add_option("--objective", options->objective,
                      "with --use-subset: rank by time (fastest first) or cost (cheapest first); default: cost "
                      "under a throughput floor or step-time limit alone, else time")
      ->check(CLI::IsMember({"time", "cost"}));
  command->add_flag("--exclude-oom", options->constraints.exclude_oom,
                    "with --pareto: keep only plans that fit in GPU memory without ZeRO");
  command->add_option("--table-rows", options->table_rows,
                      "a plain search's CSV holds the fastest N candidates (0: every one; a 4-type --stage-dp "
                      "search has millions, gigabytes of rows)")
      ->capture_default_str();
  command->add_flag("--front-only", options->front_only,
                    "with --pareto: write only the front, hold no table of every candidate");
  command->add_flag("--refine-all", options->refine_all,
                    "with --pareto: the full partitioner on every candidate, not only those that could reach "
                    "the front (same front, better table, slower)");
  command->add_flag("--exhaustive", options->exhaustive,
                    "with --pareto: estimate every candidate of every shape (the full table), not only those "
                    "the bounds leave a chance; the default for inventories of up to --hold-limit candidates");
  command->add_option("--hold-limit", options->hold_limit,
                      "with --pareto: above this many candidates the full table is streamed unsorted (default 250000)")
      ->check(whole_number("candidates", 1));
  command->add_option("--fix", options->planner.fix,
                      "search only layouts with these degrees, e.g. tp=2,pp=4 (tp, dp, pp, mbs, zero=N, "
                      "recompute=none|full)")
      ->delimiter(',')->type_name("KEY=VALUE");
  command->add_option("--save-plan", options->save_plan,
                      "write the best plan (or the --rank-th as printed; with --pareto, of the front cheapest first) as a plan file");
  command->add_option("--rank", options->rank, "with --save-plan: which plan, numbered as the printed table (and the front's SVG) number them (default 1)")
      ->check(whole_number("", 1));
  command->callback([options, command] {
    if (command->count("--rank") && options->save_plan.empty()) throw SpecError("--rank needs --save-plan FILE");
    if (!options->save_plan.empty() && (options->planner.fasop.gpu_per_node || options->planner.fasop.precision_bits))
      throw SpecError("--save-plan with --gpu_per_node or --precision: a plan file names the model and cluster as "
                      "given; write a cluster file with gpus_per_node (or a model with precision_bits) instead");
    bool pareto_only = options->front_only || options->constraints.exclude_oom || command->count("--hold-limit") ||
                       options->refine_all || options->exhaustive;
    if (pareto_only && !options->planner.pareto)
      throw SpecError("--exclude-oom, --front-only, --hold-limit, --refine-all and --exhaustive need --pareto");
    if (!options->max_nodes.empty() && !options->planner.pareto && !options->use_subset)
      throw SpecError("--max-nodes needs --pareto or --use-subset");
    if (options->explain && (options->planner.pareto || options->use_subset || options->json))
      throw SpecError("--explain compares the plans of a plain search's table; leave out --pareto, --use-subset and --json");
    if (!options->nodes.empty() && (options->planner.pareto || options->use_subset))
      throw SpecError("--nodes fixes the cluster's shape; --pareto and --use-subset search shapes: bound them with "
                      "--max-nodes TYPE=N");
    if (command->count("--objective") && !options->use_subset) throw SpecError("--objective needs --use-subset");
    if (command->count("--tolerance") && !options->planner.pareto && !options->use_subset)
      throw SpecError("--tolerance needs --pareto or --use-subset (a plain search estimates every plan)");
    if (options->use_subset && options->planner.pareto)
      throw SpecError("--use-subset and --pareto: --pareto already searches every subset of the inventory; keep one");
    if (options->planner.pareto) run_pareto_command(*options);
    else if (options->use_subset) run_subset_command(*options);
    else run_search_command(*options);
  });
}

}  // namespace fasop
