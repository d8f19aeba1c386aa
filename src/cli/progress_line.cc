#include "cli/progress_line.h"

#include <unistd.h>

#include <cstdio>

namespace fasop {

ProgressLine::ProgressLine(bool enabled, std::string label)
    : enabled_(enabled),
      terminal_(enabled && ::isatty(STDERR_FILENO)),
      label_(std::move(label)),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

double ProgressLine::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

bool ProgressLine::due() const {
  if (!enabled_) return false;
  const double since = std::chrono::duration<double>(std::chrono::steady_clock::now() - last_).count();
  return since >= (terminal_ ? 0.1 : kLogPeriodS);
}

void ProgressLine::update(const std::string& text) {
  if (due()) print(text, false);
}

void ProgressLine::finish(const std::string& text) {
  // Off a terminal, short work stays silent: only work that printed a line says it ended.
  if (enabled_ && (terminal_ || printed_)) print(text, true);
}

void ProgressLine::print(const std::string& text, bool last) {
  last_ = std::chrono::steady_clock::now();
  printed_ = true;
  if (terminal_)
    std::fprintf(stderr, "\r%s: %s, %.1f s   %s", label_.c_str(), text.c_str(), elapsed_s(), last ? "\n" : "");
  else
    std::fprintf(stderr, "%s: %s, %.1f s\n", label_.c_str(), text.c_str(), elapsed_s());
  std::fflush(stderr);
}

}  // namespace fasop
