#pragma once
// GPUs planned without data of their own: a node type whose GPU has no shipped data
// (configs/gpus/) and whose file gives its peaks but none of its efficiencies. The analytic
// model would then price it with default shares of peak, an answer nobody measured: refused
// unless the user asks for the defaults, and stated when they are used.
#include <string>

#include "specs/cluster_spec.h"

namespace fasop {

/// The refusal for the first node type of `cluster` with NodeType::gpu_data_assumed: its file,
/// field and the fixes (`flag` names the option that accepts the defaults); "" when none has.
std::string assumed_gpu_data_fault(const ClusterSpec& cluster, const std::string& flag);

/// "assumed: GPU 'X' (node type T) has no data: default shares of peak (...)\n" for each such
/// node type, for a report's header; "" when none has.
std::string assumed_gpu_data_lines(const ClusterSpec& cluster);

}  // namespace fasop
