#include "report/plan_view.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "report/fasop_csv.h"
#include "report/memory_report.h"
#include "report/number_format.h"
#include "report/plan_table.h"
#include "report/step_breakdown_text.h"
#include "specs/batch_split.h"
#include "specs/nvlink_domain.h"
#include "specs/plan_degrees.h"

namespace fasop {
namespace {

/// "g5.24xlarge x7, p4d.24xlarge": the node order with runs of one type counted.
std::string node_order_text(const std::vector<std::string>& order) {
  std::string text;
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j < order.size() && order[j] == order[i]) ++j;
    text += (text.empty() ? "" : ", ") + order[i] + (j - i > 1 ? " x" + std::to_string(j - i) : "");
    i = j;
  }
  return text;
}

/// "NVLink domains: dgx-gb200 x64 in 4 segments of 16 (launch asks Slurm for --segment 16); the
/// network between them\n" for each node type of the plan whose NVLink joins nodes; "" for none.
std::string nvlink_domains_text(const ClusterSpec& cluster, const std::vector<std::string>& order) {
  std::string text;
  for (size_t t = 0; t < cluster.node_types.size(); ++t) {
    const NodeType& type = cluster.node_types[t];
    const int nodes = int(std::count(order.begin(), order.end(), type.name));
    if (type.nvlink_domain_nodes <= 1 || nodes == 0) continue;
    const int segment = nvlink_segment_nodes(type.nvlink_domain_nodes, nodes);
    text += "NVLink domains: " + type.name + " x" + std::to_string(nodes) + " in " + std::to_string(nodes / segment) +
            " segment" + (nodes / segment > 1 ? "s" : "") + " of " + std::to_string(segment) +
            " (launch asks Slurm for --segment " + std::to_string(segment) + "); the network between them\n";
  }
  return text;
}

}  // namespace

std::string stage_layers_text(const ModelSpec& model, int first, int count) {
  const std::vector<int> index = model.segment_layer_indices();
  std::string text;
  for (int u = first; u < first + count;) {
    int v = u;
    while (v < first + count && model.units[v].type == model.units[u].type) ++v;
    std::string part = model.units[u].type;
    if (index[u] >= 0) part += " " + std::to_string(index[u]) + (v - u > 1 ? "-" + std::to_string(index[v - 1]) : "");
    text += (text.empty() ? "" : ", ") + part;
    u = v;
  }
  return text;
}

std::vector<std::string> stage_labels(const ModelSpec& model, const ClusterSpec& cluster, const CandidateResult& result) {
  std::vector<std::string> labels;
  const PlanKey& key = result.plan.key;
  for (size_t s = 0; s < result.estimate.stages.size(); ++s) {
    const StageReport& r = result.estimate.stages[s];
    labels.push_back("stage " + std::to_string(s) + ": " + cluster.node_types[r.node_type].gpu + " x" +
                     std::to_string(key.stage_gpus(static_cast<int>(s))) + ", " + stage_layers_text(model, r.first_unit, r.num_units));
  }
  return labels;
}

std::string plan_view_text(const PlanFile& plan, const ModelSpec& model, const ClusterSpec& cluster,
                           const CandidateResult& result) {
  const PlanKey& key = result.plan.key;
  const PlanEstimate& e = result.estimate;
  std::ostringstream out;
  out << "plan " << plan.source << ": model " << model.name << " on " << cluster.name << " (" << plan.policy
      << " policy)\n"
      << "layout: tp " << key.tp << ", dp " << key.dp << ", pp " << key.pp << context_expert_text(key, ", ")
      << ", micro-batch " << key.mbs << " ("
      << slowest_replica_microbatches(model.global_batch, key) << " micro-batches of the global batch "
      << model.global_batch << (key.uneven_dp ? " on the replica with the most, dp uneven" : "") << "), ZeRO " << key.zero_stage << ", recomputation " << recompute_text(key, ", ")
      << (key.sequence_parallel ? ", sequence parallelism" : "")
      << (plan.execution.grad_reduce_in_bf16 ? ", gradients kept and reduced in bf16" : "")
      << (key.virtual_stages > 1 ? ", " + std::to_string(key.virtual_stages) + " virtual stages a rank" : "")
      << (key.stage_tp.empty() ? "" : ", tp per stage " + partition_text(key.stage_tp))
      << (key.speed_split ? ", micro-batches split by speed where a stage mixes node types" : "") << "\n"
      << "nodes in rank order: " << node_order_text(plan.node_order) << "\n"
      << nvlink_domains_text(cluster, plan.node_order) << "\n";
  char line[400];
  std::snprintf(line, sizeof line, "%-5s %-8s %-5s %4s %12s %12s %10s %9s  %s\n", "stage", "units", "gpu", "gpus",
                "compute_s", "end_s", "mem_gib", "limit_gib", "layers");
  out << line;
  for (size_t s = 0; s < e.stages.size(); ++s) {
    const StageReport& r = e.stages[s];
    std::string units = std::to_string(r.first_unit) + "-" + std::to_string(r.first_unit + r.num_units - 1);
    std::snprintf(line, sizeof line, "%5zu %-8s %-5s %4d %12.6f %12.6f %10.3f %9.2f  %s\n", s, units.c_str(),
                  cluster.node_types[r.node_type].gpu.c_str(), key.stage_gpus(static_cast<int>(s)), r.compute_s, r.end_s, r.memory.gib,
                  r.memory.limit_gib, stage_layers_text(model, r.first_unit, r.num_units).c_str());
    out << line;
  }
  out << "(compute_s: forward and backward of one micro-batch; end_s: the stage's last backward in 1F1B)\n\n"
      << "step time " << fixed(e.step_time_s, 6) << " s: pipeline " << fixed(e.pipeline_time_s, 6)
      << " s, DP all-reduce " << fixed(e.dp_allreduce_s, 6) << " s, embedding sync " << fixed(e.embedding_allreduce_s, 6)
      << " s\n"
      << "  as terms: " << step_breakdown_text(e.breakdown, 4, std::string(12, ' '))
      << "price $" << fixed(e.price_per_step_usd, 6) << " a step, $" << fixed(e.train_cost_usd, 2) << " for "
      << format_iterations(plan.estimate.iterations) << " steps\n"
      << "peak memory " << fixed(e.memory.oom_gpumem_gib, 3) << " GiB a GPU"
      << (e.memory.is_oom ? " (out of memory)" : " (fits)") << "\n";
  const std::string breakdown = memory_breakdown_text(e);
  if (!breakdown.empty()) out << "\n" << breakdown;
  return out.str();
}

}  // namespace fasop
