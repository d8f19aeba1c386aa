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

}  // namespace

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
  }
  return report;
}

std::string run_summary_line(const RunReport& r) {
  const MeasuredSteps& m = r.measured;
  std::ostringstream out;
  out << "iteration " << m.last_logged << "/" << m.train_iters << ": " << seconds(m.step_s)
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
      << " warm-up iteration" << (m.warmup == 1 ? "" : "s") << " skipped; " << m.last_logged << " of "
      << m.train_iters << " logged)\n";
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
    std::snprintf(line, sizeof line, "%-16s %14s %14s   (max reserved, rank %d; max allocated %s GiB)\n", "memory (GiB)",
                  fixed(gib(r.memory->max_reserved_mib), 2).c_str(), fixed(r.predicted.peak_memory_gib, 2).c_str(),
                  r.memory->rank, fixed(gib(r.memory->max_allocated_mib), 2).c_str());
    out << line;
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
      "max_reserved_gib,predicted_peak_memory_gib\n";
  csv += job + "," + std::to_string(m.first_iteration) + "," + std::to_string(m.last_iteration) + "," +
         std::to_string(m.warmup) + "," + num(m.step_s) + "," + num(m.min_step_s) + "," + num(m.max_step_s) + "," +
         num(r.predicted.step_s) + "," + num(r.error) + "," + num(r.tokens_per_s_per_gpu) + "," +
         num(r.predicted_tokens_per_s_per_gpu) + "," + num(r.mfu) + "," + num(r.predicted_mfu) + "," +
         (r.memory ? num(gib(r.memory->max_allocated_mib)) : "") + "," +
         (r.memory ? num(gib(r.memory->max_reserved_mib)) : "") + "," + num(r.predicted.peak_memory_gib) + "\n";
  return csv;
}

}  // namespace fasop
