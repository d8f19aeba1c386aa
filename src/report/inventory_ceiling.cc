#include "report/inventory_ceiling.h"

#include "search/cluster_shapes.h"

namespace fasop {

std::string inventory_ceiling_lines(const ClusterSpec& inventory, const std::vector<int>& limits,
                                    const std::vector<CandidateResult>& kept) {
  std::string lines;
  for (size_t type = 0; type < limits.size(); ++type) {
    if (limits[type] == 0) continue;
    std::string plans;
    int at_ceiling = 0;
    for (size_t rank = 0; rank < kept.size(); ++rank)
      if (counts_of(inventory, kept[rank].plan.key.node_order)[type] == limits[type]) {
        plans += (plans.empty() ? "" : ", ") + std::to_string(rank + 1);
        ++at_ceiling;
      }
    if (at_ceiling == 0) continue;
    const NodeType& node = inventory.node_types[type];
    lines += std::string("inventory ceiling: ") + (at_ceiling == 1 ? "plan " : "plans ") + plans +
             (at_ceiling == 1 ? " uses" : " use") + " all " + std::to_string(limits[type]) + " " + node.name +
             " nodes (" + node.gpu + ") the search may rent; more might be faster or cheaper: widen it, e.g. "
             "--max-nodes " + node.name + "=" + std::to_string(2 * limits[type]) + "\n";
  }
  return lines;
}

}  // namespace fasop
