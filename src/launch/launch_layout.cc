#include "launch/launch_layout.h"

#include "specs/spec_error.h"

namespace fasop {

LaunchLayout make_launch_layout(const PlanFile& plan, const ClusterSpec& cluster) {
  LaunchLayout layout;
  for (size_t i = 0; i < plan.node_order.size(); ++i) {
    const std::string& name = plan.node_order[i];
    int type = cluster.find_node_type(name);
    if (type < 0)
      throw SpecError(plan.source + ": field 'node_order': node type '" + name + "' is not in cluster '" + cluster.name +
                      "' (" + cluster.source + ")");
    int component = 0;
    while (component < static_cast<int>(layout.components.size()) && layout.components[component].node_type != name)
      ++component;
    if (component == static_cast<int>(layout.components.size())) layout.components.push_back({name, type, 0});
    LaunchNode node;
    node.node_rank = static_cast<int>(i);
    node.node_type = name;
    node.gpus = cluster.node_types[type].gpus_per_node;
    node.first_rank = layout.world_size;
    node.component = component;
    node.index_in_component = layout.components[component].nodes++;
    layout.world_size += node.gpus;
    layout.nodes.push_back(node);
  }
  return layout;
}

RankCoordinates coordinates_of_rank(const PlanFile& plan, int rank) {
  RankCoordinates r;
  r.rank = rank;
  int stage_first = 0;
  for (int stage = 0; stage < plan.key.pp; ++stage) {
    const int tp = plan.key.tp_of_stage(stage), cp = plan.key.cp, replica = plan.key.replica_gpus(stage);
    const int ranks = plan.key.stage_gpus(stage);
    if (rank < stage_first + ranks || stage + 1 == plan.key.pp) {
      r.stage = stage;
      r.dp_index = (rank - stage_first) / replica;
      r.cp_index = (rank - stage_first) / tp % cp;
      r.tp_index = (rank - stage_first) % tp;
      break;
    }
    stage_first += ranks;
  }
  return r;
}

}  // namespace fasop
