#pragma once
// A run's measured step time and each logged rank's peak memory against its plan's prediction:
// what `launch report` prints and writes as report.csv, and the one line `launch status` shows
// while the job runs; and the runtime memory constants the ranks' peaks imply (calibrate --from-run).
#include <optional>
#include <string>
#include <vector>

#include "launch/iteration_log.h"
#include "specs/runtime_memory.h"

namespace fasop {

/// One pipeline stage's predicted memory on each of its GPUs (the cost model's breakdown at its
/// worst moment, costmodel/memory_terms.h), and the global ranks that run it.
struct StageMemoryPrediction {
  int first_rank = 0, ranks = 0;  ///< it runs global ranks [first_rank, first_rank + ranks)
  std::string moment;             ///< its worst moment: forward, backward or optimizer step
  double allocated_gib = 0;       ///< what PyTorch allocates (torch.cuda.max_memory_allocated)
  double reserved_gib = 0;        ///< what it reserves (torch.cuda.max_memory_reserved)
  double device_gib = 0;          ///< with the CUDA context and NCCL's buffers: the stage's peak
};

/// The stage of `stages` that runs global rank `rank`; -1 where none does.
int stage_of_rank(const std::vector<StageMemoryPrediction>& stages, int rank);

/// What the plan predicted and what turns a step time into throughput.
struct RunPrediction {
  double step_s = 0;             ///< the plan's estimated seconds per step
  double peak_memory_gib = 0;    ///< the plan's largest per-GPU peak
  int global_batch = 0;
  double tokens_per_step = 0;    ///< global batch x sequence
  double model_flops_per_step = 0;  ///< forward and backward, no recomputation (model_flops.h)
  double peak_flops = 0;         ///< the GPUs' dense peaks at the GEMMs' precision, summed
  int gpus = 0;
  /// Per stage, in order; empty where the plan's policy gives no breakdown (FASOP's).
  std::vector<StageMemoryPrediction> stage_memory;
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

/// One logged rank's peaks against its stage's prediction.
struct RankMemoryReport {
  int rank = 0;
  int stage = -1;                 ///< -1: the plan has no such rank, or no breakdown
  std::string moment;             ///< the stage's worst moment
  bool allocated_logged = true;   ///< false: the log gives max reserved alone (torchtitan's)
  double max_allocated_gib = 0, predicted_allocated_gib = 0;
  double max_reserved_gib = 0, predicted_reserved_gib = 0;
  double allocated_error() const { return max_allocated_gib / predicted_allocated_gib - 1; }
  double reserved_error() const { return max_reserved_gib / predicted_reserved_gib - 1; }
};

/// Each logged rank's (memory_by_rank) against the prediction of the stage that runs it.
std::vector<RankMemoryReport> rank_memory_reports(const std::vector<MemoryRecord>& records,
                                                  const std::vector<StageMemoryPrediction>& stages);

/// One logged rank's memory against its stage's prediction, as the runtime fit reads it (GiB).
struct RankMemorySample {
  double max_allocated_gib = 0, max_reserved_gib = 0;  ///< measured
  double allocated_gib = 0;  ///< predicted
  /// The predicted terms the allocator's reserve is a share of (MemoryTerms::dynamic_bytes).
  double dynamic_gib = 0;
};

/// A stack's runtime constants fitted to ranks' memory, in closed form: workspace_gib moves
/// by the median over the ranks of measured - predicted max allocated (a shift of the constant
/// term; not below 0), then reserve_share is the median of (measured max reserved - the shifted
/// predicted allocated) / dynamic_gib (not below 0; ranks without dynamic terms left out).
/// `before` unchanged where `samples` is empty.
RuntimeMemory fit_runtime_memory(const RuntimeMemory& before, const std::vector<RankMemorySample>& samples);

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
  /// Every logged rank's, by rank.
  std::vector<RankMemoryReport> ranks;
};

RunReport make_run_report(const MeasuredSteps& measured, const RunPrediction& predicted, const IterationLog& log);

/// The one-line summary, e.g. "iteration 50/50: 1.234 s/step measured (iterations 6-50) against
/// 1.100 s predicted (+12.2%), 3,456 tokens/s/GPU, MFU 41.2%" (times to 4 significant digits).
std::string run_summary_line(const RunReport& report);
/// The full report for a terminal: step time, throughput, MFU and memory, measured and predicted,
/// and a table of the logged ranks' memory against their stages', e.g.
///   memory per rank (GiB; predicted: the rank's stage at its worst moment)
///   rank stage moment          max allocated  predicted    error  max reserved  predicted    error
///      0     0 backward                 0.20       0.16   +25.0%          0.39       0.17  +129.4%
std::string run_report_text(const RunReport& report);
/// report.csv: a header and the run's row, then one row per logged rank (column rank set; its
/// step-time columns empty, max_allocated_gib and max_reserved_gib its own, the predictions its
/// stage's). The run's row predicts the largest of the stages, against the largest of the ranks.
std::string run_report_csv(const RunReport& report, const std::string& job);

}  // namespace fasop
