#include "costmodel/plan_context.h"

#include "costmodel/rank_layout.h"

namespace fasop {

int PlanContext::node_of(int rank) const { return node_of_rank(rank, cluster->gpus_per_node()); }

int PlanContext::node_type_of_rank(int rank) const { return key.node_order[node_of(rank)]; }

}  // namespace fasop
