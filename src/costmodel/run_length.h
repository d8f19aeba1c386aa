#pragma once
// How long a training run is, in steps and tokens, and where that number comes from: the
// run's price and a deadline's step-time limit both follow from it.
#include <string>

#include "specs/model_spec.h"

namespace fasop {

/// Tokens a parameter of the default run (Chinchilla's compute-optimal 20, arXiv:2203.15556),
/// for a model that states no training length.
constexpr double kDefaultTokensPerParameter = 20;

/// The steps of a training run and the source of that number, for the report.
struct RunLength {
  double steps = 0;
  double tokens = 0;       ///< steps x global batch x sequence
  std::string source;      ///< e.g. "--train-tokens", "the model's train_tokens"
};

/// The run's length: `steps` (--steps / --iterations) where positive, else `tokens`
/// (--train-tokens), else the model's train_tokens or train_steps, else 20 tokens a parameter.
RunLength run_length(const ModelSpec& model, double steps, double tokens);

/// "15T tokens = 3.66M steps of 512 x 8192 tokens (the model's train_tokens; --train-tokens or
/// --steps to change)".
std::string run_length_text(const ModelSpec& model, const RunLength& run);

/// Parameters of the whole model, every expert counted.
double model_parameters(const ModelSpec& model);

/// Seconds of a duration such as "14d", "2w", "36h", "90m" or "3600" (seconds); throws SpecError
/// naming `option` where it is none.
double parse_duration_s(const std::string& text, const std::string& option);

/// A run's wall time in the unit that reads best: "45 min", "31.2 h", "10.3 days", "580 days".
std::string duration_text(double seconds);

/// "1.2k", "3.58M", "15T": a count in a few digits.
std::string short_count(double value);

}  // namespace fasop
