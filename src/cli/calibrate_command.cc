#include "cli/calibrate_command.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <tuple>

#include "cli/planner_options.h"
#include "cli/run_calibration.h"
#include "cli/run_report.h"
#include "launch/run_directory.h"
#include "profiles/analytic_profile.h"
#include "report/atomic_file.h"
#include "report/number_format.h"
#include "specs/gpu_parameters.h"
#include "specs/preset_catalog.h"
#include "specs/spec_error.h"
#include "specs/spec_loader.h"
#include "specs/spec_store.h"

namespace fasop {
namespace {

struct CalibrateOptions {
  std::string model, cluster, node_type, profile;
  // --from-run
  std::vector<std::string> runs;
  std::string runs_dir = "main_logs/runs";
  int warmup = 5;
  std::vector<std::string> fit_params = {"gemm_peak_share"};
  bool no_fit_memory = false;
  std::string out;
};


CalibrationRun calibration_run(const std::string& run, const CalibrateOptions& options) {
  const std::string dir = find_run_directory(run, options.runs_dir);
  RunStatus status = read_run_status(dir);
  IterationLog log = read_run_logs(status, dir);
  std::optional<MeasuredSteps> measured = measure_steps(log, options.warmup);
  if (!measured)
    throw SpecError(dir + ": no iteration past the warm-up of " + std::to_string(options.warmup) +
                    " in the node logs; `fasop-cpp launch report " + run + "` says what the logs hold");
  return {status.job, load_run_plan(status), measured->step_s, log.memory};
}

/// The text of cluster `ref` as given to the planner: a file, or a preset's.
std::string cluster_text(const std::string& ref) {
  DiskSource disk;
  if (std::optional<std::string> text = disk.read(ref)) return *text;
  return find_preset(embedded_presets(), ref, "cluster").text;
}

/// True when `names` holds `name`.
bool has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

/// Per node type the calibration moved, its new gpu_data as a line to paste.
std::string node_type_gpu_data(const RunCalibration& calibration) {
  std::vector<std::string> types;
  for (const CalibratedParameter& p : calibration.parameters)
    for (const std::string& t : p.node_types)
      if (!has(types, t)) types.push_back(t);
  for (const CalibratedRuntime& r : calibration.memory)
    for (const std::string& t : r.node_types)
      if (!has(types, t)) types.push_back(t);
  std::string text;
  for (const std::string& t : types) {
    std::string values;
    for (const CalibratedParameter& p : calibration.parameters)
      if (has(p.node_types, t)) values += (values.empty() ? "" : ", ") + p.parameter + ": " + format_double(p.after);
    for (const CalibratedRuntime& r : calibration.memory)
      if (has(r.node_types, t))
        values += std::string(values.empty() ? "" : ", ") + "memory_runtime: {" + r.stack + ": {workspace_gib: " +
                  format_double(r.after.workspace_gib) + ", reserve_share: " + format_double(r.after.reserve_share) + "}}";
    text += "  node type " + t + ": gpu_data: {" + values + "}\n";
  }
  return text;
}

/// The change from `before` to `after`, e.g. "+12.5%".
std::string change_text(double before, double after) {
  if (before == 0) return after == 0 ? "+0.0%" : "(from 0)";
  return (after >= before ? "+" : "") + fixed(100 * (after / before - 1), 1) + "%";
}

/// A predicted figure with its error against the measured one, e.g. "0.16 (-19.1%)".
std::string predicted_text(double predicted_gib, double measured_gib) {
  char text[64];
  std::snprintf(text, sizeof text, "%.2f (%+.1f%%)", predicted_gib, 100 * (predicted_gib / measured_gib - 1));
  return text;
}

/// The fitted runtime constants, as rows of the parameter table, and the ranks they were fitted to.
void print_memory_fit(const RunCalibration& calibration) {
  for (const CalibratedRuntime& r : calibration.memory)
    for (auto [name, before, after] : {std::tuple{"workspace_gib", r.before.workspace_gib, r.after.workspace_gib},
                                      {"reserve_share", r.before.reserve_share, r.after.reserve_share}})
      std::printf("%-14s %-34s %10.4g %10.4g %9s  (memory, %d logged rank%s%s)\n", r.gpu.c_str(),
                  ("memory_runtime." + r.stack + "." + name).c_str(), before, after, change_text(before, after).c_str(),
                  r.ranks, r.ranks == 1 ? "" : "s",
                  name == std::string("reserve_share") && after > 1
                      ? "; over 1: more reserve than the dynamic terms explain, check the ranks below before using it"
                      : "");
  if (calibration.ranks.empty()) return;
  std::printf("\nmemory per rank (GiB; predicted: the rank's stage at its worst moment)\n");
  std::printf("%-14s %4s %5s %13s %16s %16s %12s %16s %16s\n", "run", "rank", "stage", "max allocated", "before", "after",
              "max reserved", "before", "after");
  for (const CalibratedRankMemory& m : calibration.ranks)
    std::printf("%-14s %4d %5d %13.2f %16s %16s %12.2f %16s %16s\n", m.job.c_str(), m.rank, m.stage, m.max_allocated_gib,
                predicted_text(m.allocated_before_gib, m.max_allocated_gib).c_str(),
                predicted_text(m.allocated_after_gib, m.max_allocated_gib).c_str(), m.max_reserved_gib,
                predicted_text(m.reserved_before_gib, m.max_reserved_gib).c_str(),
                predicted_text(m.reserved_after_gib, m.max_reserved_gib).c_str());
}

void run_from_runs(const CalibrateOptions& options) {
  std::vector<CalibrationRun> runs;
  for (const std::string& run : options.runs) runs.push_back(calibration_run(run, options));
  for (const std::string& name : options.fit_params) fit_parameter(name);  // an unknown name throws here
  RunCalibration calibration = calibrate_from_runs(runs, options.fit_params);
  if (!options.no_fit_memory) calibrate_memory_from_runs(runs, calibration);
  std::printf("%-14s %-34s %10s %10s %9s\n", "GPU", "parameter", "before", "after", "change");
  for (const CalibratedParameter& p : calibration.parameters)
    std::printf("%-14s %-34s %10.4g %10.4g %9s%s\n", p.gpu.c_str(), p.parameter.c_str(), p.before, p.after,
                p.before != 0 ? (std::string(p.after >= p.before ? "+" : "") + fixed(100 * (p.after / p.before - 1), 1) + "%").c_str()
                              : "(from 0)",
                p.after == p.before ? "  (unmoved: no run's step time improves with it)"
                : p.at_bound()      ? "  (at its bound: the error left is not this parameter's)"
                                    : "");
  print_memory_fit(calibration);
  if (!options.no_fit_memory && calibration.memory.empty())
    std::printf("(memory runtime not fitted: no rank of the runs' plans logs Megatron-LM's memory line)\n");
  std::printf("\n%-14s %12s %22s %22s\n", "run", "measured s", "predicted before", "predicted after");
  for (const CalibratedRun& r : calibration.runs)
    std::printf("%-14s %12.5g %12.5g (%+6.1f%%) %12.5g (%+6.1f%%)\n", r.job.c_str(), r.measured_s, r.before_s,
                100 * (r.before_s / r.measured_s - 1), r.after_s, 100 * (r.after_s / r.measured_s - 1));
  const std::string cluster = runs.front().plan.options.cluster;
  const std::string gpu_data = node_type_gpu_data(calibration);
  if (options.out.empty()) {
    std::printf("\nto use it, give --out FILE, or set in %s:\n%s", file_to_edit(embedded_presets(), cluster).c_str(),
                gpu_data.c_str());
    return;
  }
  for (const CalibrationRun& run : runs)
    if (run.plan.options.cluster != cluster)
      throw SpecError("--out: the runs' plans name different clusters (" + cluster + ", " + run.plan.options.cluster +
                      "); calibrate the runs of one cluster at a time");
  std::string jobs;
  for (const CalibrationRun& run : runs) jobs += " " + run.job;
  write_file_atomically(options.out, calibrated_cluster_yaml(cluster_text(cluster), cluster, calibration,
                                                             "Cluster " + cluster + " calibrated by `fasop-cpp calibrate --from-run" +
                                                                 jobs + "`:\n" + gpu_data));
  std::printf("\nwrote %s: fasop-cpp estimate --plan PLAN --cluster %s\n", options.out.c_str(), options.out.c_str());
}

void run(const CalibrateOptions& options) {
  DiskSource disk;
  SpecStore store(disk, embedded_presets());
  ModelSpec model = store.load_model(options.model);
  ClusterSpec cluster = store.load_cluster(options.cluster);
  std::optional<std::string> text = disk.read(options.profile);
  if (!text) throw SpecError("--profile: cannot read '" + options.profile + "'");
  ProfileSpec measured = parse_profile(*text, options.profile);
  std::string wanted = options.node_type.empty() ? measured.gpu : options.node_type;
  const NodeType* node = nullptr;
  for (const NodeType& t : cluster.node_types)
    if (t.name == wanted || t.gpu == wanted) node = &t;
  if (!node)
    throw SpecError("--node-type: cluster '" + cluster.name + "' has no node type or GPU '" + wanted +
                    "'; name one of its node types");
  if (!node->has_gpu_data())
    throw SpecError(cluster.source + ": node type '" + node->name + "': GPU '" + node->gpu +
                    "' has no shipped data (configs/gpus/) and the file gives no peak_tflops and "
                    "memory_bandwidth_bytes_per_s: nothing to calibrate");
  double efficiency = calibrated_efficiency(model, *node, measured);
  // How well the analytic times match each measured forward time, at a GEMM peak share.
  const double given = node->gpu_data.efficiency(model.dtype).gemm_peak_share;
  auto ratios = [&](double at) {
    NodeType trial = *node;
    for (auto& [name, e] : trial.gpu_data.precisions) e.gemm_peak_share = at;
    std::vector<double> out;
    for (const LayerUnit& unit : model.units) {
      auto layer = measured.forward_s.find(unit.type);
      if (layer == measured.forward_s.end() || &unit != &*std::find_if(model.units.begin(), model.units.end(),
                                                                         [&](const LayerUnit& u) { return u.type == unit.type; }))
        continue;
      for (const auto& [tp, points] : layer->second)
        for (const auto& [mbs, seconds] : points)
          out.push_back(layer_time(model, unit, tp, mbs, trial).forward.seconds / seconds);
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  std::vector<double> before = ratios(given), after = ratios(efficiency);
  if (after.empty()) throw SpecError(options.profile + ": no layer type of model '" + model.name + "' is measured");
  std::printf("%s on %s (node type %s): compute_efficiency %.3f (GEMM peak share; the GPU data says %.3f)\n", model.name.c_str(),
              node->gpu.c_str(), node->name.c_str(), efficiency, given);
  std::printf("analytic / measured forward over %zu points: at %.3f median %.2f (%.2f to %.2f); at %.3f median %.2f "
              "(%.2f to %.2f)\n",
              after.size(), given, before[before.size() / 2], before.front(), before.back(), efficiency,
              after[after.size() / 2], after.front(), after.back());
  std::printf("to use it: set `compute_efficiency: %.3f` on node type %s in %s\n", efficiency, node->name.c_str(),
              file_to_edit(embedded_presets(), cluster.source).c_str());
}

}  // namespace

void add_calibrate_command(CLI::App& app) {
  auto options = std::make_shared<CalibrateOptions>();
  CLI::App* command = app.add_subcommand(
      "calibrate", "fit GPU data to launched runs (--from-run: measured step times, and memory where the logs "
                   "give it) or a node type's compute efficiency to a measured profile (--profile)");
  command->add_option("--model", options->model, "model preset or YAML file (with --profile)");
  command->add_option("--cluster", options->cluster, "cluster preset or YAML file holding the node type (with --profile)");
  command->add_option("--profile", options->profile, "measured profile YAML (configs/profiles format)");
  command->add_option("--node-type", options->node_type, "node type or GPU name (default: the profile's GPU)");
  command->add_option("--from-run", options->runs,
                      "launched runs (job ids or run directories) whose measured step times the GPU data of their "
                      "plans' GPUs is fitted to; repeatable");
  command->add_option("--runs-dir", options->runs_dir, "--from-run: where the run directories are (default main_logs/runs)");
  command->add_option("--warmup", options->warmup, "--from-run: iterations not measured at the start (default 5)")
      ->check(whole_number("iterations", 0));
  command->add_option("--fit-params", options->fit_params,
                      "--from-run: GPU-data parameters to fit, comma-separated (default gemm_peak_share; e.g. "
                      "network.bus_share, dispatch_s.megatron)")
      ->delimiter(',');
  command->add_flag("--no-fit-memory", options->no_fit_memory,
                    "--from-run: keep the GPUs' memory runtime constants. By default, where the logs have "
                    "Megatron-LM's memory lines (max allocated, max reserved per rank), gpu_data.memory_runtime.STACK "
                    "(the plan's stack, megatron by default) is fitted too: workspace_gib shifted so that the median "
                    "rank's predicted allocated meets its measured one, reserve_share so that the median rank's "
                    "predicted reserved does; each rank is shown before and after");
  command->add_option("--out", options->out, "--from-run: write the plans' cluster file with the fitted gpu_data here");
  command->callback([options] {
    if (!options->runs.empty()) {
      if (!options->profile.empty()) throw SpecError("calibrate takes --from-run or --profile, not both");
      return run_from_runs(*options);
    }
    if (options->model.empty() || options->cluster.empty() || options->profile.empty())
      throw SpecError("calibrate needs --from-run RUN..., or --model, --cluster and --profile");
    run(*options);
  });
}

}  // namespace fasop
