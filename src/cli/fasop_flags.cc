#include "cli/fasop_flags.h"

#include <iostream>

#include "cli/planner_options.h"

namespace fasop {

void FasopFlags::add_to(CLI::App& command) {
  command.add_option("--gpu_per_node", gpu_per_node,
                     "FASOP's flag: GPUs each node uses (default: the cluster's; FASOP's 4 becomes 8 under --pareto, "
                     "as in FASOP)")
      ->check(whole_number("GPUs", 1));
  command.add_option("--precision", precision_bits,
                     "FASOP's flag: training precision in bits, 16 (fp16) or 32 (fp32) (default: the model's)")
      ->check(CLI::IsMember({16, 32}));
}

void FasopFlags::apply(ModelSpec& model, ClusterSpec& cluster, bool pareto) const {
  if (precision_bits > 0) {
    model.precision_bits = precision_bits;
    model.dtype = precision_bits == 32 ? "fp32" : "fp16";
  }
  if (gpu_per_node <= 0) return;
  int gpus = gpu_per_node;
  if (pareto && gpus == 4) {
    std::cerr << "--gpu_per_node 4: pareto experiments use 8 GPUs per node, as FASOP does; using 8\n";
    gpus = 8;
  }
  for (NodeType& type : cluster.node_types) type.gpus_per_node = gpus;
}

}  // namespace fasop
