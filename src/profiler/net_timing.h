#pragma once
// What `profile net` measures whatever the backend: the message sizes and their checks, and
// the rounds that spread each size's repeats over the run.
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "profiler/net_profiler.h"

namespace fasop {

/// Median times of one message size.
struct SizeTiming {
  double bytes = 0;
  double send_recv_s = 0;  ///< one way: half a round trip between rank 0 and rank 1
  double allreduce_s = 0;  ///< a ring all-reduce (sum) over all ranks
};

/// 4 MiB to 128 MiB by powers of 2.
std::vector<double> default_sizes_bytes();

/// Throws SpecError for options that cannot run (ranks, repeats, sizes), before anything starts.
void check_net_options(const NetProfileOptions& options, const std::vector<double>& sizes_bytes);

/// Runs one operation on a message of `bytes` and returns its seconds.
using TimedOperation = std::function<double(size_t bytes)>;

/// Medians of `send_recv` and `allreduce` for every size, each size's `repeats` spread over
/// rounds that sweep all sizes. Every rank of a backend calls it in step with the others.
std::vector<SizeTiming> time_sizes_in_rounds(const std::vector<double>& sizes_bytes, int repeats, bool progress,
                                             const TimedOperation& send_recv, const TimedOperation& allreduce);

/// `%.4g`: four digits are more than the measurement's noise, and short enough to paste.
std::string short_number(double value);

/// A size as people write it: "4 KiB", "64 MiB", or bytes where it is not a whole unit.
std::string human_bytes(double bytes);

}  // namespace fasop
