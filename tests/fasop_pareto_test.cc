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
  if (!path) return fasop::testing::report_skipped("FASOP_PARETO_TABLE is not set: FASOP's pareto table is not shipped");
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

TEST_CASE("rows of FASOP's pareto table are reproduced on their cluster shapes", "[fasop][pareto]") {
  Presets p("gpt2xl", "fasop-pareto");
  std::vector<FasopRow> rows = fasop::testing::read_fasop_table(std::string(FASOP_SOURCE_DIR) +
                                                                "/tests/data/fasop/gpt2_heterogeneous_pareto_rows.csv");
  REQUIRE(rows.size() == 6);
  std::vector<std::string> problems;
  for (const FasopRow& row : rows) {
    ClusterSpec shape = shape_cluster(p.cluster, row_counts(row, p.cluster));
    SearchInput input = p.input;
    input.cluster = &shape;
    fasop::testing::check_estimate_at_fasop_partition(input, row, problems);
  }
  for (const std::string& problem : problems) UNSCOPED_INFO(problem);
  CHECK(problems.empty());
}

TEST_CASE("the front of a hand-made candidate set", "[pareto]") {
  // (step s, cost $): 0 and 4 are equal (the first is listed), 1 is beaten by 0 on both,
  // 2 costs as much as 3 but is slower, 5 is the fastest, 6 the cheapest.
  std::vector<CostTimePoint> points = {{2.0, 100}, {2.5, 120}, {1.5, 150}, {1.2, 150},
                                       {2.0, 100}, {0.5, 400}, {4.0, 60}, {1.0, 300}};
  CHECK(pareto_front(points) == std::vector<size_t>{6, 0, 3, 7, 5});
  CHECK(pareto_front({}).empty());
  CHECK(pareto_front({{1.0, 1.0}}) == std::vector<size_t>{0});
}

TEST_CASE("constraints filter the front", "[pareto]") {
  auto candidate = [](double step_s, double cost, bool oom) {
    CandidateResult r;
    r.estimate.step_time_s = step_s;
    r.estimate.train_cost_usd = cost;
    r.estimate.memory.is_oom = oom;
    return r;
  };
  std::vector<CandidateResult> all = {candidate(4.0, 60, true), candidate(2.0, 100, false),
                                      candidate(1.2, 150, false), candidate(1.0, 300, true),
                                      candidate(0.5, 400, false)};
  auto front_of = [&](PlanConstraints constraints, size_t split) {
    // Fed in two chunks, as the search does: the result must not depend on the split.
    FrontTracker tracker(constraints);
    std::vector<CandidateResult> first(all.begin(), all.begin() + split), second(all.begin() + split, all.end());
    tracker.consume(first, consecutive_indices(0, first.size()));
    tracker.consume(second, consecutive_indices(split, second.size()));
    std::vector<double> steps;
    for (const CandidateResult& r : tracker.front()) steps.push_back(r.estimate.step_time_s);
    return steps;
  };
  for (size_t split : {0, 2, 5}) {
    CHECK(front_of({}, split) == std::vector<double>{4.0, 2.0, 1.2, 1.0, 0.5});
    PlanConstraints fits;
    fits.exclude_oom = true;
    CHECK(front_of(fits, split) == std::vector<double>{2.0, 1.2, 0.5});
    PlanConstraints budget;
    budget.max_cost_usd = 200;
    budget.max_step_time_s = 3.0;
    CHECK(front_of(budget, split) == std::vector<double>{2.0, 1.2});
    PlanConstraints impossible;
    impossible.max_step_time_s = 0.1;
    CHECK(front_of(impossible, split).empty());
  }
}

TEST_CASE("cluster shapes enumerate FASOP's order within the limits", "[pareto]") {
  CHECK(cluster_shapes({1, 2}) ==
        std::vector<NodeCounts>{{0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}});
  CHECK(cluster_shapes({8, 8}).size() == 80);  // FASOP's 81 combinations less the empty one
  Presets p("gpt2xl", "fasop-pareto");
  ClusterSpec shape = shape_cluster(p.cluster, {2, 3});
  CHECK(shape.nodes == std::vector<int>{0, 0, 1, 1, 1});  // A100 nodes first, as FASOP lists them
  CHECK(shape_label(p.cluster, {2, 3}) == "2xA100+3xA10");
  CHECK(shape_label(p.cluster, {0, 3}) == "3xA10");
}

TEST_CASE("the pareto search does not depend on threads or memory mode, and matches the full partitioner's front",
          "[pareto]") {
  Presets p("gpt2xl", "fasop-pareto");
  const NodeCounts limits = {3, 3};
  std::vector<CandidateResult> one = pareto_candidates(p, limits, 1);
  std::vector<CandidateResult> two = pareto_candidates(p, limits, 2);
  REQUIRE(one.size() == 2598);  // shapes x placements x FASOP's layouts, counted by hand in Python
  CHECK(fasop_csv(p.cluster, one) == fasop_csv(p.cluster, two));
  // Streaming (hold limit below the candidate count) computes the same candidates.
  ParetoInput streamed;
  streamed.search = p.input;
  streamed.limits = limits;
  streamed.hold_limit = 100;
  CandidateCollector collected;
  run_pareto_search(streamed, collected);
  CHECK(fasop_csv(p.cluster, collected.all()) == fasop_csv(p.cluster, one));
  // The full partitioner on every candidate gives the same front: the candidates left with
  // their quick partition could not have reached it.
  std::vector<CostTimePoint> quick_then_full, full;
  std::map<NodeCounts, ClusterSpec> shapes;
  for (const CandidateResult& r : one) {
    quick_then_full.push_back({r.estimate.step_time_s, r.estimate.train_cost_usd});
    NodeCounts counts = counts_of(p.cluster, r.plan.key.node_order);
    auto it = shapes.emplace(counts, shape_cluster(p.cluster, counts)).first;
    SearchInput input = p.input;
    input.cluster = &it->second;
    CandidateResult best = evaluate_candidate(input, r.plan.key);
    full.push_back({best.estimate.step_time_s, best.estimate.train_cost_usd});
    CHECK(r.estimate.step_time_s >= best.estimate.step_time_s);
  }
  std::vector<size_t> a = pareto_front(quick_then_full), b = pareto_front(full);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(quick_then_full[a[i]].step_time_s == full[b[i]].step_time_s);
    CHECK(quick_then_full[a[i]].cost_usd == full[b[i]].cost_usd);
  }
}
