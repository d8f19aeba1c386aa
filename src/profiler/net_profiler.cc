// `profile net`: check the options, measure with the chosen backend, fit, print, write.
#include "profiler/net_profiler.h"

#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <stdexcept>

#include "profiler/net_backends.h"
#include "profiler/net_report.h"
#include "profiler/reporting_errors.h"
#include "report/atomic_file.h"
#include "specs/spec_error.h"

namespace fasop {
namespace {

/// Throws SpecError when `path` cannot be written, so that a long measurement does not end in
/// that error. The probe leaves nothing behind (the writer removes its uncommitted file).
void check_output_writable(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw SpecError("--output '" + path + "' is a directory");
  try {
    AtomicFileWriter probe(path);
  } catch (const std::exception& e) {
    throw SpecError(std::string("--output: ") + e.what());
  }
}

/// The backend's measurement, or why this build cannot make it.
std::vector<SizeTiming> measure(const NetProfileOptions& options, const std::vector<double>& sizes_bytes) {
  if (options.backend == "gloo") {
#ifdef FASOP_HAVE_GLOO
    return measure_gloo(options, sizes_bytes);
#else
    throw SpecError("--backend gloo: this build has no Gloo; install libgloo-dev and rebuild");
#endif
  }
#ifdef FASOP_HAVE_NCCL
  return measure_nccl(options, sizes_bytes);
#else
  throw SpecError("--backend nccl: this build has no NCCL (it is built where /usr/local/cuda has nccl.h and "
                  "libnccl; rebuild there, or use --backend gloo)");
#endif
}

/// What the YAML's comment says was measured.
std::string link_description(const NetProfileOptions& options) {
  if (options.backend == "gloo") return "Loopback TCP on one machine (Gloo, CPU): this is the host, not a GPU interconnect.";
  return "NCCL between " + std::to_string(options.ranks) + " GPUs of one machine: the node's GPU interconnect.";
}

int profile_net(const NetProfileOptions& options) {
  if (options.backend != "gloo" && options.backend != "nccl")
    throw SpecError("--backend " + options.backend + ": unknown backend; use gloo or nccl");
  std::vector<double> sizes_bytes = options.sizes_bytes.empty() ? default_sizes_bytes() : options.sizes_bytes;
  check_net_options(options, sizes_bytes);
  if (!options.output.empty()) check_output_writable(options.output);
  std::vector<SizeTiming> timings = measure(options, sizes_bytes);
  NetFits fits;
  try {
    fits = fit_net(timings, options.ranks);
  } catch (const std::exception&) {
    print_measured(std::cout, timings);
    throw;
  }
  print_fit_table(std::cout, timings, fits, options.ranks);
  std::cout.flush();
  if (!options.output.empty())
    write_file_atomically(options.output, net_profile_yaml(options, timings, fits, link_description(options)));
  return 0;
}

}  // namespace

int run_net_profile(const NetProfileOptions& options) {
  return reporting_errors("profile net: ", [&] { return profile_net(options); });
}

}  // namespace fasop
