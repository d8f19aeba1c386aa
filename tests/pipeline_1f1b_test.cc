// The 1F1B simulation against schedules worked out by hand.
#include <catch2/catch.hpp>

#include <random>

#include "costmodel/pipeline_1f1b.h"

using namespace fasop;

TEST_CASE("one stage runs its micro-batches back to back", "[pipeline]") {
  PipelineResult r = simulate_1f1b({{1.0, 2.0, 0, 0}}, 4);
  CHECK(r.pipeline_s == Approx(12.0));  // 4 x (1 + 2)
  REQUIRE(r.stage_end_s.size() == 1);
}

TEST_CASE("two equal stages without sends: (m + pp - 1) x (f + b)", "[pipeline]") {
  // Stage 0: F0 [0,1]; stage 1: F0 [1,2] B0 [2,4]; stage 0: F1 [1,2], B0 [4,6], ...
  // Hand schedule for m = 4, f = 1, b = 2: stage 1 alternates F,B from t=1 and ends at 13;
  // stage 0 ends with B3 at 15 = (4 + 2 - 1) x 3.
  PipelineResult r = simulate_1f1b({{1, 2, 0, 0}, {1, 2, 0, 0}}, 4);
  CHECK(r.pipeline_s == Approx(15.0));
  CHECK(r.stage_end_s[1] == Approx(13.0));
}

TEST_CASE("a forward send delays every micro-batch's arrival at the next stage", "[pipeline]") {
  // m = 1: F on stage 0 [0,1], send [1,1.5], F on stage 1 [1.5,2.5], B [2.5,4.5],
  // stage 1's gradient send costs nothing here, B on stage 0 [4.5,6.5].
  PipelineResult r = simulate_1f1b({{1, 2, 0.5, 0}, {1, 2, 0, 0}}, 1);
  CHECK(r.pipeline_s == Approx(6.5));
  CHECK(r.stage_end_s[1] == Approx(4.5));
}

TEST_CASE("a backward send delays the previous stage's backward", "[pipeline]") {
  // m = 1: F0 [0,1], F1 [1,2], B1 [2,4], gradient send [4,4.25], B0 [4.25,6.25].
  PipelineResult r = simulate_1f1b({{1, 2, 0, 0}, {1, 2, 0, 0.25}}, 1);
  CHECK(r.pipeline_s == Approx(6.25));
}

TEST_CASE("the slowest stage sets the steady-state pace", "[pipeline]") {
  // Stage 1 is three times slower; with many micro-batches the pipeline takes about
  // m x (its f + b) plus the fill and drain of stage 0.
  PipelineResult r = simulate_1f1b({{1, 2, 0, 0}, {3, 6, 0, 0}}, 8);
  // Stage 1 works without a gap from t=1: 8 x 9 = 72, ends at 73; stage 0's last backward follows.
  CHECK(r.stage_end_s[1] == Approx(73.0));
  CHECK(r.pipeline_s == Approx(75.0));
}

TEST_CASE("the pipeline lower bound never exceeds the simulation and is tight without bubbles", "[pipeline]") {
  // Two equal stages, m = 4: the chain through the last stage is the schedule itself.
  CHECK(pipeline_1f1b_lower_bound({{1, 2, 0, 0}, {1, 2, 0, 0}}, 4) == Approx(15.0));
  // Random stages, with FASOP's sends (stage 0 forward, last stage backward) and with sends on
  // every boundary: the bound is a chain of the schedule's dependencies, so never later.
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> time(0.5, 2.0);
  double worst_ratio = 1;
  for (int trial = 0; trial < 20000; ++trial) {
    int pp = 2 + int(rng() % 40), m = 1 + int(rng() % 64);
    std::vector<StageTiming> stages(pp);
    for (StageTiming& s : stages) {
      double f = time(rng) * (rng() % 4 == 0 ? 3 : 1);
      s.forward_s = f;
      s.backward_s = 2 * f;
      if (trial % 2) s.forward_send_s = 0.2 * time(rng), s.backward_send_s = 0.2 * time(rng);
    }
    if (trial % 2 == 0) stages.front().forward_send_s = 0.3 * time(rng), stages.back().backward_send_s = 0.3 * time(rng);
    double simulated = simulate_1f1b(stages, m).pipeline_s;
    double bound = pipeline_1f1b_lower_bound(stages, m);
    INFO("trial " << trial << " pp " << pp << " m " << m);
    REQUIRE(bound <= simulated * (1 + 1e-12));
    worst_ratio = std::min(worst_ratio, bound / simulated);
  }
  CHECK(worst_ratio > 0.6);  // a bound, but not a useless one
}
