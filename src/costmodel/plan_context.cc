#include "costmodel/plan_context.h"

#include "costmodel/rank_layout.h"

namespace fasop {

int PlanContext::node_of(int rank) const { return node_of_rank(rank, cluster->gpus_per_node()); }

}  // namespace fasop
