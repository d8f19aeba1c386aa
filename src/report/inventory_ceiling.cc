#include "report/inventory_ceiling.h"

#include "search/cluster_shapes.h"

namespace fasop {

namespace {

/// "1-4, 7, 9-10": ranks (from 1, ascending) as runs.
std::string rank_runs(const std::vector<size_t>& ranks) {
  std::string text;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    text += (text.empty() ? "" : ", ") + std::to_string(ranks[i]) + (j > i ? "-" + std::to_string(ranks[j]) : "");
    i = j + 1;
  }
  return text;
}

}  // namespace

std::string inventory_ceiling_lines(const ClusterSpec& inventory, const std::vector<int>& limits,
                                    const std::vector<CandidateResult>& kept) {
  std::vector<NodeCounts> used;  // each kept plan's nodes of each type
  for (const CandidateResult& plan : kept) used.push_back(counts_of(inventory, plan.plan.key.node_order));
  std::string lines;
  for (size_t type = 0; type < limits.size(); ++type) {
    if (limits[type] == 0) continue;
    std::vector<size_t> ranks;
    for (size_t rank = 0; rank < kept.size(); ++rank)
      if (used[rank][type] == limits[type]) ranks.push_back(rank + 1);
    if (ranks.empty()) continue;
    const NodeType& node = inventory.node_types[type];
    const std::string who = ranks.size() == kept.size() && kept.size() > 1 ? "every plan shown uses"
                            : ranks.size() == 1                           ? "plan " + rank_runs(ranks) + " uses"
                                                                          : "plans " + rank_runs(ranks) + " use";
    lines += "inventory ceiling: " + who + " all " + std::to_string(limits[type]) + " " + node.name + " nodes (" +
             node.gpu + ") the search may rent; more might be faster or cheaper: widen it, e.g. --max-nodes " +
             node.name + "=" + std::to_string(2 * limits[type]) + "\n";
  }
  return lines;
}

}  // namespace fasop
