#include "costmodel/stage_tp_checks.h"

#include <algorithm>
#include <string>

#include "specs/spec_error.h"

namespace fasop {
namespace {

std::string str(long long v) { return std::to_string(v); }

/// Where each node's ranks start, and the total at the end (nodes in `key`'s rank order).
std::vector<int> node_rank_starts(const ClusterSpec& cluster, const PlanKey& key) {
  std::vector<int> starts{0};
  for (int type : key.node_order) starts.push_back(starts.back() + cluster.node_types[type].gpus_per_node);
  return starts;
}

}  // namespace

void validate_stage_tp_degrees(const ModelSpec& model, const ClusterSpec& cluster, const PlanKey& key) {
  if (static_cast<int>(key.stage_tp.size()) != key.pp)
    throw SpecError("--stage-tp: gives " + str(key.stage_tp.size()) + " stages' tp but pp is " + str(key.pp) +
                    "; give one tp per stage");
  for (int t : key.stage_tp)
    if (t <= 0) throw SpecError("--stage-tp: every stage needs a tp of 1 or more, got " + str(t));
  const int largest = *std::max_element(key.stage_tp.begin(), key.stage_tp.end());
  if (largest != key.tp) throw SpecError("--tp: with per-stage tp, tp is the largest stage's: " + str(largest));
  for (int s = 0; s < key.pp; ++s)
    if (model.heads % key.stage_tp[s] != 0 || model.kv_heads % key.stage_tp[s] != 0)
      throw SpecError("--stage-tp: stage " + str(s) + "'s tp " + str(key.stage_tp[s]) + " does not divide model '" +
                      model.name + "''s " + str(model.heads) + " attention heads and " + str(model.kv_heads) +
                      " key/value heads; choose tps that divide both");
  if (key.num_gpus() != cluster.num_gpus())
    throw SpecError("--stage-tp: the stages take " + str(key.num_gpus()) + " GPUs (each stage's tp x its dp) but cluster '" +
                    cluster.name + "' has " + str(cluster.num_gpus()) + "; choose degrees that use every GPU");
}

void validate_stage_tp_nodes(const ClusterSpec& cluster, const PlanKey& key) {
  const std::vector<int> starts = node_rank_starts(cluster, key);
  std::vector<int> type_tp(cluster.node_types.size(), 0), type_stage(cluster.node_types.size(), -1);
  for (int s = 0, first = 0; s < key.pp; first += key.tp_of_stage(s) * key.dp_of_stage(s), ++s) {
    const int tp = key.tp_of_stage(s), last = first + tp * key.dp_of_stage(s) - 1;
    const int first_node = int(std::upper_bound(starts.begin(), starts.end(), first) - starts.begin()) - 1;
    if ((first - starts[first_node]) % tp != 0)
      throw SpecError("--stage-tp: stage " + str(s) + " starts at GPU " + str(first - starts[first_node]) +
                      " of its node, so its tp groups of " + str(tp) + " would straddle two nodes; give the stages "
                      "before it a multiple of " + str(tp) + " GPUs");
    for (int node = first_node; node + 1 < int(starts.size()) && starts[node] <= last; ++node) {
      const int type = key.node_order[node];
      const NodeType& t = cluster.node_types[type];
      if (t.gpus_per_node % tp != 0)
        throw SpecError("--stage-tp: stage " + str(s) + "'s tp " + str(tp) + " does not divide the " +
                        str(t.gpus_per_node) + " GPUs of a '" + t.name + "' node; give it a divisor of " +
                        str(t.gpus_per_node));
      if (type_tp[type] != 0 && type_tp[type] != tp)
        throw SpecError("--stage-tp: stages " + str(type_stage[type]) + " and " + str(s) + " both run on '" + t.name +
                        "' nodes but with tp " + str(type_tp[type]) + " and " + str(tp) +
                        "; give a node type's stages one tp");
      type_tp[type] = tp, type_stage[type] = s;
    }
  }
}

}  // namespace fasop
