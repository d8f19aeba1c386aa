#include "report/fasop_csv.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "report/atomic_file.h"
#include "report/number_format.h"

namespace fasop {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

const char* python_bool(bool value) { return value ? "True" : "False"; }

/// `cell` and a comma, in double quotes where it holds a comma (pandas' minimal quoting).
void append_quoted_if_needed(std::string& row, const std::string& cell) {
  const bool quote = cell.find(',') != std::string::npos;
  if (quote) row += '"';
  row += cell;
  row += quote ? "\"," : ",";
}

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

std::string placement_runs(const ClusterSpec& cluster, const std::vector<int>& order) {
  std::string text;
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j < order.size() && order[j] == order[i]) ++j;
    text += (text.empty() ? "" : ",") + std::to_string(j - i) + "x" + cluster.node_types[order[i]].name;
    i = j;
  }
  return text;
}

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

std::string torch_tensor_text(double value) {
  // torch's _Formatter on one float32 element: whole values print as "10.", and scientific
  // notation takes over above 1e8 (or, for fractions, below 1e-4).
  const double v = static_cast<float>(value);
  if (std::isnan(v)) return "tensor([nan])";
  if (std::isinf(v)) return v > 0 ? "tensor([inf])" : "tensor([-inf])";
  const double magnitude = std::fabs(v);
  const bool whole = v == std::ceil(v);
  const bool scientific = magnitude > 1e8 || (!whole && magnitude < 1e-4);
  char buffer[64];
  if (scientific) std::snprintf(buffer, sizeof buffer, "tensor([%.4e])", v);
  else if (whole) std::snprintf(buffer, sizeof buffer, "tensor([%.0f.])", v);
  else std::snprintf(buffer, sizeof buffer, "tensor([%.4f])", v);
  return buffer;
}

std::string fasop_csv_header(const ClusterSpec& cluster, const CsvStyle& style) {
  std::string header = "mbs,tp,dp,pp,node placement";
  for (const NodeType& type : cluster.node_types) header += ",num_" + lower(type.gpu);
  return header +
         ",partition,estimated time (s/step),pipeline time,DP all-reduce time,"
         "embedding layer all-reduce time,price_per_step,is_oom,oom_gpumem,is_fsdp_oom,"
         "fsdpoom_gpumem,train_cost" + std::string(style.plan_dims ? ",zero_stage,recompute,stage_dp,cp,ep,precision\n" : "\n");
}

void append_fasop_csv_row(std::string& row, const ClusterSpec& cluster, const CandidateResult& r, const CsvStyle& style) {
  const PlanKey& k = r.plan.key;
  const PlanEstimate& e = r.estimate;
  auto number = [&row](const std::string& text) { row += text, row += ','; };
  number(std::to_string(k.mbs));
  number(std::to_string(k.tp));
  number(std::to_string(k.dp));
  number(std::to_string(k.pp) + ".0");
  append_quoted_if_needed(row, k.node_order.size() > kMostNodesListed ? placement_runs(cluster, k.node_order)
                                                                     : placement_text(cluster, k.node_order));
  for (size_t type = 0; type < cluster.node_types.size(); ++type)
    number(std::to_string(std::count(k.node_order.begin(), k.node_order.end(), int(type))));
  append_quoted_if_needed(row, partition_text(r.plan.partition));
  for (double v : {e.step_time_s, e.pipeline_time_s, e.dp_allreduce_s, e.embedding_allreduce_s, e.price_per_step_usd})
    number(format_double(v));
  auto memory = [&style](double gib) { return style.torch_cells ? torch_tensor_text(gib) : format_double(gib); };
  number(python_bool(e.memory.is_oom));
  number(memory(e.memory.oom_gpumem_gib));
  number(python_bool(e.memory.is_zero_oom));
  number(memory(e.memory.zero_oom_gpumem_gib));
  row += format_double(e.train_cost_usd);
  if (style.plan_dims) {
    row += ',' + std::to_string(k.zero_stage);
    // Sequence parallelism and virtual stages ride on the recomputation column ("full+sp+v2"),
    // which keeps the columns of the tables FASOP's tools read.
    row += std::string(",") + recompute_text(k) + (k.sequence_parallel ? "+sp" : "") +
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
    // A token dispatcher other than alltoall rides on the ep column ("16+hybridep").
    row += ',' + std::to_string(k.cp) + ',' + std::to_string(k.ep) +
           (k.moe_dispatcher == MoeDispatcher::kAlltoall ? "" : std::string("+") + moe_dispatcher_name(k.moe_dispatcher)) +
           ',' + (k.precision.empty() ? style.model_dtype : k.precision);
  }
  row += '\n';
}

std::string fasop_csv_row(const ClusterSpec& cluster, const CandidateResult& r, const CsvStyle& style) {
  std::string row;
  append_fasop_csv_row(row, cluster, r, style);
  return row;
}

size_t write_fasop_csv_file(const std::string& path, const ClusterSpec& cluster, const std::vector<CandidateResult>& results,
                            const CsvStyle& style, size_t rows) {
  constexpr size_t kFlushBytes = 1 << 20;
  AtomicFileWriter file(path);
  std::string text = fasop_csv_header(cluster, style);
  size_t written = 0;
  const size_t count = rows == 0 ? results.size() : std::min(rows, results.size());
  for (size_t i = 0; i < count; ++i) {
    append_fasop_csv_row(text, cluster, results[i], style);
    if (text.size() >= kFlushBytes) file.write(text), written += text.size(), text.clear();
  }
  file.write(text);
  written += text.size();
  file.commit();
  return written;
}

std::string fasop_csv(const ClusterSpec& cluster, const std::vector<CandidateResult>& results, const CsvStyle& style) {
  std::string text = fasop_csv_header(cluster, style);
  for (const CandidateResult& r : results) append_fasop_csv_row(text, cluster, r, style);
  return text;
}

}  // namespace fasop
