#pragma once
#include <string>
#include <vector>

namespace fasop::testing {

/// One row of a FASOP result table (FASOP.py's CSV).
struct FasopRow {
  int mbs = 0, tp = 0, dp = 0, pp = 0;
  std::vector<std::string> placement;  ///< node type names in rank order
  std::vector<int> partition;
  double step_s = 0, pipeline_s = 0, dp_allreduce_s = 0, embedding_allreduce_s = 0;
  double price_per_step = 0;
  bool is_oom = false, is_zero_oom = false;
  double oom_gib = 0, zero_oom_gib = 0;
  double train_cost = 0;
};

/// Parses FASOP's CSV (quoted Python lists, "tensor([x])" memory figures).
std::vector<FasopRow> read_fasop_table(const std::string& path);

}  // namespace fasop::testing
