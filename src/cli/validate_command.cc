#include "cli/validate_command.h"

#include <iostream>
#include <memory>

#include "report/atomic_file.h"
#include "specs/spec_store.h"
#include "validate/validate.h"

namespace fasop {
namespace {

struct ValidateOptions {
  std::vector<std::string> paths;
  std::string csv;
  double max_mae = -1;
  bool quiet = false;
};

void run(const ValidateOptions& options) {
  DiskSource disk;
  SpecStore store(disk, embedded_presets());
  std::vector<ValidationCase> cases = load_validation_cases(options.paths, store, disk);
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
  command->callback([options] { run(*options); });
}

}  // namespace fasop
