#pragma once
#include <string>
#include <vector>

#include "search/search.h"
#include "specs/cluster_spec.h"

namespace fasop {

/// How FASOP's table is written.
struct CsvStyle {
  /// Six more columns close each row: zero_stage, recompute, stage_dp (each stage's dp where
  /// it differs per stage, else empty; then "tp [..]" with per-stage tp, "uneven" with uneven
  /// dp, "speed" with the speed split), cp, ep and precision: the dimensions beyond FASOP's
  /// space. Without them the columns are FASOP's own.
  bool plan_dims = false;
  /// FASOP's cells: oom_gpumem and fsdpoom_gpumem as torch prints a one-element float32 tensor
  /// ("tensor([9.8218])"), which FASOP's users' pandas scripts parse; false: plain numbers
  /// (search --csv-style plain).
  bool torch_cells = true;
  /// The precision column's entry for plans in the model's own dtype.
  std::string model_dtype = "bf16";
};

/// FASOP's result table (FASOP.py): one row per candidate, FASOP's columns in FASOP's order,
/// with a num_<gpu> column per node type where FASOP has num_a100 and num_a10. Cells are
/// quoted where they hold a comma, as pandas writes them; the placement of more than
/// kMostNodesListed nodes is written as runs ("32xp5.48xlarge,96xg6.48xlarge").
std::string fasop_csv(const ClusterSpec& cluster, const std::vector<CandidateResult>& results,
                      const CsvStyle& style = {});
/// fasop_csv of the first `rows` results (all where 0) written to `path` atomically, row by
/// row (a table of millions of rows is never one string); returns the bytes written.
size_t write_fasop_csv_file(const std::string& path, const ClusterSpec& cluster, const std::vector<CandidateResult>& results,
                            const CsvStyle& style = {}, size_t rows = 0);
/// The table's header line and one row (each ending in a newline), for streaming it.
std::string fasop_csv_header(const ClusterSpec& cluster, const CsvStyle& style = {});
std::string fasop_csv_row(const ClusterSpec& cluster, const CandidateResult& result, const CsvStyle& style = {});
void append_fasop_csv_row(std::string& out, const ClusterSpec& cluster, const CandidateResult& result,
                          const CsvStyle& style = {});

/// "tensor([9.8218])": `value` as torch prints a one-element float32 tensor (4 decimals; "10."
/// when whole; 4-digit scientific above 1e8 or below 1e-4), the cell FASOP's tables hold.
std::string torch_tensor_text(double value);

/// "1xp4d.24xlarge,7xg5.24xlarge": a node order as runs of one type, the form `estimate
/// --placement` reads back.
std::string placement_runs(const ClusterSpec& cluster, const std::vector<int>& node_order);

/// Node orders of more nodes than this are written as runs in the table's placement column:
/// FASOP's list of every node (its clusters have at most 16) makes a 128-node cluster's row
/// 2 KB and its table tens of megabytes.
constexpr size_t kMostNodesListed = 16;

/// "['p4d.24xlarge', 'g5.24xlarge']": a node order as FASOP prints it.
std::string placement_text(const ClusterSpec& cluster, const std::vector<int>& node_order);

/// "[5, 4, 3]": a partition as FASOP prints it.
std::string partition_text(const std::vector<int>& partition);

}  // namespace fasop
