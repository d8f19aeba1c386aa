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

TEST_CASE("the timeline's boxes are the simulated schedule, worked out by hand", "[pipeline]") {
  // Two stages, forward 1 s, backward 2 s, sends 0.5 s, two micro-batches. Stage 0 warms up
  // with F0 [0,1] (send [1,1.5]), runs F1 [1.5,2.5] (send [2.5,3]); stage 1 runs F0 [1.5,2.5],
  // B0 [2.5,4.5] (send back [4.5,5]), F1 [5,6], B1 [6,8] (send back [8,8.5]); stage 0 then runs
  // B0 [5,7] and B1 [8.5,10.5]: the pipeline ends at 10.5 s.
  std::vector<StageTiming> stages = {{1.0, 2.0, 0.5, 0.5}, {1.0, 2.0, 0.5, 0.5}};
  REQUIRE(simulate_1f1b(stages, 2).pipeline_s == Approx(10.5));
  std::vector<PipelineEvent> events = simulate_1f1b_events(stages, 2);
  using K = PipelineEvent::Kind;
  struct Box {
    K kind;
    int stage, microbatch;
    double start, end;
  };
  std::vector<Box> expected = {
      {K::kForward, 0, 0, 0, 1},       {K::kForwardSend, 0, 0, 1, 1.5}, {K::kForward, 0, 1, 1.5, 2.5},
      {K::kForwardSend, 0, 1, 2.5, 3}, {K::kBackward, 0, 0, 5, 7},      {K::kBackward, 0, 1, 8.5, 10.5},
      {K::kForward, 1, 0, 1.5, 2.5},   {K::kBackward, 1, 0, 2.5, 4.5},  {K::kBackwardSend, 1, 0, 4.5, 5},
      {K::kForward, 1, 1, 5, 6},       {K::kBackward, 1, 1, 6, 8},      {K::kBackwardSend, 1, 1, 8, 8.5}};
  REQUIRE(events.size() == expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    INFO("box " << i);
    CHECK(events[i].kind == expected[i].kind);
    CHECK(events[i].stage == expected[i].stage);
    CHECK(events[i].microbatch == expected[i].microbatch);
    CHECK(events[i].start_s == Approx(expected[i].start));
    CHECK(events[i].end_s == Approx(expected[i].end));
  }
}

TEST_CASE("one stage's timeline is its forwards and backwards in turn", "[pipeline]") {
  std::vector<PipelineEvent> events = simulate_1f1b_events({{1.0, 2.0, 0, 0}}, 2);
  REQUIRE(events.size() == 4);
  CHECK(events[3].kind == PipelineEvent::Kind::kBackward);
  CHECK(events[3].start_s == Approx(4.0));
  CHECK(events[3].end_s == Approx(6.0));
}

TEST_CASE("skipping repeated steady rounds gives the full simulation's times", "[pipeline]") {
  // simulate_1f1b jumps over steady rounds once they repeat; simulate_1f1b_events simulates
  // every round. Their last backwards must agree to rounding, on random stages (some tied,
  // some with sends, some too short a run to reach a period) up to FASOP-sized runs.
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> time(0.5, 2.0);
  int jumped = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const int pp = 2 + int(rng() % 24), m = 1 + int(rng() % 600);
    std::vector<StageTiming> stages(pp);
    for (StageTiming& s : stages) {
      const double f = trial % 3 == 0 ? 1.0 : time(rng);  // a third with every stage tied
      s.forward_s = f;
      s.backward_s = trial % 5 == 0 ? time(rng) : 2 * f;
      if (trial % 2) s.forward_send_s = 0.1 * time(rng), s.backward_send_s = 0.1 * time(rng);
    }
    const PipelineResult fast = simulate_1f1b(stages, m);
    std::vector<double> last_backward_end(pp, 0);
    for (const PipelineEvent& e : simulate_1f1b_events(stages, m))
      if (e.kind == PipelineEvent::Kind::kBackward && e.microbatch == m - 1) last_backward_end[e.stage] = e.end_s;
    INFO("trial " << trial << " pp " << pp << " m " << m);
    REQUIRE(fast.stage_end_s.size() == size_t(pp));
    for (int s = 0; s < pp; ++s) REQUIRE(fast.stage_end_s[s] == Approx(last_backward_end[s]).epsilon(1e-11));
    REQUIRE(fast.pipeline_s == Approx(last_backward_end[0]).epsilon(1e-11));
    jumped += m > 4 * pp + 8 && fast.pipeline_s != last_backward_end[0];
  }
  INFO("long runs whose rounding shows the jump: " << jumped);
  CHECK(jumped > 300);  // the jump was taken in many long runs
}
