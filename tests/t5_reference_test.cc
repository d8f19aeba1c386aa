// T5 (encoder-decoder) plans against figures FASOP printed for them. FASOP's T5 tables are not
// shipped; these rows come from running FASOP unmodified (commit 93cb38b, python3-torch 1.13 on
// Debian 12: `python3 FASOP.py --type T5 [--heterogeneous]`). Developers check whole tables with
// FASOP_T5_TABLES (fasop_reproduction_test.cc).
#include <catch2/catch.hpp>

#include "test_support.h"

using namespace fasop;
using fasop::testing::Presets;

namespace {

struct T5Row {
  const char* cluster;
  int mbs, tp, dp, pp;
  std::vector<int> nodes;  // node type per node: 0 = p4d.24xlarge (A100), 1 = g5.24xlarge (A10)
  std::vector<int> partition;
  double step_s, pipeline_s, dp_s, oom_gib, zero_gib;
  bool is_oom, is_zero_oom;
};

}  // namespace

TEST_CASE("T5 plans reproduce FASOP's figures", "[fasop][t5]") {
  const std::vector<T5Row> rows = {
      // T5.csv, first row: the best homogeneous plan.
      {"fasop-8nodes", 2, 1, 4, 8, {1, 1, 1, 1, 1, 1, 1, 1}, {9, 8, 8, 6, 5, 4, 5, 5},
       1.0178204774856567, 0.9930546736121327, 0.02476579137146473, 9.3989, 8.2932, false, false},
      // T5_heterogeneous.csv: tensor parallel, A100 node first.
      {"fasop-8nodes-heterogeneous", 4, 2, 2, 8, {0, 1, 1, 1, 1, 1, 1, 1}, {17, 8, 5, 4, 4, 4, 4, 4},
       1.730359435081482, 1.728062323010887, 0.0022971169091761112, 17.5120, 16.8621, false, false},
      // T5_heterogeneous.csv: no pipeline; the stage runs at A10 speed and does not fit it.
      {"fasop-8nodes-heterogeneous", 4, 1, 32, 1, {0, 1, 1, 1, 1, 1, 1, 1}, {50},
       1.141277551651001, 0.6481971144676208, 0.49308037757873535, 24.0507, 14.4157, true, false},
  };
  for (const T5Row& row : rows) {
    Presets p("t5", row.cluster);
    CandidateResult r = evaluate_candidate(p.input, {row.mbs, row.tp, row.dp, row.pp, row.nodes}, row.partition,
                                           PartitionTiming::kAsFasopReports);
    INFO("mbs " << row.mbs << " tp " << row.tp << " dp " << row.dp << " pp " << row.pp);
    CHECK(r.estimate.step_time_s == Approx(row.step_s).epsilon(1e-5));
    CHECK(r.estimate.pipeline_time_s == Approx(row.pipeline_s).epsilon(1e-5));
    CHECK(r.estimate.dp_allreduce_s == Approx(row.dp_s).epsilon(1e-5));
    CHECK(r.estimate.embedding_allreduce_s == 0.0);
    CHECK(r.estimate.memory.is_oom == row.is_oom);
    CHECK(r.estimate.memory.is_zero_oom == row.is_zero_oom);
    CHECK(r.estimate.memory.oom_gpumem_gib == Approx(row.oom_gib).margin(1e-3));
    CHECK(r.estimate.memory.zero_oom_gpumem_gib == Approx(row.zero_gib).margin(1e-3));
    // The search's own partition is at least as fast, and keeps encoder and decoder apart.
    CandidateResult best = evaluate_candidate(p.input, r.plan.key);
    CHECK(best.estimate.step_time_s <= r.estimate.step_time_s * (1 + 1e-9));
  }
}
