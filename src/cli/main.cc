// fasop-cpp: plans distributed training of transformer models on heterogeneous GPU clusters.
#include <CLI/CLI.hpp>

#include <iostream>
#include <optional>
#include <new>

#include "cli/bash_completion.h"
#include "cli/calibrate_command.h"
#include "cli/estimate_command.h"
#include "cli/launch_command.h"
#include "cli/man_page.h"
#include "cli/plan_command.h"
#include "cli/presets_command.h"
#include "cli/profile_command.h"
#include "cli/schedule_command.h"
#include "cli/search_command.h"
#include "cli/usage_typo.h"
#include "cli/validate_command.h"
#include "report/atomic_file.h"
#include "specs/spec_error.h"

int main(int argc, char** argv) {
  fasop::remove_temporary_files_on_signals();
  CLI::App app{"fasop-cpp: plan distributed training on heterogeneous GPU clusters"};
  app.footer(
      "Exit status: 0 done; 1 a launched job or its trainer failed (launch, launch status), or validate --max-mae was "
      "exceeded; 2 bad input or usage "
      "(one line on stderr names the file, field or flag and the fix); 130 or 143 interrupted (SIGINT, SIGTERM), "
      "no half-written file left.");
  app.require_subcommand(1);
  app.set_version_flag("--version", "fasop-cpp " FASOP_VERSION);
  fasop::add_search_command(app);
  fasop::add_estimate_command(app);
  fasop::add_plan_command(app);
  fasop::add_schedule_command(app);
  fasop::add_launch_command(app);
  fasop::add_calibrate_command(app);
  fasop::add_profile_command(app);
  fasop::add_validate_command(app);
  fasop::add_presets_command(app);
  fasop::add_man_command(app, FASOP_VERSION);
  fasop::add_completion_command(app);  // last: it lists the commands above
  // A mistyped subcommand or flag, named with the nearest known one, before CLI11 reports what
  // the typo left missing instead.
  if (const std::optional<std::string> typo = fasop::usage_typo(app, argc, argv)) {
    std::cerr << "fasop-cpp: " << *typo << "\n";
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::RuntimeError& e) {
    return e.get_exit_code();  // a job that failed: its command said why
  } catch (const CLI::ParseError& e) {
    // CLI11 would print two lines and exit 105 and the like: one line and 2, as for any input error.
    std::cerr << "fasop-cpp: " << e.what() << "; see fasop-cpp " << (argc > 1 ? std::string(argv[1]) + " " : "")
              << "--help\n";
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << "fasop-cpp: out of memory; plan a smaller cluster or model, or narrow the search (--fix)\n";
    return 2;
  } catch (const std::exception& e) {
    // SpecError and I/O errors (an unwritable --out-dir) alike: the input is the user's to fix.
    std::cerr << "fasop-cpp: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
