#pragma once
#include <string>
#include <vector>

#include "search/search.h"
#include "specs/cluster_spec.h"

namespace fasop {

/// FASOP's result table (FASOP.py): one row per candidate, FASOP's columns in FASOP's order,
/// with a num_<gpu> column per node type where FASOP has num_a100 and num_a10.
std::string fasop_csv(const ClusterSpec& cluster, const std::vector<CandidateResult>& results);

/// "['p4d.24xlarge', 'g5.24xlarge']": a node order as FASOP prints it.
std::string placement_text(const ClusterSpec& cluster, const std::vector<int>& node_order);

/// "[5, 4, 3]": a partition as FASOP prints it.
std::string partition_text(const std::vector<int>& partition);

}  // namespace fasop
