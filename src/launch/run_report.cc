#include "launch/run_report.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "report/number_format.h"

namespace fasop {
namespace {

std::string percent(double share, int decimals = 1) { return fixed(100 * share, decimals) + "%"; }

std::string signed_percent(double share) { return (share >= 0 ? "+" : "") + percent(share); }

/// A count with thousands separators, e.g. 12,345.
std::string grouped(double value) {
  std::string digits = fixed(value, 0), out;
  const size_t sign = digits[0] == '-' ? 1 : 0;
  for (size_t i = sign; i < digits.size(); ++i) {
    if (i > sign && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return digits.substr(0, sign) + out;
}

double gib(double mib) { return mib / 1024; }

/// Seconds to 4 significant digits: steps of milliseconds and of minutes alike.
std::string seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", s);
  return text;
}

/// A value of a column of the per-rank table, or "-" where there is none.
std::string cell(bool known, double value, int decimals) { return known ? fixed(value, decimals) : "-"; }
std::string error_cell(bool known, double error) { return known ? signed_percent(error) : "-"; }

/// The logged ranks' memory as a table, or why there is none.
std::string rank_memory_text(const RunReport& r) {
  if (r.ranks.empty()) return "";
  if (r.predicted.stage_memory.empty())
    return "memory per rank: the plan's policy gives no per-stage breakdown to compare with (plan with --policy analytic)\n";
  char line[256];
  std::string out = "memory per rank (GiB; predicted: the rank's stage at its worst moment)\n";
  std::snprintf(line, sizeof line, "%4s %5s %-15s %13s %10s %8s %13s %10s %8s\n", "rank", "stage", "moment", "max allocated",
                "predicted", "error", "max reserved", "predicted", "error");
  out += line;
  for (const RankMemoryReport& m : r.ranks) {
    const bool staged = m.stage >= 0, allocated = staged && m.allocated_logged;
    std::snprintf(line, sizeof line, "%4d %5s %-15s %13s %10s %8s %13s %10s %8s\n", m.rank,
                  staged ? std::to_string(m.stage).c_str() : "-", staged ? m.moment.c_str() : "not in the plan",
                  cell(m.allocated_logged, m.max_allocated_gib, 2).c_str(), cell(staged, m.predicted_allocated_gib, 2).c_str(),
                  error_cell(allocated, m.allocated_error()).c_str(), fixed(m.max_reserved_gib, 2).c_str(),
                  cell(staged, m.predicted_reserved_gib, 2).c_str(), error_cell(staged, m.reserved_error()).c_str());
    out += line;
  }
  return out;
}

/// The largest of the stages' predictions: allocated, reserved.
std::pair<double, double> largest_stage_memory(const std::vector<StageMemoryPrediction>& stages) {
  double allocated = 0, reserved = 0;
  for (const StageMemoryPrediction& s : stages) {
    allocated = std::max(allocated, s.allocated_gib);
    reserved = std::max(reserved, s.reserved_gib);
  }
  return {allocated, reserved};
}

/// The middle of `values` (of an even count, the mean of the middle two).
double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace

RuntimeMemory fit_runtime_memory(const RuntimeMemory& before, const std::vector<RankMemorySample>& samples) {
  RuntimeMemory after = before;
  if (samples.empty()) return after;
  std::vector<double> allocated_gaps;
  for (const RankMemorySample& s : samples) allocated_gaps.push_back(s.max_allocated_gib - s.allocated_gib);
  after.workspace_gib = std::max(0.0, before.workspace_gib + median(allocated_gaps));
  const double shift_gib = after.workspace_gib - before.workspace_gib;
  std::vector<double> shares;
  for (const RankMemorySample& s : samples)
    if (s.dynamic_gib > 0) shares.push_back((s.max_reserved_gib - s.allocated_gib - shift_gib) / s.dynamic_gib);
  if (!shares.empty()) after.reserve_share = std::max(0.0, median(shares));
  return after;
}

int stage_of_rank(const std::vector<StageMemoryPrediction>& stages, int rank) {
  for (size_t s = 0; s < stages.size(); ++s)
    if (rank >= stages[s].first_rank && rank < stages[s].first_rank + stages[s].ranks) return static_cast<int>(s);
  return -1;
}

std::vector<RankMemoryReport> rank_memory_reports(const std::vector<MemoryRecord>& records,
                                                  const std::vector<StageMemoryPrediction>& stages) {
  std::vector<RankMemoryReport> out;
  for (const MemoryRecord& record : memory_by_rank(records)) {
    RankMemoryReport m;
    m.rank = record.rank;
    m.allocated_logged = record.allocated_logged;
    m.max_allocated_gib = gib(record.max_allocated_mib);
    m.max_reserved_gib = gib(record.max_reserved_mib);
    m.stage = stage_of_rank(stages, record.rank);
    if (m.stage >= 0) {
      const StageMemoryPrediction& stage = stages[m.stage];
      m.moment = stage.moment;
      m.predicted_allocated_gib = stage.allocated_gib;
      m.predicted_reserved_gib = stage.reserved_gib;
    }
    out.push_back(m);
  }
  return out;
}

std::optional<MeasuredSteps> measure_steps(const IterationLog& log, int warmup) {
  MeasuredSteps m;
  m.warmup = warmup;
  double total_s = 0;
  int counted = 0, previous = 0;
  for (const IterationRecord& r : log.iterations) {
    const int from = previous;
    previous = r.iteration;
    m.last_logged = r.iteration;
    m.train_iters = r.train_iters;
    if (r.global_batch > 0) m.global_batch = r.global_batch;
    if (from < warmup || r.iteration <= from) continue;
    const double step_s = r.ms_per_iteration / 1000;
    if (counted == 0) m.first_iteration = from + 1, m.min_step_s = m.max_step_s = step_s;
    m.last_iteration = r.iteration;
    m.min_step_s = std::min(m.min_step_s, step_s);
    m.max_step_s = std::max(m.max_step_s, step_s);
    total_s += step_s * (r.iteration - from);
    counted += r.iteration - from;
  }
  if (counted == 0) return std::nullopt;
  m.step_s = total_s / counted;
  return m;
}

RunReport make_run_report(const MeasuredSteps& measured, const RunPrediction& predicted, const IterationLog& log) {
  RunReport report;
  report.measured = measured;
  report.predicted = predicted;
  report.error = measured.step_s / predicted.step_s - 1;
  const double per_gpu = predicted.tokens_per_step / predicted.gpus;
  report.tokens_per_s_per_gpu = per_gpu / measured.step_s;
  report.predicted_tokens_per_s_per_gpu = per_gpu / predicted.step_s;
  if (predicted.peak_flops > 0) {
    report.mfu = predicted.model_flops_per_step / measured.step_s / predicted.peak_flops;
    report.predicted_mfu = predicted.model_flops_per_step / predicted.step_s / predicted.peak_flops;
  }
  for (const MemoryRecord& m : log.memory) {
    if (!report.memory) {
      report.memory = m;
      continue;
    }
    if (m.max_reserved_mib > report.memory->max_reserved_mib) {
      report.memory->rank = m.rank;
      report.memory->max_reserved_mib = m.max_reserved_mib;
    }
    report.memory->max_allocated_mib = std::max(report.memory->max_allocated_mib, m.max_allocated_mib);
    report.memory->allocated_logged = report.memory->allocated_logged || m.allocated_logged;
  }
  report.ranks = rank_memory_reports(log.memory, predicted.stage_memory);
  return report;
}

std::string run_summary_line(const RunReport& r) {
  const MeasuredSteps& m = r.measured;
  std::ostringstream out;
  // torchtitan's lines name no planned step count (train_iters 0).
  out << "iteration " << m.last_logged << (m.train_iters > 0 ? "/" + std::to_string(m.train_iters) : "") << ": "
      << seconds(m.step_s)
      << " s/step measured (iterations " << m.first_iteration << "-" << m.last_iteration << ") against "
      << seconds(r.predicted.step_s) << " s predicted (" << signed_percent(r.error) << "), "
      << grouped(r.tokens_per_s_per_gpu) << " tokens/s/GPU";
  if (r.predicted.peak_flops > 0) out << ", MFU " << percent(r.mfu);
  return out.str();
}

std::string run_report_text(const RunReport& r) {
  const MeasuredSteps& m = r.measured;
  char line[256];
  std::ostringstream out;
  out << "iterations " << m.first_iteration << "-" << m.last_iteration << " measured (" << m.warmup
      << " warm-up iteration" << (m.warmup == 1 ? "" : "s") << " skipped; " << m.last_logged
      << (m.train_iters > 0 ? " of " + std::to_string(m.train_iters) : "") << " logged)\n";
  std::snprintf(line, sizeof line, "%-16s %14s %14s %9s\n", "", "measured", "predicted", "error");
  out << line;
  std::snprintf(line, sizeof line, "%-16s %14s %14s %9s\n", "step time (s)", fixed(m.step_s, 4).c_str(),
                fixed(r.predicted.step_s, 4).c_str(), signed_percent(r.error).c_str());
  out << line;
  std::snprintf(line, sizeof line, "%-16s %14s %14s\n", "  min / max (s)",
                (fixed(m.min_step_s, 4) + "/" + fixed(m.max_step_s, 4)).c_str(), "");
  out << line;
  std::snprintf(line, sizeof line, "%-16s %14s %14s\n", "tokens/s/GPU", grouped(r.tokens_per_s_per_gpu).c_str(),
                grouped(r.predicted_tokens_per_s_per_gpu).c_str());
  out << line;
  if (r.predicted.peak_flops > 0) {
    std::snprintf(line, sizeof line, "%-16s %14s %14s\n", "MFU", percent(r.mfu).c_str(), percent(r.predicted_mfu).c_str());
    out << line;
  }
  if (r.memory) {
    const std::string allocated =
        r.memory->allocated_logged ? "max allocated " + fixed(gib(r.memory->max_allocated_mib), 2) + " GiB" : "max allocated not logged";
    std::snprintf(line, sizeof line, "%-16s %14s %14s   (max reserved, rank %d; %s; predicted: the device peak)\n",
                  "memory (GiB)", fixed(gib(r.memory->max_reserved_mib), 2).c_str(),
                  fixed(r.predicted.peak_memory_gib, 2).c_str(), r.memory->rank, allocated.c_str());
    out << line << rank_memory_text(r);
  } else {
    out << "memory: not in the logs (Megatron-LM reports it after the first iteration)\n";
  }
  if (m.global_batch > 0 && m.global_batch != r.predicted.global_batch)
    out << "warning: the log's global batch size is " << m.global_batch << ", the plan's " << r.predicted.global_batch
        << ": the run did not run the plan\n";
  return out.str();
}

std::string run_report_csv(const RunReport& r, const std::string& job) {
  const MeasuredSteps& m = r.measured;
  auto num = [](double v) { return format_double(v); };
  std::string csv =
      "job,first_iteration,last_iteration,warmup_iterations,measured_step_s,min_step_s,max_step_s,predicted_step_s,"
      "error,tokens_per_s_per_gpu,predicted_tokens_per_s_per_gpu,mfu,predicted_mfu,max_allocated_gib,"
      "max_reserved_gib,predicted_peak_memory_gib,rank,stage,moment,predicted_allocated_gib,allocated_error,"
      "predicted_reserved_gib,reserved_error\n";
  // The run's row: the largest of the ranks against the largest of the stages.
  const bool allocated = r.memory && r.memory->allocated_logged, staged = !r.predicted.stage_memory.empty();
  const auto [allocated_gib, reserved_gib] = largest_stage_memory(r.predicted.stage_memory);
  csv += job + "," + std::to_string(m.first_iteration) + "," + std::to_string(m.last_iteration) + "," +
         std::to_string(m.warmup) + "," + num(m.step_s) + "," + num(m.min_step_s) + "," + num(m.max_step_s) + "," +
         num(r.predicted.step_s) + "," + num(r.error) + "," + num(r.tokens_per_s_per_gpu) + "," +
         num(r.predicted_tokens_per_s_per_gpu) + "," + num(r.mfu) + "," + num(r.predicted_mfu) + "," +
         (allocated ? num(gib(r.memory->max_allocated_mib)) : "") + "," +
         (r.memory ? num(gib(r.memory->max_reserved_mib)) : "") + "," + num(r.predicted.peak_memory_gib) + ",,,," +
         (staged ? num(allocated_gib) : "") + "," + (staged && allocated ? num(gib(r.memory->max_allocated_mib) / allocated_gib - 1) : "") +
         "," + (staged ? num(reserved_gib) : "") + "," + (staged && r.memory ? num(gib(r.memory->max_reserved_mib) / reserved_gib - 1) : "") +
         "\n";
  for (const RankMemoryReport& rank : r.ranks) {
    const bool in_plan = rank.stage >= 0;
    const StageMemoryPrediction* stage = in_plan ? &r.predicted.stage_memory[rank.stage] : nullptr;
    csv += job + ",,,,,,,,,,,,," + (rank.allocated_logged ? num(rank.max_allocated_gib) : "") + "," +
           num(rank.max_reserved_gib) + "," + (in_plan ? num(stage->device_gib) : "") + "," + std::to_string(rank.rank) + "," +
           (in_plan ? std::to_string(rank.stage) + "," + stage->moment + "," + num(rank.predicted_allocated_gib) + "," +
                          (rank.allocated_logged ? num(rank.allocated_error()) : "") + "," +
                          num(rank.predicted_reserved_gib) + "," + num(rank.reserved_error())
                    : ",,,,,") +
           "\n";
  }
  return csv;
}

}  // namespace fasop
