#include "cli/run_report.h"

#include <optional>

#include "costmodel/plan_context.h"
#include "profiles/model_flops.h"
#include "specs/precision.h"
#include "specs/spec_error.h"
#include "specs/spec_store.h"

namespace fasop {

std::vector<StageMemoryPrediction> predict_stage_memory(const LoadedPlan& loaded) {
  const std::vector<StageReport>& stages = loaded.result.estimate.stages;
  const PlanContext layout = rank_layout_context(loaded.setup->cluster, loaded.file.key);
  std::vector<StageMemoryPrediction> out;
  for (size_t s = 0; s < stages.size(); ++s) {
    const std::optional<MemoryBreakdown>& breakdown = stages[s].memory.breakdown;
    if (!breakdown) return {};
    StageMemoryPrediction p;
    p.first_rank = layout.stage_first_rank(static_cast<int>(s));
    p.ranks = layout.stage_gpus(static_cast<int>(s));
    p.moment = memory_moment_name(breakdown->moment);
    p.allocated_gib = breakdown->terms.allocated_bytes() / kGib;
    p.reserved_gib = breakdown->terms.reserved_bytes() / kGib;
    p.device_gib = breakdown->terms.device_bytes() / kGib;
    out.push_back(p);
  }
  return out;
}

RunPrediction predict_run(const LoadedPlan& loaded) {
  const PlanFile& plan = loaded.file;
  const ModelSpec& model = loaded.setup->model;
  const ClusterSpec& cluster = loaded.setup->cluster;
  RunPrediction p;
  p.step_s = plan.estimate.step_time_s;
  p.peak_memory_gib = plan.estimate.peak_memory_gib;
  p.global_batch = plan.global_batch;
  p.tokens_per_step = static_cast<double>(plan.global_batch) * model.sequence;
  p.model_flops_per_step = model_flops_per_step(model, plan.global_batch);
  const std::string precision = peak_precision(model.dtype);
  bool every_peak = true;
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const PlanStage& stage = plan.stages[s];
    const int gpus = plan.key.replica_gpus(static_cast<int>(s)) * stage.dp;
    p.gpus += gpus;
    const int type = cluster.find_node_type(stage.node_type);
    const auto& peaks = cluster.node_types.at(type).gpu_data.peak_tflops;
    auto peak = peaks.find(precision);
    if (peak == peaks.end()) every_peak = false;
    else p.peak_flops += gpus * peak->second * 1e12;
  }
  if (!every_peak) p.peak_flops = 0;  // an MFU over part of the GPUs would mislead
  p.stage_memory = predict_stage_memory(loaded);
  return p;
}

LoadedPlan load_run_plan(const RunStatus& run) {
  if (run.plan.empty()) throw SpecError("run " + run.job + ": launch.txt names no plan; was it written by `fasop-cpp launch`?");
  PlanOverrides overrides;
  overrides.spec_dir = run.workdir;
  return load_plan(run.plan, overrides);
}

IterationLog read_run_logs(const RunStatus& run, const std::string& run_dir) {
  // A node that failed may have left iteration lines (or another job's, on a taken port):
  // they are no measurement of the plan.
  if (run.failed())
    throw SpecError(run_dir + ": " + run.failure() + "; a failed run is not a measurement (fasop-cpp launch status " +
                    run.job + " shows its log)");
  std::vector<IterationLog> logs;
  for (const NodeStatus& node : run.nodes) {
    if (std::optional<std::string> text = DiskSource().read(node.log_path)) logs.push_back(parse_iteration_log(*text));
  }
  if (logs.empty())
    throw SpecError(run_dir + ": no node has a log (node-R.log) yet; fasop-cpp launch status " + run.job +
                    " tells whether the job has started");
  return merge_iteration_logs(logs);
}

std::optional<RunReport> report_of_run(const RunStatus& run, const IterationLog& log, int warmup) {
  const RunPrediction predicted = predict_run(load_run_plan(run));
  // torchtitan logs tokens a second: its steps are timed from the plan's tokens and GPUs.
  IterationLog timed = log;
  time_throughput_lines(timed, predicted.tokens_per_step, predicted.gpus);
  std::optional<MeasuredSteps> measured = measure_steps(timed, warmup);
  if (!measured) return std::nullopt;
  return make_run_report(*measured, predicted, timed);
}

}  // namespace fasop
