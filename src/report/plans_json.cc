#include "report/plans_json.h"

#include <sstream>

#include "costmodel/step_breakdown.h"
#include "report/fasop_csv.h"
#include "report/json_text.h"
#include "report/memory_report.h"
#include "report/number_format.h"
#include "report/plan_table.h"
#include "search/cluster_shapes.h"

namespace fasop {
namespace {

/// "no", "zero" (fits only with ZeRO-3 sharding) or "yes", as the text table's OOM column.
const char* oom_verdict(const MemoryVerdict& memory) {
  return memory.is_oom ? (memory.is_zero_oom ? "yes" : "zero") : "no";
}

/// {"p4d.24xlarge": 1, "g5.24xlarge": 7}: the nodes of each type the plan runs on.
std::string node_counts_json(const ClusterSpec& cluster, const std::vector<int>& node_order) {
  const NodeCounts counts = counts_of(cluster, node_order);
  std::string out = "{";
  bool first = true;
  for (size_t t = 0; t < counts.size(); ++t) {
    if (counts[t] == 0) continue;
    out += (first ? "" : ", ") + json_string(cluster.node_types[t].name) + ": " + std::to_string(counts[t]);
    first = false;
  }
  return out + "}";
}

/// The estimate's detail where it has it: the step's parts and terms (PlanEstimate::breakdown),
/// the price's parts across zones, each stage, and the worst stage's memory terms.
std::string plan_detail_json(const ClusterSpec& cluster, const PlanEstimate& e) {
  auto num = [](double v) { return format_double(v); };
  std::ostringstream out;
  out << ", \"pipeline_time_s\": " << num(e.pipeline_time_s) << ", \"dp_allreduce_s\": " << num(e.dp_allreduce_s)
      << ", \"embedding_allreduce_s\": " << num(e.embedding_allreduce_s)
      << ", \"zero3_peak_memory_gib\": " << num(e.memory.zero_oom_gpumem_gib);
  if (cluster.multi_zone())
    out << ", \"node_price_per_step_usd\": " << num(e.node_price_per_step_usd)
        << ", \"egress_usd_per_step\": " << num(e.egress_usd_per_step);
  out << ", \"terms_s\": {";
  const char* separator = "";
  for (const StepTermField& term : step_term_fields()) {
    out << separator << json_string(term.name) << ": " << num(e.breakdown.*term.seconds);
    separator = ", ";
  }
  out << "}, \"stages\": [";
  for (size_t s = 0; s < e.stages.size(); ++s) {
    const StageReport& st = e.stages[s];
    out << (s ? ", " : "") << "{\"first_unit\": " << st.first_unit << ", \"units\": " << st.num_units
        << ", \"gpu\": " << json_string(cluster.node_types[st.node_type].gpu) << ", \"compute_s\": " << num(st.compute_s)
        << ", \"end_s\": " << num(st.end_s) << ", \"dp_allreduce_s\": " << num(st.dp_allreduce_s)
        << ", \"memory_gib\": " << num(st.memory.gib) << ", \"zero3_memory_gib\": " << num(st.memory.zero_gib)
        << ", \"memory_limit_gib\": " << num(st.memory.limit_gib) << "}";
  }
  out << "]" << memory_breakdown_json(e);
  return out.str();
}

std::string plan_json(const ClusterSpec& cluster, const CandidateResult& r, size_t rank, bool detail) {
  const PlanKey& k = r.plan.key;
  const PlanEstimate& e = r.estimate;
  std::ostringstream out;
  out << "{\"rank\": " << rank << ", \"step_time_s\": " << format_double(e.step_time_s)
      << ", \"price_per_step_usd\": " << format_double(e.price_per_step_usd)
      << ", \"train_cost_usd\": " << format_double(e.train_cost_usd) << ", \"oom\": \"" << oom_verdict(e.memory)
      << "\", \"peak_memory_gib\": " << format_double(e.memory.oom_gpumem_gib);
  if (e.memory.capacity_gib > 0)
    out << ", \"gpu_memory_gib\": " << format_double(e.memory.capacity_gib)
        << ", \"free_memory_gib\": " << format_double(e.memory.free_gib)
        << ", \"memory_headroom_gib\": " << format_double(e.memory.headroom_gib);
  out << ", \"mbs\": " << k.mbs
      << ", \"tp\": " << k.tp << ", \"dp\": " << k.dp << ", \"pp\": " << k.pp << context_expert_json(k)
      << ", \"zero_stage\": " << k.zero_stage
      << ", \"recompute\": \"" << (k.recompute ? "full" : k.selective_recompute ? "selective" : "none") << "\"";
  if (k.names_recompute_modules()) {
    out << ", \"recompute_modules\": [";
    const std::vector<std::string> names = recompute_module_names(k.recompute_modules);
    for (size_t i = 0; i < names.size(); ++i) out << (i ? ", " : "") << "\"" << names[i] << "\"";
    out << "]";
  }
  if (k.virtual_stages > 1) out << ", \"virtual_stages\": " << k.virtual_stages;
  if (k.sequence_parallel) out << ", \"sequence_parallel\": true";
  if (!k.stage_dp.empty()) out << ", \"stage_dp\": " << partition_text(k.stage_dp);
  if (!k.stage_tp.empty()) out << ", \"stage_tp\": " << partition_text(k.stage_tp);
  if (k.uneven_dp) out << ", \"uneven_dp\": true";
  if (k.speed_split) out << ", \"speed_split\": true";
  out << ", \"nodes\": " << node_counts_json(cluster, k.node_order) << ", \"placement\": "
      << json_string(placement_runs(cluster, k.node_order)) << ", \"partition\": " << partition_text(r.plan.partition)
      << (detail ? plan_detail_json(cluster, e) : "") << "}";
  return out.str();
}

}  // namespace

std::string search_json(const SearchJsonHeader& header, const ClusterSpec& cluster,
                        const std::vector<CandidateResult>& ranked, size_t count) {
  std::ostringstream out;
  out << "{\"model\": " << json_string(header.model) << ", \"cluster\": " << json_string(header.cluster)
      << ", \"candidates\": " << header.candidates << ", \"ranking\": " << json_string(header.ranking)
      << ", \"files\": [";
  for (size_t i = 0; i < header.files.size(); ++i) out << (i ? ", " : "") << json_string(header.files[i]);
  out << "],\n \"plans\": [";
  for (size_t i = 0; i < ranked.size() && i < count; ++i)
    out << (i ? ",\n  " : "\n  ") << plan_json(cluster, ranked[i], i + 1, false);
  out << "\n]}\n";
  return out.str();
}

std::string estimate_json(const ModelSpec& model, const ClusterSpec& cluster, const CandidateResult& result) {
  return "{\"model\": " + json_string(model.name) + ", \"cluster\": " + json_string(cluster.name) +
         ", \"candidates\": 1, \"ranking\": \"as given\", \"files\": [],\n \"plans\": [\n  " +
         plan_json(cluster, result, 1, true) + "\n]}\n";
}

}  // namespace fasop
