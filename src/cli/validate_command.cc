#include "cli/validate_command.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>

#include "report/atomic_file.h"
#include "specs/spec_store.h"
#include "specs/spec_error.h"
#include "validate/efficiency_fit.h"
#include "validate/validate.h"

namespace fasop {
namespace {

struct ValidateOptions {
  std::vector<std::string> paths;
  std::string csv;
  double max_mae = -1;
  bool quiet = false;
  std::vector<std::string> fit;  ///< --fit: cases whose measurements fit the efficiencies
};

/// --fit: the node type's efficiencies fitted to the named cases, every case predicted with
/// them, and the error on the cases left out (runs the fitted model has not seen).
std::vector<ValidationCase> fitted(const ValidateOptions& options, const std::vector<ValidationCase>& cases) {
  std::vector<ValidationCase> fit_cases, held_out;
  for (const ValidationCase& c : cases) {
    bool named = std::find(options.fit.begin(), options.fit.end(), c.name) != options.fit.end();
    (named ? fit_cases : held_out).push_back(c);
  }
  for (const std::string& name : options.fit)
    if (std::none_of(cases.begin(), cases.end(), [&](const ValidationCase& c) { return c.name == name; }))
      throw SpecError("--fit: no case '" + name + "' among the cases given");
  EfficiencyFit fit = fit_efficiencies(fit_cases);
  double held_out_error = 0;
  for (const ValidationCase& c : with_efficiencies(held_out, fit)) held_out_error += std::fabs(predict_case(c).error_pct);
  std::printf("fitted on %zu cases: compute_efficiency %.3f, memory_efficiency %.3f (mean absolute error %.1f%% on them",
              fit_cases.size(), fit.compute_efficiency, fit.memory_efficiency, fit.mean_abs_error_pct);
  if (!held_out.empty()) std::printf(", %.1f%% on the %zu others", held_out_error / held_out.size(), held_out.size());
  std::printf(")\n\n");
  return with_efficiencies(cases, fit);
}

void run(const ValidateOptions& options) {
  DiskSource disk;
  SpecStore store(disk, embedded_presets());
  std::vector<ValidationCase> cases = load_validation_cases(options.paths, store, disk);
  if (!options.fit.empty()) cases = fitted(options, cases);
  std::vector<ValidationResult> results;
  for (const ValidationCase& c : cases) results.push_back(predict_case(c));
  std::cout << validation_text(results, options.quiet);
  if (!options.csv.empty()) write_file_atomically(options.csv, validation_csv(results));
  if (options.max_mae >= 0) {
    bool over = false;
    for (const ValidationSummary& s : summarize(results))
      if (s.mean_abs_error_pct > options.max_mae) {
        std::cerr << "fasop-cpp: validate: set " << s.set << ": mean absolute error " << s.mean_abs_error_pct
                  << "% exceeds --max-mae " << options.max_mae << "%\n";
        over = true;
      }
    if (over) throw CLI::RuntimeError(1);
  }
}

}  // namespace

void add_validate_command(CLI::App& app) {
  auto options = std::make_shared<ValidateOptions>();
  CLI::App* command = app.add_subcommand(
      "validate", "compare predicted step times with published measurements (validation cases)");
  command->add_option("cases", options->paths,
                      "validation case files or directories of them (default: the shipped validation/ sets)");
  command->add_option("--csv", options->csv, "also write the rows as CSV to FILE");
  command->add_option("--max-mae", options->max_mae, "exit 1 when a set's mean absolute error exceeds PCT percent")
      ->type_name("PCT")
      ->check(CLI::NonNegativeNumber);
  command->add_flag("--quiet,-q", options->quiet, "print only each set's summary");
  command->add_option("--fit", options->fit,
                      "fit the node type's compute and memory efficiencies to these cases (comma-separated names), "
                      "then predict every case with them: the others measure the fit on runs it has not seen")
      ->delimiter(',')->type_name("CASE,...");
  command->callback([options] { run(*options); });
}

}  // namespace fasop
