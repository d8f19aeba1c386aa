#include "costmodel/run_length.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "costmodel/analytic_policy.h"
#include "specs/spec_error.h"

namespace fasop {

double model_parameters(const ModelSpec& model) {
  double params = one_stage_params(model, 1);
  for (const LayerUnit& unit : model.units) params += unit_expert_params(model, unit, 1, 1);
  return params;
}

RunLength run_length(const ModelSpec& model, double steps, double tokens) {
  const double tokens_per_step = double(model.global_batch) * model.sequence;
  RunLength run;
  if (steps > 0) {
    run = {.steps = steps, .tokens = 0, .source = "--iterations"};
  } else if (tokens > 0) {
    run = {.steps = tokens / tokens_per_step, .tokens = 0, .source = "--train-tokens"};
  } else if (model.train_tokens > 0) {
    run = {.steps = model.train_tokens / tokens_per_step, .tokens = 0, .source = "the model's train_tokens"};
  } else if (model.train_steps > 0) {
    run = {.steps = model.train_steps, .tokens = 0, .source = "the model's train_steps"};
  } else {
    run = {.steps = kDefaultTokensPerParameter * model_parameters(model) / tokens_per_step,
           .tokens = 0,
           .source = "default: 20 tokens a parameter, as the model states no train_tokens"};
  }
  run.tokens = run.steps * tokens_per_step;
  return run;
}

std::string short_count(double value) {
  static const char* const kSuffixes[] = {"", "k", "M", "B", "T", "P"};
  int power = 0;
  while (std::fabs(value) >= 999.5 && power < 5) {
    value /= 1000;
    ++power;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.3g%s", value, kSuffixes[power]);
  return text;
}

std::string duration_text(double seconds) {
  char text[32];
  if (seconds < 2 * 3600) std::snprintf(text, sizeof text, "%.0f min", seconds / 60);
  else if (seconds < 48 * 3600) std::snprintf(text, sizeof text, "%.1f h", seconds / 3600);
  else if (seconds < 100 * 86400) std::snprintf(text, sizeof text, "%.1f days", seconds / 86400);
  else std::snprintf(text, sizeof text, "%.0f days", seconds / 86400);
  return text;
}

std::string run_length_text(const ModelSpec& model, const RunLength& run) {
  return short_count(run.tokens) + " tokens = " + short_count(run.steps) + " steps of " +
         std::to_string(model.global_batch) + " x " + std::to_string(model.sequence) + " tokens (" + run.source +
         (run.source.rfind("--", 0) == 0 ? ")" : "; --train-tokens or --steps to change)");
}

double parse_duration_s(const std::string& text, const std::string& option) {
  const char* begin = text.c_str();
  char* end = nullptr;
  const double value = std::strtod(begin, &end);
  const std::string unit(end);
  double scale = 0;
  if (unit.empty() || unit == "s") scale = 1;
  else if (unit == "m" || unit == "min") scale = 60;
  else if (unit == "h") scale = 3600;
  else if (unit == "d") scale = 86400;
  else if (unit == "w") scale = 7 * 86400;
  if (end == begin || scale == 0 || !(value > 0) || !std::isfinite(value))
    throw SpecError(option + ": '" + text + "' is not a duration; give a positive number with s, m, h, d or w, e.g. 14d");
  return value * scale;
}

}  // namespace fasop
