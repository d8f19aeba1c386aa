// FASOP's own result tables, reproduced: tests/data/fasop/*.csv are FASOP's output at commit
// 93cb38b (see tests/data/fasop/README.md). At FASOP's partition our estimate must match
// FASOP's figures; our search must find, for every layout, a step time no worse than FASOP's.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <map>
#include <sstream>

#include "costmodel/fasop_policy.h"
#include "fasop_check.h"
#include "search/search.h"
#include "specs/spec_store.h"
#include "test_support.h"

using namespace fasop;
using fasop::testing::FasopRow;
using fasop::testing::check_estimate_at_fasop_partition;
using fasop::testing::describe;

namespace {

struct Loaded {
  ModelSpec model;
  ClusterSpec cluster;
  std::vector<ProfileSpec> profiles;
  FasopPolicy policy;
  SearchInput input;
};

std::unique_ptr<Loaded> load(const std::string& model, const std::string& cluster) {
  static DiskSource disk;
  SpecStore store(disk, embedded_presets());
  auto l = std::make_unique<Loaded>();
  l->model = store.load_model(model);
  l->cluster = store.load_cluster(cluster);
  l->profiles.reserve(l->cluster.node_types.size());
  for (const NodeType& type : l->cluster.node_types) {
    l->profiles.push_back(store.load_profile(l->model, type.gpu, ""));
    l->input.profiles.push_back(&l->profiles.back());
  }
  l->input.model = &l->model;
  l->input.cluster = &l->cluster;
  l->input.policy = &l->policy;
  return l;
}

/// Checks every row of one table; returns a description of each mismatch.
std::vector<std::string> check_table(const std::string& table, const std::string& model, const std::string& cluster) {
  std::unique_ptr<Loaded> l = load(model, cluster);
  std::vector<FasopRow> rows = fasop::testing::read_fasop_table(table);
  std::vector<std::string> problems;
  for (const FasopRow& row : rows) check_estimate_at_fasop_partition(l->input, row, problems);
  // The search covers exactly FASOP's layouts and beats or matches each.
  std::vector<CandidateResult> ours = run_search(l->input);
  std::map<std::string, double> best;
  for (const CandidateResult& r : ours) {
    FasopRow as_row;
    as_row.mbs = r.plan.key.mbs, as_row.tp = r.plan.key.tp, as_row.dp = r.plan.key.dp, as_row.pp = r.plan.key.pp;
    for (int t : r.plan.key.node_order) as_row.placement.push_back(l->cluster.node_types[t].name);
    best[describe(as_row)] = r.estimate.step_time_s;
  }
  if (best.size() != rows.size() || ours.size() != rows.size())
    problems.push_back("search has " + std::to_string(ours.size()) + " candidates, FASOP " + std::to_string(rows.size()));
  for (const FasopRow& row : rows) {
    auto it = best.find(describe(row));
    if (it == best.end()) {
      problems.push_back(describe(row) + ": missing from the search");
    } else if (it->second > row.step_s) {  // FASOP's arithmetic is reproduced: no tolerance
      std::ostringstream out;
      out.precision(17);
      out << describe(row) << ": search " << it->second << " slower than FASOP " << row.step_s;
      problems.push_back(out.str());
    }
  }
  return problems;
}

void require_reproduced(const std::string& table, const std::string& model, const std::string& cluster) {
  std::vector<std::string> problems = check_table(table, model, cluster);
  for (size_t i = 0; i < problems.size() && i < 20; ++i) UNSCOPED_INFO(problems[i]);
  INFO(problems.size() << " mismatches in " << table);
  CHECK(problems.empty());
}

const std::string kData = std::string(FASOP_SOURCE_DIR) + "/tests/data/fasop/";

}  // namespace

TEST_CASE("FASOP's bert table is reproduced", "[fasop]") {
  require_reproduced(kData + "bert.csv", "bert", "fasop-bert");
}
TEST_CASE("FASOP's heterogeneous bert table is reproduced", "[fasop]") {
  require_reproduced(kData + "bert_heterogeneous.csv", "bert", "fasop-bert-heterogeneous");
}
TEST_CASE("FASOP's gpt2 table is reproduced", "[fasop]") {
  require_reproduced(kData + "gpt2.csv", "gpt2xl", "fasop-8nodes");
}
TEST_CASE("FASOP's heterogeneous gpt2 table is reproduced", "[fasop]") {
  require_reproduced(kData + "gpt2_heterogeneous.csv", "gpt2xl", "fasop-8nodes-heterogeneous");
}
// FASOP's T5 tables are not shipped; a developer with FASOP's output points FASOP_T5_TABLES at it.
TEST_CASE("FASOP's T5 tables are reproduced when given", "[fasop][t5]") {
  const char* dir = std::getenv("FASOP_T5_TABLES");
  if (!dir) return fasop::testing::report_skipped("FASOP_T5_TABLES is not set: FASOP's T5 tables are not shipped");
  require_reproduced(std::string(dir) + "/T5.csv", "t5", "fasop-8nodes");
  require_reproduced(std::string(dir) + "/T5_heterogeneous.csv", "t5", "fasop-8nodes-heterogeneous");
}

using fasop::testing::Presets;

TEST_CASE("a search of many layouts drops per-stage detail, and the plan's partition gives it back", "[search]") {
  // FASOP's heterogeneous cluster (1 A100 + 7 A10 nodes): every layout at its best partition,
  // with the detail, and again holding none of it.
  Presets p("gpt2xl", "fasop-8nodes-heterogeneous");
  const std::vector<CandidateResult> full = run_search(p.input);
  SearchInput lean_input = p.input;
  lean_input.stage_detail_limit = 0;
  const std::vector<CandidateResult> lean = run_search(lean_input);
  REQUIRE(lean.size() == full.size());
  REQUIRE(full.size() > 5);
  for (size_t i = 0; i < full.size(); ++i) {
    CHECK(lean[i].estimate.stages.empty());
    CHECK(lean[i].plan.partition == full[i].plan.partition);
    CHECK(lean[i].estimate.step_time_s == full[i].estimate.step_time_s);
  }
  // The five best estimated again at their partitions: the same times and stages as held.
  for (size_t i = 0; i < 5; ++i) {
    INFO("plan " << i);
    const CandidateResult again = evaluate_candidate(p.input, lean[i].plan.key, lean[i].plan.partition);
    CHECK(again.estimate.step_time_s == full[i].estimate.step_time_s);
    REQUIRE(again.estimate.stages.size() == full[i].estimate.stages.size());
    for (size_t s = 0; s < again.estimate.stages.size(); ++s)
      CHECK(again.estimate.stages[s].compute_s == full[i].estimate.stages[s].compute_s);
  }
}
