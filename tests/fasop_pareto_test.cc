// The --pareto search: FASOP's pareto table reproduced (when given), the front of hand-made
// candidate sets, constraints, and independence from the thread count.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <map>
#include <sstream>

#include "fasop_check.h"
#include "report/fasop_csv.h"
#include "search/pareto_search.h"
#include "test_support.h"

using namespace fasop;
using fasop::testing::FasopRow;
using fasop::testing::Presets;

namespace {

/// The shape of a FASOP row: its counts of each node type.
NodeCounts row_counts(const FasopRow& row, const ClusterSpec& inventory) {
  NodeCounts counts(inventory.node_types.size(), 0);
  for (const std::string& name : row.placement) ++counts[inventory.find_node_type(name)];
  return counts;
}

std::string describe(const CandidateResult& r, const ClusterSpec& inventory) {
  FasopRow row;
  row.mbs = r.plan.key.mbs, row.tp = r.plan.key.tp, row.dp = r.plan.key.dp, row.pp = r.plan.key.pp;
  for (int t : r.plan.key.node_order) row.placement.push_back(inventory.node_types[t].name);
  return fasop::testing::describe(row);
}

/// Our pareto search over `limits` of the FASOP pareto inventory, every candidate in order.
std::vector<CandidateResult> pareto_candidates(const Presets& p, NodeCounts limits, int threads,
                                               PlanConstraints constraints = {}) {
  ParetoInput input;
  input.search = p.input;
  input.search.threads = threads;
  input.limits = std::move(limits);
  input.constraints = constraints;
  CandidateCollector all;
  run_pareto_search(input, all);
  return all.all();
}

}  // namespace

// FASOP's pareto table (gpt2_heterogeneous_pareto.csv, 31,362 rows, ~10 minutes of FASOP) is
// not shipped; a developer with FASOP's output points FASOP_PARETO_TABLE at it.
TEST_CASE("FASOP's pareto table is reproduced and its front beaten when given", "[fasop][pareto]") {
  const char* path = std::getenv("FASOP_PARETO_TABLE");
  if (!path) return;
  Presets p("gpt2xl", "fasop-pareto");
  std::vector<FasopRow> rows = fasop::testing::read_fasop_table(path);
  std::vector<std::string> problems;
  std::map<NodeCounts, ClusterSpec> shapes;
  for (const FasopRow& row : rows) {
    NodeCounts counts = row_counts(row, p.cluster);
    auto it = shapes.emplace(counts, shape_cluster(p.cluster, counts)).first;
    SearchInput input = p.input;
    input.cluster = &it->second;
    fasop::testing::check_estimate_at_fasop_partition(input, row, problems);
  }
  // Our search: the same candidates, none slower, and FASOP's front dominated or matched.
  std::vector<CandidateResult> ours = pareto_candidates(p, inventory_limits(p.cluster), 0);
  std::map<std::string, const CandidateResult*> by_key;
  for (const CandidateResult& r : ours) by_key[describe(r, p.cluster)] = &r;
  if (ours.size() != rows.size() || by_key.size() != rows.size())
    problems.push_back("ours " + std::to_string(ours.size()) + " candidates, FASOP " + std::to_string(rows.size()));
  std::vector<CostTimePoint> theirs;
  for (const FasopRow& row : rows) {
    theirs.push_back({row.step_s, row.train_cost});
    auto it = by_key.find(fasop::testing::describe(row));
    if (it == by_key.end()) problems.push_back(fasop::testing::describe(row) + ": missing");
    else if (it->second->estimate.step_time_s > row.step_s) problems.push_back(fasop::testing::describe(row) + ": slower");
  }
  std::vector<CostTimePoint> mine;
  for (const CandidateResult& r : ours) mine.push_back({r.estimate.step_time_s, r.estimate.train_cost_usd});
  std::vector<size_t> our_front = pareto_front(mine);
  for (size_t i : pareto_front(theirs)) {
    bool beaten = false;
    for (size_t j : our_front)
      beaten = beaten || (mine[j].step_time_s <= theirs[i].step_time_s && mine[j].cost_usd <= theirs[i].cost_usd * (1 + 1e-9));
    if (!beaten) problems.push_back(fasop::testing::describe(rows[i]) + ": FASOP front point not dominated");
  }
  for (size_t i = 0; i < problems.size() && i < 20; ++i) UNSCOPED_INFO(problems[i]);
  INFO(problems.size() << " problems");
  CHECK(problems.empty());
}
