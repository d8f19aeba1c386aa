#include "costmodel/plan_context.h"

#include <algorithm>

#include "costmodel/rank_layout.h"

namespace fasop {

int PlanContext::node_of(int rank) const {
  if (node_rank_end.empty()) return node_of_rank(rank, gpus_per_node);
  return int(std::upper_bound(node_rank_end.begin(), node_rank_end.end(), rank) - node_rank_end.begin());
}

int PlanContext::stage_first_rank(int stage) const {
  if (key.stage_dp.empty() && key.stage_tp.empty()) return stage * key.tp * key.dp;
  int rank = 0;
  for (int s = 0; s < stage; ++s) rank += stage_tp(s) * stage_dp(s);
  return rank;
}

}  // namespace fasop
