#pragma once
// Progress of long work on stderr: redrawn in place on a terminal, else a line every few
// seconds (a log or a CI job sees the search alive); nothing with --quiet.
#include <chrono>
#include <string>

namespace fasop {

/// One task's progress: `update` as often as convenient, `finish` at the end.
class ProgressLine {
 public:
  /// `enabled`: false for --quiet. `label` starts every line, e.g. "search".
  ProgressLine(bool enabled, std::string label);
  /// `text` is what is done so far, e.g. "1200/5000 candidates"; the elapsed time is appended.
  /// On a terminal it is drawn at most 10 times a second, else at most every `kLogPeriodS`.
  void update(const std::string& text);
  /// The last line (always printed where anything was, and on a terminal ends it).
  void finish(const std::string& text);
  /// Seconds since the task began.
  double elapsed_s() const;
  /// Whether update(...) would print now: callers whose text costs something to build ask first.
  bool due() const;

  static constexpr double kLogPeriodS = 5;

 private:
  void print(const std::string& text, bool last);
  bool enabled_, terminal_, printed_ = false;
  std::string label_;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace fasop
