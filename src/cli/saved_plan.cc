#include "cli/saved_plan.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <numeric>

#include "costmodel/make_context.h"
#include "costmodel/parallel_dims_checks.h"
#include "report/atomic_file.h"
#include "search/cluster_shapes.h"
#include "specs/precision.h"
#include "specs/spec_error.h"
#include "specs/spec_store.h"

namespace fasop {
namespace {

namespace fs = std::filesystem;

/// A spec reference that names a file, relative to the working directory, is also looked for
/// beside the plan file (a plan saved next to its specs travels with them), then in `spec_dir`.
std::string resolve_beside(const std::string& ref, const std::string& plan_path, const std::string& spec_dir) {
  const bool is_file = ref.find('/') != std::string::npos || (ref.size() > 5 && ref.rfind(".yaml") == ref.size() - 5);
  if (!is_file || fs::path(ref).is_absolute() || fs::exists(ref)) return ref;
  for (const fs::path& dir : {fs::path(plan_path).parent_path(), fs::path(spec_dir)})
    if (!dir.empty() && fs::exists(dir / ref)) return (dir / ref).string();
  return ref;
}

/// The node counts the plan runs on, by the cluster's node types; throws where the cluster
/// cannot give them.
std::vector<int> plan_node_counts(const PlanFile& plan, const ClusterSpec& cluster) {
  std::vector<int> counts(cluster.node_types.size(), 0);
  for (const auto& [name, count] : plan.nodes) {
    int type = cluster.find_node_type(name);
    if (type < 0) {
      if (count == 0) continue;
      throw SpecError(plan.source + ": field 'nodes': node type '" + name + "' is not in cluster '" + cluster.name +
                      "' (" + cluster.source + "); restore it there, or plan again with `fasop-cpp search`");
    }
    if (count > cluster.node_count(type))
      throw SpecError(plan.source + ": field 'nodes': the plan runs on " + std::to_string(count) + " nodes of type '" +
                      name + "' but cluster '" + cluster.name + "' (" + cluster.source + ") has " +
                      std::to_string(cluster.node_count(type)) + "; add nodes there, or plan again with `fasop-cpp search`");
    counts[type] = count;
  }
  return counts;
}

/// The plan's node order as indices of the cluster's node types.
std::vector<int> node_order_indices(const PlanFile& plan, const ClusterSpec& cluster, const std::vector<int>& counts) {
  std::vector<int> order, used(counts.size(), 0);
  for (const std::string& name : plan.node_order) {
    int type = cluster.find_node_type(name);
    if (type < 0)
      throw SpecError(plan.source + ": field 'node_order': node type '" + name + "' is not in cluster '" + cluster.name +
                      "' (" + cluster.source + ")");
    if (++used[type] > counts[type])
      throw SpecError(plan.source + ": field 'node_order': more '" + name + "' nodes than 'nodes' gives them (" +
                      std::to_string(counts[type]) + ")");
    order.push_back(type);
  }
  return order;
}

/// Throws unless the model still has the units and batch the plan was made for.
void check_model_fits_plan(const PlanFile& plan, const ModelSpec& model) {
  const int units = std::accumulate(plan.partition.begin(), plan.partition.end(), 0);
  if (units != model.num_units())
    throw SpecError(plan.source + ": field 'partition': covers " + std::to_string(units) + " units but model '" +
                    model.name + "' (" + model.source + ") has " + std::to_string(model.num_units()) +
                    "; the model changed since the plan was saved: plan again with `fasop-cpp search`");
  if (plan.global_batch != model.global_batch)
    throw SpecError(plan.source + ": field 'global_batch': the plan was made for " + std::to_string(plan.global_batch) +
                    " but model '" + model.name + "' (" + model.source + ") now says " +
                    std::to_string(model.global_batch) + "; plan again with `fasop-cpp search`");
}

/// The plan file keeps 17 digits, so an unchanged estimate reads back bit for bit.
bool differs(double saved, double fresh) { return saved != fresh; }

}  // namespace

PlanFile make_plan_file(const PlannerOptions& options, const PlannerSetup& setup, const CandidateResult& result) {
  PlanFile plan;
  plan.model = options.model;
  plan.cluster = setup.cluster_ref;
  plan.profile_dir = options.profile_dir;
  plan.policy = setup.policy_name;
  plan.execution = execution_of(options);
  if (setup.policy_name == "analytic") {
    plan.stack = options.stack == "megatron" ? "" : options.stack;
    plan.memory_headroom = options.memory_headroom;
  }
  const PlanKey& key = result.plan.key;
  // Only where it has all-to-alls to hide.
  plan.execution.overlap_moe_expert_parallel_comm = options.ep_comm_overlap && key.ep > 1;
  // Only where the plan's precision has bf16 gradients to reduce (a search may try fp16 too).
  const std::string trained = key.precision.empty() ? setup.model.dtype : key.precision;
  plan.execution.grad_reduce_in_bf16 = setup.model.grad_reduce_in_bf16 && has_bf16_gradients(trained);
  for (size_t type = 0; type < setup.cluster.node_types.size(); ++type)
    plan.nodes.emplace_back(setup.cluster.node_types[type].name,
                            static_cast<int>(std::count(key.node_order.begin(), key.node_order.end(), int(type))));
  plan.global_batch = setup.model.global_batch;
  plan.key = key;
  for (int type : key.node_order) plan.node_order.push_back(setup.cluster.node_types[type].name);
  plan.partition = result.plan.partition;
  const PlanEstimate& e = result.estimate;
  for (size_t s = 0; s < e.stages.size(); ++s) {
    const StageReport& r = e.stages[s];
    PlanStage stage;
    stage.first_unit = r.first_unit;
    stage.num_units = r.num_units;
    stage.node_type = setup.cluster.node_types[r.node_type].name;
    stage.gpu = setup.cluster.node_types[r.node_type].gpu;
    stage.dp = key.dp_of_stage(s);
    stage.compute_s = r.compute_s;
    stage.memory_gib = r.memory.gib;
    plan.stages.push_back(stage);
  }
  plan.estimate.step_time_s = e.step_time_s;
  plan.estimate.pipeline_time_s = e.pipeline_time_s;
  plan.estimate.dp_allreduce_s = e.dp_allreduce_s;
  plan.estimate.embedding_allreduce_s = e.embedding_allreduce_s;
  plan.estimate.price_per_step_usd = e.price_per_step_usd;
  plan.estimate.train_cost_usd = e.train_cost_usd;
  plan.estimate.iterations = setup.input.iterations;
  plan.estimate.peak_memory_gib = e.memory.oom_gpumem_gib;
  plan.estimate.out_of_memory = e.memory.is_oom;
  return plan;
}

LoadedPlan load_plan(const std::string& path, const PlanOverrides& overrides) {
  DiskSource disk;
  std::optional<std::string> text = disk.read(path);
  if (!text) throw SpecError("--plan: cannot read '" + path + "'; give a plan file that `search --save-plan` wrote");
  LoadedPlan loaded;
  loaded.file = parse_plan_file(*text, path);
  PlanFile& plan = loaded.file;
  PlannerOptions& options = loaded.options;
  options.model = resolve_beside(plan.model, path, overrides.spec_dir);
  options.cluster = overrides.cluster.empty() ? resolve_beside(plan.cluster, path, overrides.spec_dir) : overrides.cluster;
  options.profile_dir = overrides.profile_dir.empty() ? plan.profile_dir : overrides.profile_dir;
  options.policy = plan.policy;
  set_execution_flags(options, plan.execution);
  // The plan's bf16 gradients are checked against its own precision below, once the model
  // trains in it, not against the model file's dtype as --grad-reduce-in-bf16 is.
  options.grad_reduce_in_bf16 = false;
  options.stack = plan.stack;
  options.memory_headroom = plan.memory_headroom;
  options.iterations = plan.estimate.iterations;
  options.quiet = true;
  // A plan with context or expert parallelism or a precision of its own was timed from the GPUs'
  // data: no measured profile has them.
  options.analytic_profiles = needs_analytic_layers(plan.key);
  try {
    loaded.setup = PlannerSetup::load_specs(options);
  } catch (const SpecError& e) {
    throw SpecError(path + ": the plan's specs do not load: " + e.what());
  }
  PlannerSetup& setup = *loaded.setup;
  if (!plan.key.precision.empty()) setup.model.dtype = plan.key.precision;
  if (plan.execution.grad_reduce_in_bf16 && !has_bf16_gradients(setup.model.dtype))
    throw SpecError(path + ": field 'grad_reduce_in_bf16': the plan " + no_bf16_gradients_text(setup.model.dtype) +
                    "; remove it");
  setup.model.grad_reduce_in_bf16 = plan.execution.grad_reduce_in_bf16;
  check_model_fits_plan(plan, setup.model);
  std::vector<int> counts = plan_node_counts(plan, setup.cluster);
  std::vector<int> order = node_order_indices(plan, setup.cluster, counts);
  setup.cluster = shape_cluster(setup.cluster, counts);
  plan.key.node_order = order;
  try {
    validate_plan_key(setup.model, setup.cluster, plan.key);
    if (std::string fault = ep_overlap_fault(plan.key); !fault.empty() && plan.execution.overlap_moe_expert_parallel_comm) throw SpecError(fault);
    if (std::string fault = moe_dispatcher_fault(setup.model, setup.cluster, plan.key);
        !fault.empty())
      throw SpecError(fault);
    if (std::string fault = cuda_graph_fault(setup.model); !fault.empty() && plan.execution.cuda_graphs)
      throw SpecError(fault);
  } catch (const SpecError& e) {
    throw SpecError(path + ": the plan no longer fits its specs: " + e.what());
  }
  loaded.result = estimate_again(loaded);
  return loaded;
}

CandidateResult estimate_again(LoadedPlan& loaded) {
  PlannerSetup& setup = *loaded.setup;
  std::vector<int> counts(setup.cluster.node_types.size());
  for (size_t type = 0; type < counts.size(); ++type) counts[type] = setup.cluster.node_count(static_cast<int>(type));
  setup.load_profiles(loaded.options, counts, &loaded.file.key);
  // FASOP's policy reports some partitions with the stage times FASOP's greedy had before its
  // last move (estimate's default); the saved figures were made that way, and so are these.
  const PartitionTiming timing =
      loaded.file.policy == "fasop" ? PartitionTiming::kAsFasopReports : PartitionTiming::kExact;
  return evaluate_candidate(setup.input, loaded.file.key, loaded.file.partition, timing);
}

void save_plan(const std::string& path, const PlanFile& plan) { write_file_atomically(path, plan_file_yaml(plan)); }

std::string estimate_change(const PlanFile& plan, const CandidateResult& fresh) {
  const PlanEstimate& e = fresh.estimate;
  if (!differs(plan.estimate.step_time_s, e.step_time_s) && !differs(plan.estimate.train_cost_usd, e.train_cost_usd) &&
      !differs(plan.estimate.peak_memory_gib, e.memory.oom_gpumem_gib))
    return "";
  char line[300];
  std::snprintf(line, sizeof line,
                "note: the estimate differs from the one saved in %s: step %.6g s -> %.6g s, cost $%.6g -> $%.6g, "
                "peak memory %.4g -> %.4g GiB (the specs or profiles changed)\n",
                plan.source.c_str(), plan.estimate.step_time_s, e.step_time_s, plan.estimate.train_cost_usd,
                e.train_cost_usd, plan.estimate.peak_memory_gib, e.memory.oom_gpumem_gib);
  return line;
}

}  // namespace fasop
