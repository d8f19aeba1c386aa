#include "fasop_check.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace fasop::testing {
namespace {

bool close(double ours, double theirs, double rel) {
  return std::fabs(ours - theirs) <= rel * std::max(std::fabs(theirs), 1e-12);
}

}  // namespace

std::string describe(const FasopRow& r) {
  std::ostringstream out;
  out << "mbs " << r.mbs << " tp " << r.tp << " dp " << r.dp << " pp " << r.pp << " placement";
  for (const std::string& n : r.placement) out << ' ' << n;
  return out.str();
}

PlanKey key_of(const FasopRow& row, const ClusterSpec& cluster) {
  PlanKey key{.mbs = row.mbs, .tp = row.tp, .dp = row.dp, .pp = row.pp};
  for (const std::string& name : row.placement) key.node_order.push_back(cluster.find_node_type(name));
  return key;
}

void check_estimate_at_fasop_partition(const SearchInput& input, const FasopRow& row,
                                       std::vector<std::string>& problems) {
  PlanKey key = key_of(row, *input.cluster);
  CandidateResult at_fasop = evaluate_candidate(input, key, row.partition, PartitionTiming::kAsFasopReports);
  const PlanEstimate& e = at_fasop.estimate;
  auto check = [&](const char* what, bool ok, double ours, double theirs) {
    if (ok) return;
    std::ostringstream out;
    out.precision(17);
    out << describe(row) << ": " << what << " ours " << ours << " FASOP " << theirs;
    problems.push_back(out.str());
  };
  check("step time", close(e.step_time_s, row.step_s, 1e-5), e.step_time_s, row.step_s);
  check("pipeline time", close(e.pipeline_time_s, row.pipeline_s, 1e-5), e.pipeline_time_s, row.pipeline_s);
  check("DP all-reduce", close(e.dp_allreduce_s, row.dp_allreduce_s, 1e-5), e.dp_allreduce_s, row.dp_allreduce_s);
  check("embedding all-reduce", close(e.embedding_allreduce_s, row.embedding_allreduce_s, 1e-5),
        e.embedding_allreduce_s, row.embedding_allreduce_s);
  check("price per step", close(e.price_per_step_usd, row.price_per_step, 1e-5), e.price_per_step_usd,
        row.price_per_step);
  check("is_oom", e.memory.is_oom == row.is_oom, e.memory.is_oom, row.is_oom);
  check("is_zero_oom", e.memory.is_zero_oom == row.is_zero_oom, e.memory.is_zero_oom, row.is_zero_oom);
  check("oom_gpumem", std::fabs(e.memory.oom_gpumem_gib - row.oom_gib) <= 1e-3, e.memory.oom_gpumem_gib, row.oom_gib);
  check("zero_oom_gpumem", std::fabs(e.memory.zero_oom_gpumem_gib - row.zero_oom_gib) <= 1e-3,
        e.memory.zero_oom_gpumem_gib, row.zero_oom_gib);
}

}  // namespace fasop::testing
