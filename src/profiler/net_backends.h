#pragma once
// The backends of `profile net`: each measures send/recv and all-reduce for every size between
// `options.ranks` ranks and returns the medians. Throws SpecError for what the user can fix (no
// GPU for NCCL), std::runtime_error for a failure while measuring.
#include <vector>

#include "profiler/net_profiler.h"
#include "profiler/net_timing.h"

namespace fasop {

/// One process per rank on this machine, Gloo over loopback TCP (CPU).
std::vector<SizeTiming> measure_gloo(const NetProfileOptions& options, const std::vector<double>& sizes_bytes);

/// One GPU per rank on this machine, NCCL (NVLink or PCIe between them).
std::vector<SizeTiming> measure_nccl(const NetProfileOptions& options, const std::vector<double>& sizes_bytes);

}  // namespace fasop
