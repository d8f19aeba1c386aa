#include "costmodel/plan_context.h"

#include <algorithm>

#include "costmodel/rank_layout.h"
#include "specs/nvlink_domain.h"

namespace fasop {

int PlanContext::node_of(int rank) const {
  if (node_rank_end.empty()) return node_of_rank(rank, gpus_per_node);
  return int(std::upper_bound(node_rank_end.begin(), node_rank_end.end(), rank) - node_rank_end.begin());
}

PlanContext rank_layout_context(const ClusterSpec& cluster, const PlanKey& key) {
  PlanContext ctx;
  ctx.cluster = &cluster;
  ctx.key = key;
  ctx.gpus_per_node = cluster.gpus_per_node();
  ctx.multi_zone = cluster.multi_zone();
  if (ctx.multi_zone) {
    std::vector<std::string> zones = cluster.zone_names();
    std::sort(zones.begin(), zones.end());
    for (const NodeType& type : cluster.node_types)
      ctx.type_zone.push_back(int(std::lower_bound(zones.begin(), zones.end(), type.zone) - zones.begin()));
  }
  ctx.node_domain = nvlink_domains(cluster, key.node_order);
  for (int domain : ctx.node_domain) {
    if (domain >= int(ctx.domain_nodes.size())) ctx.domain_nodes.resize(domain + 1, 0);
    ++ctx.domain_nodes[domain];
  }
  if (!cluster.uniform_gpus_per_node())
    for (int type : key.node_order)
      ctx.node_rank_end.push_back((ctx.node_rank_end.empty() ? 0 : ctx.node_rank_end.back()) +
                                  cluster.node_types[type].gpus_per_node);
  return ctx;
}

int PlanContext::stage_first_rank(int stage) const {
  if (key.stage_dp.empty() && key.stage_tp.empty()) return stage * key.stage_gpus(0);
  int rank = 0;
  for (int s = 0; s < stage; ++s) rank += stage_tp(s) * stage_dp(s);
  return rank;
}

const NodeType& PlanContext::stage_smallest_memory_type(int stage) const {
  const NodeType* smallest = nullptr;
  const int first = stage_first_rank(stage), last = first + stage_gpus(stage) - 1;
  for (int node = node_of(first), last_node = node_of(last); node <= last_node; ++node) {
    const NodeType& type = cluster->node_types[key.node_order[node]];
    if (!smallest || type.gpu_memory_gib < smallest->gpu_memory_gib) smallest = &type;
  }
  return *smallest;
}

}  // namespace fasop
