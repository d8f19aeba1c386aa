// fasop-cpp: plans distributed training of transformer models on heterogeneous GPU clusters.
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/calibrate_command.h"
#include "cli/estimate_command.h"
#include "cli/launch_command.h"
#include "cli/plan_command.h"
#include "cli/presets_command.h"
#include "cli/profile_command.h"
#include "cli/schedule_command.h"
#include "cli/search_command.h"
#include "cli/validate_command.h"
#include "specs/spec_error.h"

int main(int argc, char** argv) {
  CLI::App app{"fasop-cpp: plan distributed training on heterogeneous GPU clusters"};
  app.require_subcommand(1);
  fasop::add_search_command(app);
  fasop::add_estimate_command(app);
  fasop::add_plan_command(app);
  fasop::add_schedule_command(app);
  fasop::add_launch_command(app);
  fasop::add_calibrate_command(app);
  fasop::add_profile_command(app);
  fasop::add_validate_command(app);
  fasop::add_presets_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const fasop::SpecError& e) {
    std::cerr << "fasop-cpp: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "fasop-cpp: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
