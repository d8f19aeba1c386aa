#include "report/fasop_csv.h"

#include <algorithm>
#include <cctype>

#include "report/atomic_file.h"
#include "report/number_format.h"

namespace fasop {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

const char* python_bool(bool value) { return value ? "True" : "False"; }

}  // namespace

namespace {

void append_placement(std::string& out, const ClusterSpec& cluster, const std::vector<int>& node_order) {
  out += '[';
  for (size_t i = 0; i < node_order.size(); ++i) {
    out += i ? ", '" : "'";
    out += cluster.node_types[node_order[i]].name;
    out += '\'';
  }
  out += ']';
}

void append_partition(std::string& out, const std::vector<int>& partition) {
  out += '[';
  for (size_t i = 0; i < partition.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(partition[i]);
  }
  out += ']';
}

}  // namespace

std::string placement_text(const ClusterSpec& cluster, const std::vector<int>& node_order) {
  std::string text;
  append_placement(text, cluster, node_order);
  return text;
}

std::string partition_text(const std::vector<int>& partition) {
  std::string text;
  append_partition(text, partition);
  return text;
}

std::string fasop_csv_header(const ClusterSpec& cluster, bool plan_dims) {
  std::string header = "mbs,tp,dp,pp,node placement";
  for (const NodeType& type : cluster.node_types) header += ",num_" + lower(type.gpu);
  return header +
         ",partition,estimated time (s/step),pipeline time,DP all-reduce time,"
         "embedding layer all-reduce time,price_per_step,is_oom,oom_gpumem,is_fsdp_oom,"
         "fsdpoom_gpumem,train_cost" + std::string(plan_dims ? ",zero_stage,recompute,stage_dp\n" : "\n");
}

void append_fasop_csv_row(std::string& row, const ClusterSpec& cluster, const CandidateResult& r, bool plan_dims) {
  const PlanKey& k = r.plan.key;
  const PlanEstimate& e = r.estimate;
  auto number = [&row](const std::string& text) { row += text, row += ','; };
  number(std::to_string(k.mbs));
  number(std::to_string(k.tp));
  number(std::to_string(k.dp));
  number(std::to_string(k.pp) + ".0");
  row += '"';
  append_placement(row, cluster, k.node_order);
  row += "\",";
  for (size_t type = 0; type < cluster.node_types.size(); ++type)
    number(std::to_string(std::count(k.node_order.begin(), k.node_order.end(), int(type))));
  row += '"';
  append_partition(row, r.plan.partition);
  row += "\",";
  for (double v : {e.step_time_s, e.pipeline_time_s, e.dp_allreduce_s, e.embedding_allreduce_s, e.price_per_step_usd})
    number(format_double(v));
  number(python_bool(e.memory.is_oom));
  number(format_double(e.memory.oom_gpumem_gib));
  number(python_bool(e.memory.is_zero_oom));
  number(format_double(e.memory.zero_oom_gpumem_gib));
  row += format_double(e.train_cost_usd);
  if (plan_dims) {
    row += ',' + std::to_string(k.zero_stage);
    // Sequence parallelism and virtual stages ride on the recomputation column ("full+sp+v2"),
    // which keeps the columns of the tables FASOP's tools read.
    row += std::string(",") + recompute_name(k.recompute_mode()) + (k.sequence_parallel ? "+sp" : "") +
           (k.virtual_stages > 1 ? "+v" + std::to_string(k.virtual_stages) : "") + ",";
    // Per-stage tp, uneven dp and the speed split ride on the stage_dp column ("[2, 1] tp [1, 4]
    // uneven speed"), which keeps the columns as they were.
    if (!k.stage_dp.empty() || !k.stage_tp.empty() || k.uneven_dp || k.speed_split) {
      row += '"';
      if (!k.stage_dp.empty()) append_partition(row, k.stage_dp);
      if (!k.stage_tp.empty()) {
        row += k.stage_dp.empty() ? "tp " : " tp ";
        append_partition(row, k.stage_tp);
      }
      if (k.uneven_dp) row += k.stage_dp.empty() && k.stage_tp.empty() ? "uneven" : " uneven";
      if (k.speed_split) row += k.stage_dp.empty() && k.stage_tp.empty() && !k.uneven_dp ? "speed" : " speed";
      row += '"';
    }
  }
  row += '\n';
}

std::string fasop_csv_row(const ClusterSpec& cluster, const CandidateResult& r, bool plan_dims) {
  std::string row;
  append_fasop_csv_row(row, cluster, r, plan_dims);
  return row;
}

void write_fasop_csv_file(const std::string& path, const ClusterSpec& cluster, const std::vector<CandidateResult>& results,
                          bool plan_dims) {
  constexpr size_t kFlushBytes = 1 << 20;
  AtomicFileWriter file(path);
  std::string text = fasop_csv_header(cluster, plan_dims);
  for (const CandidateResult& r : results) {
    append_fasop_csv_row(text, cluster, r, plan_dims);
    if (text.size() >= kFlushBytes) file.write(text), text.clear();
  }
  file.write(text);
  file.commit();
}

std::string fasop_csv(const ClusterSpec& cluster, const std::vector<CandidateResult>& results, bool plan_dims) {
  std::string text = fasop_csv_header(cluster, plan_dims);
  for (const CandidateResult& r : results) append_fasop_csv_row(text, cluster, r, plan_dims);
  return text;
}

}  // namespace fasop
