// Prints the Slapo schedule of a fixture plan (tests/emit_fixtures.h) to stdout, for
// slapo_schedule_check.py. Usage: emit_fixture <fixture name>.
#include <exception>
#include <iostream>

#include "emit/slapo_schedule.h"
#include "emit_fixtures.h"
#include "specs/spec_store.h"

namespace {
/// No files: the fixtures use the presets compiled into the binary.
class NoFiles : public fasop::TextSource {
 public:
  std::optional<std::string> read(const std::string&) const override { return std::nullopt; }
};
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: emit_fixture <fixture>\n";
    return 2;
  }
  try {
    const fasop::PlanFile plan = fasop::testing::emit_fixture_plan(argv[1]);
    NoFiles none;
    fasop::SpecStore store(none, fasop::embedded_presets());
    std::cout << fasop::slapo_schedule_py(plan, store.load_model(plan.model));
  } catch (const std::exception& error) {
    std::cerr << "emit_fixture: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
