#pragma once
// `fasop-cpp profile net`: all-reduce and send/recv time against message size between local
// processes, fitted to latency + bytes / bandwidth, written in the cluster file's format.
#include <string>
#include <vector>

namespace fasop {

/// What `profile net` measures and where it writes.
struct NetProfileOptions {
  std::string backend = "gloo";  ///< gloo (CPU, loopback) or nccl (GPUs; only where built with CUDA)
  int ranks = 2;                 ///< local processes
  std::vector<double> sizes_bytes;  ///< message sizes; empty: 4 MiB .. 128 MiB by powers of 2
  int repeats = 20;
  std::string output;            ///< YAML file to write (atomically); empty: print only
  bool quiet = false;            ///< no progress on stderr
};

/// Runs the measurement; returns the process exit code (0 on success). Errors print one line.
int run_net_profile(const NetProfileOptions& options);

}  // namespace fasop
