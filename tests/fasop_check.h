#pragma once
// Checks of our figures against rows of FASOP's result tables.
#include <string>
#include <vector>

#include "fasop_table.h"
#include "search/search.h"

namespace fasop::testing {

/// "mbs 1 tp 2 dp 4 pp 4 placement p4d.24xlarge g5.24xlarge ...": a row's layout.
std::string describe(const FasopRow& row);

/// The row's layout on `cluster` (whose node type names the row's placement uses).
PlanKey key_of(const FasopRow& row, const ClusterSpec& cluster);

/// Estimates the row's layout at FASOP's partition (as FASOP reports it) on input.cluster and
/// appends a line to `problems` for each figure that differs: times and price within 1e-5
/// relative, OOM flags exactly, memory within 1e-3 GiB (FASOP prints 4 decimals).
void check_estimate_at_fasop_partition(const SearchInput& input, const FasopRow& row,
                                       std::vector<std::string>& problems);

}  // namespace fasop::testing
