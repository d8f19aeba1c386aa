#pragma once
#include <string>
#include <vector>

#include "search/search.h"
#include "specs/cluster_spec.h"

namespace fasop {

/// FASOP's result table (FASOP.py): one row per candidate, FASOP's columns in FASOP's order,
/// with a num_<gpu> column per node type where FASOP has num_a100 and num_a10.
/// With `plan_dims`, three more columns close each row: zero_stage, recompute and stage_dp (each
/// stage's dp where it differs per stage, else empty; then "tp [..]" with per-stage tp and
/// "uneven" with uneven dp, "speed" with the speed split): the dimensions beyond FASOP's space;
/// FASOP's own tables stay byte for byte FASOP's.
std::string fasop_csv(const ClusterSpec& cluster, const std::vector<CandidateResult>& results, bool plan_dims = false);
/// fasop_csv written to `path` atomically, row by row (a table of millions of rows is never
/// one string).
void write_fasop_csv_file(const std::string& path, const ClusterSpec& cluster, const std::vector<CandidateResult>& results,
                          bool plan_dims = false);
/// The table's header line and one row (each ending in a newline), for streaming it.
std::string fasop_csv_header(const ClusterSpec& cluster, bool plan_dims = false);
std::string fasop_csv_row(const ClusterSpec& cluster, const CandidateResult& result, bool plan_dims = false);
void append_fasop_csv_row(std::string& out, const ClusterSpec& cluster, const CandidateResult& result,
                          bool plan_dims = false);

/// "['p4d.24xlarge', 'g5.24xlarge']": a node order as FASOP prints it.
std::string placement_text(const ClusterSpec& cluster, const std::vector<int>& node_order);

/// "[5, 4, 3]": a partition as FASOP prints it.
std::string partition_text(const std::vector<int>& partition);

}  // namespace fasop
