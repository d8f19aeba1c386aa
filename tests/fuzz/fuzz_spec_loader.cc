// libFuzzer harness of one spec loader (issue 16: bad input). The input bytes are the YAML text
// of a spec file; the loader is chosen at compile time by FASOP_FUZZ_LOADER (tests/fuzz/
// CMakeLists.txt builds one binary per loader: fuzz_model, fuzz_cluster, ...).
//
// A SpecError is the loader's answer to bad input (the CLI prints it and exits 2): expected, so
// it is caught. Anything else escaping -- YAML::Exception, std::bad_alloc, std::out_of_range,
// std::invalid_argument, ... -- is a bug and is deliberately NOT caught: libFuzzer reports the
// uncaught exception (abort) as a crash, as it does ASan and UBSan findings.
// Run by scripts/fuzz.sh, never by ctest.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "specs/plan_file.h"
#include "specs/spec_error.h"
#include "specs/spec_loader.h"
#include "specs/spec_store.h"
#include "specs/trainer_config.h"
#include "specs/validation_case.h"

#define FASOP_LOADER_model 1
#define FASOP_LOADER_cluster 2
#define FASOP_LOADER_profile 3
#define FASOP_LOADER_plan 4
#define FASOP_LOADER_validation 5
#define FASOP_LOADER_trainer 6
#define FASOP_LOADER_layer_times 7
#define FASOP_CAT(a, b) a##b
#define FASOP_LOADER_ID(name) FASOP_CAT(FASOP_LOADER_, name)

#ifndef FASOP_FUZZ_LOADER
#error "define FASOP_FUZZ_LOADER: model, cluster, profile, plan, validation, trainer or layer_times"
#endif
#define FASOP_SELECTED FASOP_LOADER_ID(FASOP_FUZZ_LOADER)

namespace {

#if FASOP_SELECTED == 5 || FASOP_SELECTED == 7
// Validation cases resolve their model and cluster presets through a store: no files on disk,
// only the presets compiled into the binary (as tests/test_support.h's MapSource).
class NoFiles : public fasop::TextSource {
 public:
  std::optional<std::string> read(const std::string&) const override { return std::nullopt; }
};
const fasop::SpecStore& store() {
  static const NoFiles none;
  static const fasop::SpecStore instance(none, fasop::embedded_presets());
  return instance;
}
#endif

void load(const std::string& text) {
  const std::string source = "fuzz.yaml";
#if FASOP_SELECTED == 1
  (void)fasop::parse_model(text, source);
#elif FASOP_SELECTED == 2
  (void)fasop::parse_cluster(text, source);
#elif FASOP_SELECTED == 3
  (void)fasop::parse_profile(text, source);
#elif FASOP_SELECTED == 4
  (void)fasop::parse_plan_file(text, source);
#elif FASOP_SELECTED == 5
  (void)fasop::parse_validation_case(text, source, store());
#elif FASOP_SELECTED == 6
  (void)fasop::parse_trainer_config(text, source);
#elif FASOP_SELECTED == 7
  (void)fasop::parse_layer_time_case(text, source, store());
#else
#error "unknown FASOP_FUZZ_LOADER"
#endif
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    load(text);
  } catch (const fasop::SpecError& e) {
    // The expected outcome of bad input, if it names the file (the CLI prints it as the one line
    // a user sees). Every other exception escapes on purpose.
    if (std::string(e.what()).find("fuzz.yaml") == std::string::npos) {
      std::fprintf(stderr, "SpecError without the file's name: %s\n", e.what());
      std::abort();
    }
  }
  return 0;
}
