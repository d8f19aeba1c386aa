#include "costmodel/plan_context.h"

#include "costmodel/rank_layout.h"

namespace fasop {

int PlanContext::node_of(int rank) const { return node_of_rank(rank, cluster->gpus_per_node()); }

int PlanContext::stage_first_rank(int stage) const {
  if (key.stage_dp.empty()) return stage * key.tp * key.dp;
  int rank = 0;
  for (int s = 0; s < stage; ++s) rank += key.tp * key.stage_dp[s];
  return rank;
}

}  // namespace fasop
