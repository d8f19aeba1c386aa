#include "cli/search_command.h"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/planner_options.h"
#include "report/atomic_file.h"
#include "report/fasop_csv.h"
#include "report/plan_table.h"

namespace fasop {
namespace {

struct SearchOptions {
  PlannerOptions planner;
  std::string out_dir = "main_logs";
  size_t top = 5;
  int threads = 0;
};

void run(const SearchOptions& options) {
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<PlannerSetup> setup = PlannerSetup::load(options.planner);
  setup->input.threads = options.threads;
  ProgressFn progress;
  if (show_progress(options.planner))
    progress = [](size_t done, size_t total) {
      std::fprintf(stderr, "\rsearch: %zu/%zu candidates", done, total);
      if (done == total) std::fprintf(stderr, "\n");
    };
  std::vector<CandidateResult> results = run_search(setup->input, progress);
  std::string name = setup->model.report_name;
  if (options.planner.heterogeneous || setup->cluster.is_heterogeneous()) name += "_heterogeneous";
  std::string path = options.out_dir + "/" + name + ".csv";
  write_file_atomically(path, fasop_csv(setup->cluster, results));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "model " << setup->model.name << " on cluster " << setup->cluster.name << ": "
            << results.size() << " candidates in " << seconds << " s\n"
            << best_plans_table(setup->cluster, results, options.top) << "wrote " << path << "\n";
}

}  // namespace

void add_search_command(CLI::App& app) {
  auto options = std::make_shared<SearchOptions>();
  CLI::App* command = app.add_subcommand("search", "search every plan of FASOP's space and write its table");
  options->planner.add_to(*command);
  command->add_option("--out-dir", options->out_dir, "directory of the CSV report (default main_logs)")
      ->check([](const std::string& dir) { return dir.empty() ? std::string("must not be empty") : std::string(); });
  command->add_option("--top", options->top, "how many of the best plans to print (default 5)");
  command->add_option("--threads", options->threads, "OpenMP threads (default: all cores)")
      ->check(CLI::NonNegativeNumber);
  command->callback([options] { run(*options); });
}

}  // namespace fasop
