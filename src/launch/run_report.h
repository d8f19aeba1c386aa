#pragma once
// A run's measured step time against its plan's prediction: what `launch report` prints and
// writes as report.csv, and the one line `launch status` shows while the job runs.
#include <optional>
#include <string>

#include "launch/iteration_log.h"

namespace fasop {

/// What the plan predicted and what turns a step time into throughput.
struct RunPrediction {
  double step_s = 0;             ///< the plan's estimated seconds per step
  double peak_memory_gib = 0;    ///< the plan's largest per-GPU peak
  int global_batch = 0;
  double tokens_per_step = 0;    ///< global batch x sequence
  double model_flops_per_step = 0;  ///< forward and backward, no recomputation (model_flops.h)
  double peak_flops = 0;         ///< the GPUs' dense peaks at the GEMMs' precision, summed
  int gpus = 0;
};

/// The step time measured over the iterations after the warm-up.
struct MeasuredSteps {
  int warmup = 0;                 ///< iterations skipped
  int first_iteration = 0, last_iteration = 0;  ///< those measured
  int last_logged = 0, train_iters = 0;         ///< progress: "iteration last_logged/train_iters"
  double step_s = 0;              ///< mean over the measured iterations
  double min_step_s = 0, max_step_s = 0;  ///< of the logged intervals measured
  int global_batch = 0;           ///< as the log states it (0: not logged)
};

/// The step time of `log` past `warmup` iterations: each line's time counts for the iterations
/// of its interval, and an interval reaching into the warm-up is skipped whole. Empty when no
/// interval lies past the warm-up.
std::optional<MeasuredSteps> measure_steps(const IterationLog& log, int warmup);

/// A run's report.
struct RunReport {
  MeasuredSteps measured;
  RunPrediction predicted;
  double error = 0;  ///< measured / predicted - 1
  double tokens_per_s_per_gpu = 0, predicted_tokens_per_s_per_gpu = 0;
  double mfu = 0, predicted_mfu = 0;  ///< model FLOPs per second over peak_flops (0: no peak known)
  /// The largest of the logged ranks' peaks, where logged: max_allocated_mib and
  /// max_reserved_mib are each the largest over ranks (rank: the largest max reserved's).
  std::optional<MemoryRecord> memory;
};

RunReport make_run_report(const MeasuredSteps& measured, const RunPrediction& predicted, const IterationLog& log);

/// The one-line summary, e.g. "iteration 50/50: 1.234 s/step measured (iterations 6-50) against
/// 1.100 s predicted (+12.2%), 3,456 tokens/s/GPU, MFU 41.2%" (times to 4 significant digits).
std::string run_summary_line(const RunReport& report);
/// The full report for a terminal: step time, throughput, MFU and memory, measured and predicted.
std::string run_report_text(const RunReport& report);
/// report.csv: a header and one row.
std::string run_report_csv(const RunReport& report, const std::string& job);

}  // namespace fasop
