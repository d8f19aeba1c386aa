#pragma once
// A trainer's log read for its step times: Megatron-LM's per-interval line and memory report,
// the format `launch report` documents so that any trainer can print it (docs/launching.md, "Run reports"):
//    [2026-11-23 18:00:00.123456] iteration       10/      50 | consumed samples: 80 |
//     elapsed time per iteration (ms): 1234.5 | ... | global batch size:     8 | lm loss: ... |
//   [Rank 3] (after 1 iterations) memory (MB) | allocated: 1.0 | max allocated: 2.0 | reserved: 3.0 | max reserved: 4.0
// (each a single line). Fields other than the iteration and its time are optional. torchtitan's
// metrics line ("step: 10  loss: ...  memory: 12.34GiB(56.78%)  tps: 1,234  ...") gives the logging
// rank's max reserved, read as rank 0's (torchtitan logs on rank 0 by default), and its tokens a
// second a GPU since the previous line, which time_throughput_lines turns into step times.
#include <optional>
#include <string>
#include <vector>

namespace fasop {

/// One logged interval: the iterations since the previous line, each taking `ms_per_iteration`.
struct IterationRecord {
  int iteration = 0;         ///< the last iteration of the interval
  int train_iters = 0;       ///< the run's planned iterations (the N of "iteration I/N")
  double ms_per_iteration = 0;
  int global_batch = 0;      ///< "global batch size" (0: not logged)
  std::optional<double> loss;  ///< "lm loss"
  /// torchtitan's "tps": tokens a second a GPU over the interval (ms_per_iteration 0 until
  /// time_throughput_lines gives it).
  std::optional<double> tokens_per_s_per_gpu;
};

/// One memory report of one rank, in MiB.
struct MemoryRecord {
  int rank = 0;
  double allocated_mib = 0, max_allocated_mib = 0, reserved_mib = 0, max_reserved_mib = 0;
  /// False for torchtitan's line, which gives max reserved alone (the other figures are 0).
  bool allocated_logged = true;
};

/// What a log holds, in its order.
struct IterationLog {
  std::vector<IterationRecord> iterations;
  std::vector<MemoryRecord> memory;
};

/// Reads every iteration line and memory report of `text`; other lines are skipped.
IterationLog parse_iteration_log(const std::string& text);

/// Gives the records logged as throughput (torchtitan's tps) their step time: a step's
/// `tokens_per_step` over `gpus` GPUs at tps tokens a second each (torchtitan divides a data
/// replica's tokens by its tp x cp x pp GPUs: tps x all GPUs is the step's tokens a second).
void time_throughput_lines(IterationLog& log, double tokens_per_step, int gpus);

/// The logs of several nodes as one: iteration lines by iteration (where two nodes log the same
/// iteration, the slower time: a step ends when its last rank does), memory reports appended.
IterationLog merge_iteration_logs(const std::vector<IterationLog>& logs);

/// One record per logged rank, by rank: the largest of each figure over the rank's reports (a
/// rank reporting allocated memory once counts as logging it).
std::vector<MemoryRecord> memory_by_rank(const std::vector<MemoryRecord>& records);

}  // namespace fasop
