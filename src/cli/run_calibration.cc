#include "cli/run_calibration.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>

#include "cli/run_report.h"
#include "costmodel/plan_context.h"
#include "specs/gpu_parameters.h"
#include "specs/spec_error.h"
#include "specs/yaml_field.h"
#include "validate/efficiency_fit.h"

namespace fasop {
namespace {

/// The GPUs a run's plan runs on, by the GPU data's name, in stage order.
std::vector<std::string> plan_gpus(const LoadedPlan& loaded) {
  std::vector<std::string> gpus;
  for (const PlanStage& stage : loaded.file.stages) {
    const int type = loaded.setup->cluster.find_node_type(stage.node_type);
    const std::string& gpu = loaded.setup->cluster.node_types.at(type).gpu_data.name;
    if (std::find(gpus.begin(), gpus.end(), gpu) == gpus.end()) gpus.push_back(gpu);
  }
  return gpus;
}

/// `name` with the precision of `dtype` where the parameter has one per precision.
std::string qualified(const std::string& name, const std::string& dtype) {
  return is_per_precision_parameter(name) && name.find('.') == std::string::npos ? dtype + "." + name : name;
}

/// Refuses runs whose step time does not follow GPU data.
void require_gpu_data_timing(const CalibrationRun& run) {
  const PlannerSetup& setup = *run.plan.setup;
  if (setup.policy_name != "analytic")
    throw SpecError("run " + run.job + ": its plan " + run.plan.file.source +
                    " uses the fasop policy, which times layers from measured profiles, not GPU data; calibrate "
                    "those with `fasop-profile` and `calibrate --profile`, or plan with --policy analytic");
  for (const std::string& gpu : plan_gpus(run.plan))
    for (const NodeType& type : setup.cluster.node_types)
      if (type.gpu_data.name == gpu && !type.has_gpu_data())
        throw SpecError("run " + run.job + ": GPU '" + gpu + "' has no GPU data (configs/gpus/) to calibrate");
}

void set_everywhere(std::vector<CalibrationRun>& runs, const CalibratedParameter& p, double value) {
  for (CalibrationRun& run : runs)
    for (NodeType& type : run.plan.setup->cluster.node_types)
      if (type.gpu_data.name == p.gpu) set_parameter(type.gpu_data, "", p.parameter, value);
}

/// The training stack whose runtime constants a plan's memory takes (plan files write none for megatron).
std::string plan_stack(const LoadedPlan& plan) { return plan.file.stack.empty() ? "megatron" : plan.file.stack; }

/// A logged rank of a run, with its stage's prediction before the fit.
struct LoggedRank {
  size_t run = 0;
  std::string stack;
  CalibratedRankMemory report;
  RankMemorySample sample;
};

/// The runs' ranks that log max allocated and reserved and that their plans run.
std::vector<LoggedRank> logged_ranks(const std::vector<CalibrationRun>& runs) {
  std::vector<LoggedRank> out;
  for (size_t r = 0; r < runs.size(); ++r) {
    const LoadedPlan& plan = runs[r].plan;
    const std::vector<StageMemoryPrediction> stages = predict_stage_memory(plan);
    if (stages.empty()) continue;
    const PlanContext layout = rank_layout_context(plan.setup->cluster, plan.file.key);
    for (const RankMemoryReport& logged : rank_memory_reports(runs[r].memory, stages)) {
      if (!logged.allocated_logged || logged.stage < 0) continue;
      const int stage = logged.stage;
      const CalibratedRankMemory report{.job = runs[r].job,
                                        .gpu = layout.stage_smallest_memory_type(stage).gpu_data.name,
                                        .rank = logged.rank,
                                        .stage = stage,
                                        .max_allocated_gib = logged.max_allocated_gib,
                                        .max_reserved_gib = logged.max_reserved_gib,
                                        .allocated_before_gib = logged.predicted_allocated_gib,
                                        .reserved_before_gib = logged.predicted_reserved_gib};
      const double dynamic_bytes = plan.result.estimate.stages[stage].memory.breakdown->terms.dynamic_bytes();
      const RankMemorySample sample{.max_allocated_gib = logged.max_allocated_gib,
                                    .max_reserved_gib = logged.max_reserved_gib,
                                    .allocated_gib = logged.predicted_allocated_gib,
                                    .dynamic_gib = dynamic_bytes / kGib};
      out.push_back({.run = r, .stack = plan_stack(plan), .report = report, .sample = sample});
    }
  }
  return out;
}

}  // namespace

void calibrate_memory_from_runs(std::vector<CalibrationRun>& runs, RunCalibration& calibration) {
  std::vector<LoggedRank> ranks = logged_ranks(runs);
  for (const LoggedRank& rank : ranks) {
    const std::string& gpu = rank.report.gpu;
    auto same = [&](const CalibratedRuntime& c) { return c.gpu == gpu && c.stack == rank.stack; };
    if (std::any_of(calibration.memory.begin(), calibration.memory.end(), same)) continue;
    CalibratedRuntime fitted;
    fitted.gpu = gpu;
    fitted.stack = rank.stack;
    std::vector<RankMemorySample> samples;
    for (const LoggedRank& other : ranks)
      if (other.report.gpu == gpu && other.stack == rank.stack) samples.push_back(other.sample);
    for (const NodeType& t : runs[rank.run].plan.setup->cluster.node_types)
      if (t.gpu_data.name == gpu) {
        fitted.before = t.gpu_data.runtime_memory(training_stack_named(rank.stack).value_or(TrainingStack::kMegatron));
        fitted.node_types.push_back(t.name);
      }
    fitted.after = fit_runtime_memory(fitted.before, samples);
    fitted.ranks = static_cast<int>(samples.size());
    calibration.memory.push_back(fitted);
  }
  if (ranks.empty()) return;
  for (CalibrationRun& run : runs) {
    for (NodeType& type : run.plan.setup->cluster.node_types)
      for (const CalibratedRuntime& fitted : calibration.memory)
        if (type.gpu_data.name == fitted.gpu) type.gpu_data.memory_runtime[fitted.stack] = fitted.after;
    run.plan.result = estimate_again(run.plan);
  }
  std::vector<std::vector<StageMemoryPrediction>> after;
  for (const CalibrationRun& run : runs) after.push_back(predict_stage_memory(run.plan));
  for (LoggedRank& rank : ranks) {
    const StageMemoryPrediction& stage = after[rank.run].at(rank.report.stage);
    rank.report.allocated_after_gib = stage.allocated_gib;
    rank.report.reserved_after_gib = stage.reserved_gib;
    calibration.ranks.push_back(rank.report);
  }
}

bool CalibratedParameter::at_bound() const {
  const double tolerance = 1e-3 * (high - low);
  return after - low < tolerance || high - after < tolerance;
}

RunCalibration calibrate_from_runs(std::vector<CalibrationRun>& runs, const std::vector<std::string>& parameter_names) {
  RunCalibration calibration;
  for (const CalibrationRun& run : runs) {
    require_gpu_data_timing(run);
    const std::string& dtype = run.plan.setup->model.dtype;
    for (const std::string& gpu : plan_gpus(run.plan))
      for (const std::string& name : parameter_names) {
        const std::string parameter = qualified(name, dtype);
        auto same = [&](const CalibratedParameter& p) { return p.gpu == gpu && p.parameter == parameter; };
        if (std::any_of(calibration.parameters.begin(), calibration.parameters.end(), same)) continue;
        const FitParameter bounds = fit_parameter(parameter);
        CalibratedParameter p{gpu, parameter, {}, bounds.low, bounds.high, 0, 0};
        for (const NodeType& t : run.plan.setup->cluster.node_types)
          if (t.gpu_data.name == gpu) {
            p.before = p.after = get_parameter(t.gpu_data, "", parameter);
            p.node_types.push_back(t.name);
          }
        calibration.parameters.push_back(p);
      }
    calibration.runs.push_back({run.job, run.measured_step_s, run.plan.result.estimate.step_time_s, 0});
  }
  std::vector<FitParameter> bounds;
  std::vector<double> values;
  for (const CalibratedParameter& p : calibration.parameters) {
    bounds.push_back({p.parameter, p.low, p.high});
    values.push_back(p.before);
  }
  auto objective = [&](const std::vector<double>& trial) {
    for (size_t i = 0; i < trial.size(); ++i) set_everywhere(runs, calibration.parameters[i], trial[i]);
    double sum = 0;
    for (CalibrationRun& run : runs) {
      const double ratio = std::log(estimate_again(run.plan).estimate.step_time_s / run.measured_step_s);
      sum += ratio * ratio;
    }
    return sum;
  };
  minimize_by_coordinates(objective, bounds, values);
  for (size_t i = 0; i < values.size(); ++i) {
    calibration.parameters[i].after = values[i];
    set_everywhere(runs, calibration.parameters[i], values[i]);
  }
  for (size_t r = 0; r < runs.size(); ++r) {
    runs[r].plan.result = estimate_again(runs[r].plan);
    calibration.runs[r].after_s = runs[r].plan.result.estimate.step_time_s;
  }
  return calibration;
}

std::string calibrated_cluster_yaml(const std::string& cluster_text, const std::string& source,
                                    const RunCalibration& calibration, const std::string& comment) {
  YAML::Node root = load_root(cluster_text, source).node;  // the planner has loaded it: well-formed
  for (YAML::Node type : root["node_types"]) {
    const std::string name = type["name"].as<std::string>();
    for (const CalibratedParameter& p : calibration.parameters)
      if (std::find(p.node_types.begin(), p.node_types.end(), name) != p.node_types.end())
        type["gpu_data"][p.parameter] = p.after;
    for (const CalibratedRuntime& r : calibration.memory)
      if (std::find(r.node_types.begin(), r.node_types.end(), name) != r.node_types.end()) {
        YAML::Node stack = type["gpu_data"]["memory_runtime"][r.stack];
        stack["workspace_gib"] = r.after.workspace_gib;
        stack["reserve_share"] = r.after.reserve_share;
      }
  }
  YAML::Emitter out;
  out << YAML::Precision(6) << root;
  std::string text;
  for (size_t at = 0, next; at < comment.size(); at = next + 1) {
    next = comment.find('\n', at);
    if (next == std::string::npos) next = comment.size();
    if (next > at) text += "# " + comment.substr(at, next - at) + "\n";
  }
  return text + out.c_str() + "\n";
}

}  // namespace fasop
