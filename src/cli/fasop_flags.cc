#include "cli/fasop_flags.h"

#include <iostream>

#include "cli/planner_options.h"
#include "specs/precision.h"

namespace fasop {

void FasopFlags::add_to(CLI::App& command) {
  command.add_option("--gpu_per_node", gpu_per_node,
                     "FASOP's flag: GPUs each node uses (default: the cluster's; FASOP's 4 becomes 8 under --pareto, "
                     "as in FASOP)")
      ->check(whole_number("GPUs", 1));
  command
      .add_option_function<std::vector<std::string>>(
          "--precision",
          [this](const std::vector<std::string>& given) {
            // FASOP's bits, or precision names (one: the model's; several: the search tries each).
            if (given.size() == 1 && (given[0] == "16" || given[0] == "32")) {
              precision_bits = std::stoi(given[0]);
              return;
            }
            for (const std::string& name : given)
              if (!known_precision(name))
                throw CLI::ValidationError("--precision", "unknown precision '" + name + "'; use FASOP's 16 or 32, or " +
                                                              known_precisions_text());
            precision_names = given;
          },
          "training precision: FASOP's bits, 16 (fp16) or 32 (fp32), or names, e.g. bf16,fp8, which the search "
          "tries where every GPU has them (analytic layer times; default: the model's)")
      ->delimiter(',');
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
