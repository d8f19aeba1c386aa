// A step's terms (costmodel/step_breakdown.h): one sum, and the reports that list them.
#include <catch2/catch.hpp>

#include <string>

#include "costmodel/pipeline_1f1b.h"
#include "costmodel/step_breakdown.h"
#include "report/pipeline_timeline.h"
#include "report/step_breakdown_text.h"

using namespace fasop;

namespace {

StepBreakdown example() {
  return {.compute_s = 9.124154, .bubble_s = 1.143944, .layer_comm_s = 0.445332, .sends_s = 0.1866,
          .dp_comm_s = 0.146069, .overlap_cost_s = 0.010705, .optimizer_s = 0.001013, .embedding_s = 0};
}

}  // namespace

TEST_CASE("a step is the sum of its eight terms, listed in one order") {
  const StepBreakdown b = example();
  // 9.124154 + 1.143944 + 0.445332 + 0.1866 + 0.146069 + 0.010705 + 0.001013 = 11.057817
  CHECK(b.total_s() == Approx(11.057817).epsilon(1e-12));
  REQUIRE(step_term_fields().size() == 8);
  CHECK(std::string(step_term_fields()[2].name) == "tp_comm");
  CHECK(&(b.*step_term_fields()[2].seconds) == &b.layer_comm_s);
  // Each field counts once: zeroing one takes exactly it off the sum.
  for (const StepTermField& term : step_term_fields()) {
    StepBreakdown without = b;
    without.*term.seconds = 0;
    CHECK(b.total_s() - without.total_s() == Approx(b.*term.seconds).margin(1e-12));
  }
}

TEST_CASE("the terms as estimate prints them and as the timeline's caption") {
  CHECK(step_breakdown_text(example(), 4, "  ") ==
        "compute 9.124154, bubble 1.143944, tp comm 0.445332, sends 0.186600,\n"
        "  dp comm 0.146069, overlap cost 0.010705, optimizer 0.001013, embedding 0.000000 s\n");
  // The caption leaves out the terms that take no time (the embedding here).
  CHECK(step_breakdown_sum_text(example()) ==
        "step 11.1 s = compute 9.12 + bubble 1.14 + tp comm 0.445 + sends 0.187 + dp comm 0.146 + overlap cost "
        "0.0107 + optimizer 0.00101 s");
  const std::vector<PipelineEvent> events = simulate_1f1b_events({{1, 2, 0, 0}}, 4);
  const std::string svg = pipeline_timeline_svg(events, {"s0"}, "t", step_breakdown_sum_text(example()));
  CHECK(svg.find(">step 11.1 s = compute 9.12 + ") != std::string::npos);
  CHECK(pipeline_timeline_svg(events, {"s0"}, "t").find("step 11.1") == std::string::npos);
}
