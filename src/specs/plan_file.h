#pragma once
// A chosen plan as a file (`search --save-plan`): where its specs come from, its layout and
// partition, the stages it implies and the estimate it had when saved. The emitters and
// launchers read it; `estimate --plan` re-creates its estimate from the specs.
#include <string>
#include <utility>
#include <vector>

#include "specs/execution.h"
#include "specs/plan.h"

namespace fasop {

/// One pipeline stage of a saved plan: its units, the GPUs that run it and their load.
struct PlanStage {
  int first_unit = 0;
  int num_units = 0;
  std::string node_type;  ///< the node type whose GPUs run it
  std::string gpu;        ///< that node type's GPU
  int dp = 0;             ///< data-parallel replicas of tp GPUs
  double compute_s = 0;   ///< forward and backward of one micro-batch
  double memory_gib = 0;  ///< peak memory per GPU
};

/// What the plan's estimate said when it was saved.
struct SavedEstimate {
  double step_time_s = 0;
  double pipeline_time_s = 0;
  double dp_allreduce_s = 0;
  double embedding_allreduce_s = 0;
  double price_per_step_usd = 0;
  double train_cost_usd = 0;
  double iterations = 0;          ///< training steps the cost prices
  double peak_memory_gib = 0;     ///< the largest per-GPU peak of any stage
  bool out_of_memory = false;
};

/// A plan file's contents.
struct PlanFile {
  std::string source;        ///< the file it was loaded from (empty when made in memory)
  // The specs, as the search was given them.
  std::string model;         ///< model preset or YAML path
  std::string cluster;       ///< cluster preset or YAML path
  std::string profile_dir;   ///< "" for the shipped profiles
  std::string policy;        ///< fasop or analytic
  /// analytic: the communication switches (fields overlap_dp_allreduce and execution_fields()).
  Execution execution;
  std::string stack;            ///< analytic: the training stack its memory is priced for ("": megatron)
  std::string memory_headroom;  ///< analytic: what each GPU keeps free ("5%", "4" GiB; "": the default)
  /// Nodes of each node type the plan runs on (the cluster shape), every node type listed.
  std::vector<std::pair<std::string, int>> nodes;
  // The plan.
  int global_batch = 0;
  PlanKey key;                          ///< key.node_order indexes the cluster's node types
  std::vector<std::string> node_order;  ///< the same order by node type name, as written
  std::vector<int> partition;           ///< units per stage
  std::vector<PlanStage> stages;
  SavedEstimate estimate;

  /// Nodes the plan uses (the length of its node order).
  int num_nodes() const { return static_cast<int>(node_order.size()); }
};

/// The YAML text of a plan file; numbers keep 17 digits so that loading gives back the same doubles.
std::string plan_file_yaml(const PlanFile& plan);

/// Parses a plan file; throws SpecError naming `source`, the field and the fix. key.node_order
/// stays empty: node type names are resolved against the cluster when the plan is loaded.
PlanFile parse_plan_file(const std::string& yaml_text, const std::string& source);

}  // namespace fasop
