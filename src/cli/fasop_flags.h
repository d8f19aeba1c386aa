#pragma once
// FASOP.py's flags, accepted with FASOP's meaning so that its users' commands run unchanged.
// --type and --iter are other names of --model and --iterations (planner_options.h).
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "specs/cluster_spec.h"
#include "specs/model_spec.h"

namespace fasop {

/// The FASOP flags that change the specs a run plans with.
struct FasopFlags {
  int gpu_per_node = 0;    ///< --gpu_per_node: GPUs every node uses; 0: the cluster's own
  int precision_bits = 0;  ///< --precision: 16 (fp16) or 32 (fp32); 0: the model's own
  /// --precision given as names (bf16, fp8, ...) rather than FASOP's bits: the precisions a
  /// search tries, or the one an estimate prices (PlanKey::precision).
  std::vector<std::string> precision_names;

  void add_to(CLI::App& command);
  /// Sets every node type's GPUs and the model's precision where given. Under --pareto,
  /// FASOP's default of 4 GPUs a node becomes 8, as FASOP.py does (and says so on stderr).
  void apply(ModelSpec& model, ClusterSpec& cluster, bool pareto) const;

};

}  // namespace fasop
