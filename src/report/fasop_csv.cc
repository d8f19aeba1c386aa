#include "report/fasop_csv.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "report/number_format.h"

namespace fasop {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

const char* python_bool(bool value) { return value ? "True" : "False"; }

}  // namespace

std::string placement_text(const ClusterSpec& cluster, const std::vector<int>& node_order) {
  std::string text = "[";
  for (size_t i = 0; i < node_order.size(); ++i)
    text += (i ? ", '" : "'") + cluster.node_types[node_order[i]].name + "'";
  return text + "]";
}

std::string partition_text(const std::vector<int>& partition) {
  std::string text = "[";
  for (size_t i = 0; i < partition.size(); ++i) text += (i ? ", " : "") + std::to_string(partition[i]);
  return text + "]";
}

std::string fasop_csv(const ClusterSpec& cluster, const std::vector<CandidateResult>& results) {
  std::ostringstream out;
  out << "mbs,tp,dp,pp,node placement";
  for (const NodeType& type : cluster.node_types) out << ",num_" << lower(type.gpu);
  out << ",partition,estimated time (s/step),pipeline time,DP all-reduce time,"
         "embedding layer all-reduce time,price_per_step,is_oom,oom_gpumem,is_fsdp_oom,"
         "fsdpoom_gpumem,train_cost\n";
  for (const CandidateResult& r : results) {
    const PlanKey& k = r.plan.key;
    const PlanEstimate& e = r.estimate;
    out << k.mbs << ',' << k.tp << ',' << k.dp << ',' << k.pp << ".0,\""
        << placement_text(cluster, k.node_order) << '"';
    for (size_t type = 0; type < cluster.node_types.size(); ++type)
      out << ',' << std::count(k.node_order.begin(), k.node_order.end(), int(type));
    out << ",\"" << partition_text(r.plan.partition) << "\"," << format_double(e.step_time_s) << ','
        << format_double(e.pipeline_time_s) << ',' << format_double(e.dp_allreduce_s) << ','
        << format_double(e.embedding_allreduce_s) << ',' << format_double(e.price_per_step_usd) << ','
        << python_bool(e.memory.is_oom) << ',' << format_double(e.memory.oom_gpumem_gib) << ','
        << python_bool(e.memory.is_zero_oom) << ',' << format_double(e.memory.zero_oom_gpumem_gib)
        << ',' << format_double(e.train_cost_usd) << '\n';
  }
  return out.str();
}

}  // namespace fasop
