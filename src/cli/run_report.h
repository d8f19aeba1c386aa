#pragma once
// A launched run's report: its logs read (launch/iteration_log.h) against the prediction of the
// plan it ran (launch/run_report.h), for `launch report` and `launch status`.
#include <optional>
#include <string>

#include "cli/saved_plan.h"
#include "launch/run_report.h"
#include "launch/run_status.h"

namespace fasop {

/// What `plan` predicted, with the model's FLOPs and its GPUs' peaks for throughput and MFU, and
/// each stage's memory (predict_stage_memory).
RunPrediction predict_run(const LoadedPlan& plan);

/// Each stage's memory as `plan`'s estimate breaks it down, with the global ranks that run it
/// (Megatron's order: tp fastest, then cp, then dp, then the stages); empty where the estimate
/// has no breakdown (FASOP's policy).
std::vector<StageMemoryPrediction> predict_stage_memory(const LoadedPlan& plan);

/// The plan a run ran, loaded from the run directory's copy (relative spec paths from where it
/// was launched).
LoadedPlan load_run_plan(const RunStatus& run);

/// Every node's log of `run` read and merged; throws SpecError naming the run directory when no
/// node has a log yet.
IterationLog read_run_logs(const RunStatus& run, const std::string& run_dir);

/// The report of a run whose logs have iterations past `warmup`; empty otherwise.
std::optional<RunReport> report_of_run(const RunStatus& run, const IterationLog& log, int warmup);

}  // namespace fasop
