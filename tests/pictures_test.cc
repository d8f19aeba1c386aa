// The SVG pictures: the pareto front's axes, notes, labels and size (report/pareto_plot.h),
// the 1F1B timeline's margin, merging and size (report/pipeline_timeline.h), and the text
// widths both lay out by (report/svg_text.h).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "costmodel/pipeline_1f1b.h"
#include "report/pareto_plot.h"
#include "report/pipeline_timeline.h"
#include "report/svg_text.h"

using namespace fasop;

namespace {

ClusterSpec two_types() {
  ClusterSpec c;
  c.name = "two";
  NodeType a, b;
  a.name = "big", a.gpu = "A100", a.gpus_per_node = 8;
  b.name = "small", b.gpu = "A10", b.gpus_per_node = 8;
  c.node_types = {a, b};
  c.nodes = {0, 1};
  return c;
}

CandidateResult candidate(double step_s, double cost_usd, bool oom = false) {
  CandidateResult r;
  r.plan.key.node_order = {0, 1};
  r.plan.key.pp = 2;
  r.estimate.step_time_s = step_s;
  r.estimate.train_cost_usd = cost_usd;
  r.estimate.memory.is_oom = oom;
  return r;
}

void feed(ParetoPlot& plot, std::vector<CandidateResult> chunk) {
  std::vector<EnumerationIndex> index(chunk.size());
  plot.consume(chunk, index);
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("text widths are DejaVu Sans's advances", "[pictures]") {
  // s .521, t .392, a .613, g .635, e .615, space .318, 0 .636 (ems): 3.730 em.
  CHECK(text_width("stage 0", 12) == Approx(3.730 * 12));
  CHECK(text_width("10", 10) == Approx(12.72));
  CHECK(text_width("", 12) == 0);
  CHECK(text_width("\xC3\xA9", 10) == Approx(10));  // one character outside ASCII: an em
}

TEST_CASE("the front plot's axes fit the candidates that fit in memory, the others are counted", "[pictures]") {
  ParetoPlot plot;
  // Runnable: 1 s/$100, 2 s/$60, 4 s/$50 (the front) and 3 s/$200, 8 s/$400. Out of memory: one
  // far slower and dearer, one faster and cheaper than everything that runs.
  feed(plot, {candidate(1, 100), candidate(2, 60), candidate(4, 50), candidate(3, 200), candidate(8, 400),
              candidate(1000, 1e7, true), candidate(0.5, 30, true)});
  const std::vector<CandidateResult> front = {candidate(4, 50), candidate(2, 60), candidate(1, 100)};
  const ParetoPlotLayout layout = plot.layout(front);
  CHECK(layout.t_lo == 1);
  CHECK(layout.t_hi == 8);
  CHECK(layout.c_lo == 50);
  CHECK(layout.c_hi == 400);
  CHECK(layout.runnable == 5);
  CHECK(layout.runnable_beyond == 0);
  CHECK(layout.oom == 2);
  CHECK(layout.oom_t_lo == 0.5);
  CHECK(layout.oom_t_hi == 1000);
  CHECK(layout.oom_c_lo == 30);
  CHECK(layout.oom_c_hi == 1e7);
  CHECK(layout.front_oom == 0);
  REQUIRE(layout.notes.size() == 1);
  CHECK(layout.notes[0] == "2 candidates out of memory, not drawn: 0.5-1000 s/step, $30-$10.00M");
  const std::string svg = plot.svg(two_types(), front, "test");
  CHECK(svg.find(xml_escape(layout.notes[0])) != std::string::npos);
  CHECK(svg.find("1xA100+1xA10 (tp1 dp1 pp2 mbs1)") != std::string::npos);
  // Time ticks 2, 4, 6, 8 s (1-8 s holds only three of 1, 2, 5: a linear scale), not the
  // out-of-memory 0.5 or 1000 s.
  for (const char* tick : {">2</text>", ">4</text>", ">6</text>", ">8</text>"}) CHECK(svg.find(tick) != std::string::npos);
  CHECK(svg.find(">0.5</text>") == std::string::npos);
  CHECK(svg.find(">1k</text>") == std::string::npos);
}

TEST_CASE("the front plot draws the step-time and cost limits, or names those off its axes", "[pictures]") {
  ParetoPlot plot;
  feed(plot, {candidate(1, 100), candidate(2, 60), candidate(4, 50), candidate(8, 400)});
  const std::vector<CandidateResult> front = {candidate(4, 50), candidate(2, 60), candidate(1, 100)};
  // Axes 1-8 s and $50-$400 (and their margins): a 3 s limit and a $70 limit cross them.
  PlanConstraints limits;
  limits.max_step_time_s = 3;
  limits.max_cost_usd = 70;
  std::string svg = plot.svg(two_types(), front, "test", limits);
  CHECK(count(svg, "stroke=\"#c33\" stroke-dasharray=\"6 4\"/>") == 2);
  CHECK(svg.find(">step limit 3 s</text>") != std::string::npos);
  CHECK(svg.find(">cost limit $70</text>") != std::string::npos);
  // A 100 s limit lies right of the axes, a $1 limit below them: named under the plot instead.
  limits.max_step_time_s = 100;
  limits.max_cost_usd = 1;
  svg = plot.svg(two_types(), front, "test", limits);
  CHECK(count(svg, "stroke-dasharray") == 0);
  CHECK(svg.find(">step limit 100 s lies beyond the axes (every plan drawn is within it)</text>") != std::string::npos);
  CHECK(svg.find(">cost limit $1 lies below the axes (no plan drawn is within it)</text>") != std::string::npos);
  // No limits: nothing of them.
  CHECK(plot.svg(two_types(), front, "test").find("limit") == std::string::npos);
}

TEST_CASE("each axis labels the front's span, with a round tick inside it where none falls", "[pictures]") {
  // Costs of the front $52-$56, other candidates to $90: the linear ticks $50, $60, ... leave
  // the span bare but for $50 below it; its geometric middle, sqrt(52 x 56) = 53.96, to two
  // digits: a $54 tick.
  ParetoPlot plot;
  feed(plot, {candidate(2, 56), candidate(3, 54), candidate(4, 52), candidate(2.5, 90), candidate(3.5, 80)});
  const std::vector<CandidateResult> front = {candidate(4, 52), candidate(3, 54), candidate(2, 56)};
  const std::string svg = plot.svg(two_types(), front, "test");
  CHECK(svg.find(">$54</text>") != std::string::npos);
  CHECK(svg.find(">$60</text>") != std::string::npos);
  // Time: ticks at 2, 2.5, 3, ... already fall inside the front's 2-4 s: none added.
  CHECK(svg.find(">2.8</text>") == std::string::npos);
}

TEST_CASE("front plans out of memory stay on the axes, drawn hollow", "[pictures]") {
  ParetoPlot plot;
  feed(plot, {candidate(2, 60), candidate(3, 80), candidate(1, 100, true)});
  const std::vector<CandidateResult> front = {candidate(2, 60), candidate(1, 100, true)};
  const ParetoPlotLayout layout = plot.layout(front);
  CHECK(layout.t_lo == 1);  // the front's out-of-memory plan
  CHECK(layout.t_hi == 3);
  CHECK(layout.c_hi == 100);
  CHECK(layout.front_oom == 1);
  REQUIRE(layout.notes.size() == 1);
  CHECK(layout.notes[0].find("1 of them on the front, drawn hollow") != std::string::npos);
  const std::string svg = plot.svg(two_types(), front, "test");
  CHECK(count(svg, "fill=\"white\" stroke=\"#1f77b4\"><title>") == 1);
}

TEST_CASE("candidates that fit but lie far from the front are left off the axes and counted", "[pictures]") {
  ParetoPlot plot;
  // The front spans 10-11 s and $100-105: less than 1.5x either way, so the axes reach 1.5x
  // beyond it (16.5 s, $157.5) and no further; the slow, dear plan is counted instead.
  feed(plot, {candidate(10, 105), candidate(11, 100), candidate(12, 120), candidate(5000, 1e4)});
  const std::vector<CandidateResult> front = {candidate(11, 100), candidate(10, 105)};
  const ParetoPlotLayout layout = plot.layout(front);
  CHECK(layout.t_lo == 10);
  CHECK(layout.t_hi == Approx(16.5));
  CHECK(layout.c_lo == 100);
  CHECK(layout.c_hi == Approx(157.5));
  CHECK(layout.runnable == 4);
  CHECK(layout.runnable_beyond == 1);
  REQUIRE(layout.notes.size() == 1);
  CHECK(layout.notes[0].find("1 candidate that fit") == 0);
  CHECK(layout.notes[0].find("up to 5000 s/step, $10.0k") != std::string::npos);
  // A front spread over 4x in time reaches 16x beyond it: the same plan at 50 s is on the axes.
  ParetoPlot wide;
  feed(wide, {candidate(1, 100), candidate(4, 50), candidate(50, 60)});
  const ParetoPlotLayout wide_layout = wide.layout({candidate(4, 50), candidate(1, 100)});
  CHECK(wide_layout.t_hi == 50);
  CHECK(wide_layout.runnable_beyond == 0);
  CHECK(wide_layout.notes.empty());
}

TEST_CASE("the numbers of a crowded front never overlap", "[pictures]") {
  for (size_t plans : {12, 40, 60}) {
    INFO(plans << " front plans");
    ParetoPlot plot;
    // The front within 4% in time and cost: a few dozen pixels for all of it.
    std::vector<CandidateResult> all, front;
    for (size_t i = 0; i < plans; ++i) {
      const double f = double(i) / double(plans);
      front.push_back(candidate(10 * (1 + 0.04 * f), 100 * (1.04 - 0.04 * f)));
    }
    all = front;
    all.push_back(candidate(30, 300));
    feed(plot, all);
    const ParetoPlotLayout layout = plot.layout(front);
    REQUIRE(layout.labels.size() == std::min<size_t>(plans, 40));  // the listed plans, each numbered
    for (size_t i = 0; i < layout.labels.size(); ++i) {
      const PixelBox& a = layout.labels[i].box;
      CHECK(a.w >= text_width(std::to_string(layout.labels[i].plan + 1), 10));
      CHECK(a.x >= 90);
      CHECK(a.x + a.w <= 820);
      CHECK(a.y >= 60);
      CHECK(a.y + a.h <= 620);
      for (size_t j = i + 1; j < layout.labels.size(); ++j) {
        INFO("labels " << i + 1 << " and " << j + 1);
        CHECK_FALSE(a.overlaps(layout.labels[j].box));
      }
    }
    // Nor over a front point: the svg's circles of radius 3.5.
    const std::string svg = plot.svg(two_types(), front, "crowded");
    size_t points = 0;
    for (size_t at = svg.find("<circle cx=\""); at != std::string::npos; at = svg.find("<circle cx=\"", at + 1)) {
      const double cx = std::stod(svg.substr(at + 12));
      const double cy = std::stod(svg.substr(svg.find("cy=\"", at) + 4));
      if (svg.compare(svg.find("r=\"", at) + 3, 3, "3.5") != 0) continue;
      ++points;
      const PixelBox marker{cx - 3.5, cy - 3.5, 7, 7};
      for (const auto& label : layout.labels) CHECK_FALSE(label.box.overlaps(marker));
    }
    CHECK(points >= plans);  // each front point (and the legend's hollow one, if any)
  }
}

TEST_CASE("the front plot stays small and the same for a hundred thousand candidates in any order", "[pictures]") {
  std::mt19937 rng(19);
  std::uniform_real_distribution<double> decades(0, 2.5);
  std::vector<CandidateResult> all;
  for (int i = 0; i < 100000; ++i)
    all.push_back(candidate(0.3 * std::pow(10.0, decades(rng)), 1e5 * std::pow(10.0, decades(rng)), i % 10 == 0));
  const std::vector<CandidateResult> front = {candidate(0.31, 9e6), candidate(3, 1.1e5)};
  ParetoPlot plot;
  for (size_t first = 0; first < all.size(); first += 4096)
    feed(plot, std::vector<CandidateResult>(all.begin() + first, all.begin() + std::min(all.size(), first + 4096)));
  const std::string svg = plot.svg(two_types(), front, "many");
  CHECK(svg.size() < 300000);
  const ParetoPlotLayout layout = plot.layout(front);
  CHECK(layout.runnable == 90000);
  CHECK(layout.oom == 10000);
  // Reversed, in other chunks: the same bytes.
  std::reverse(all.begin(), all.end());
  ParetoPlot reversed;
  for (size_t first = 0; first < all.size(); first += 1000)
    feed(reversed, std::vector<CandidateResult>(all.begin() + first, all.begin() + std::min(all.size(), first + 1000)));
  CHECK(reversed.svg(two_types(), front, "many") == svg);
}

TEST_CASE("the front plot's grid coarsens past its bound and still counts every candidate", "[pictures]") {
  // 400,000 distinct candidates over six decades each: more cells than the sink keeps.
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> decades(0, 6);
  ParetoPlot plot;
  std::vector<CandidateResult> chunk;
  for (int i = 0; i < 400000; ++i) {
    chunk.push_back(candidate(std::pow(10.0, decades(rng) - 1), std::pow(10.0, decades(rng) + 3)));
    if (chunk.size() == 8192) feed(plot, std::move(chunk)), chunk.clear();
  }
  feed(plot, chunk);
  const ParetoPlotLayout layout = plot.layout({});
  CHECK(layout.runnable == 400000);
  CHECK(layout.runnable_beyond == 0);  // no front: the axes fit them all
  CHECK(plot.svg(two_types(), {}, "coarse").size() < 400000);
}

TEST_CASE("the timeline's left margin holds the longest stage label", "[pictures]") {
  const std::vector<StageTiming> stages(3, StageTiming{1.0, 2.0, 0.1, 0.1});
  const std::vector<PipelineEvent> events = simulate_1f1b_events(stages, 4);
  const std::string longest = "stage 2: A100-80G x128, transformer 77-79, post_process";
  const std::vector<std::string> labels = {"stage 0: L4 x8, embedding", "stage 1: H100 x8", longest};
  const TimelineLayout layout = pipeline_timeline_layout(events, labels);
  CHECK(layout.label_font == 12);
  // Labels end 8 pixels left of the plot and must start inside the picture's 12-pixel margin.
  CHECK(layout.left - 8 - text_width(longest, layout.label_font) >= 12);
  CHECK(layout.left - 8 - text_width(longest, layout.label_font) < 13);
  CHECK_FALSE(layout.merged);
  const std::string svg = pipeline_timeline_svg(events, labels, "t");
  // The third row's label (60 + 2 x 34 + 14), drawn ending 8 pixels left of the plot.
  CHECK(svg.find("<text x=\"" + format_number("%g", layout.left - 8) + "\" y=\"142\" text-anchor=\"end\" font-size=\"12\">" +
                 xml_escape(longest)) != std::string::npos);
  // A short label leaves a narrow margin, not the old fixed 230 pixels.
  CHECK(pipeline_timeline_layout(events, {"s0", "s1", "s2"}).left < 50);
}

TEST_CASE("small timelines draw every box, large ones merge them and stay small", "[pictures]") {
  // Four stages, 32 micro-batches: 256 numbered compute boxes and 192 sends, as plan_test.sh.
  std::vector<StageTiming> four(4, StageTiming{1.0, 2.0, 0.05, 0.05});
  std::vector<PipelineEvent> events = simulate_1f1b_events(four, 32);
  std::vector<std::string> labels = {"stage 0", "stage 1", "stage 2", "stage 3"};
  TimelineLayout layout = pipeline_timeline_layout(events, labels);
  CHECK_FALSE(layout.merged);
  std::string svg = pipeline_timeline_svg(events, labels, "small");
  CHECK(count(svg, "fill=\"#4c78a8\"") + count(svg, "fill=\"#54a24b\"") == 256);
  CHECK(count(svg, "fill=\"#f58518\"") + count(svg, "fill=\"#b279a2\"") == 192);
  // Forwards are 1,100 / 105 pixels, too narrow for "31" (12.7 pixels and room); backwards
  // twice that: micro-batch 31 numbered on the four backwards only.
  CHECK(count(svg, "fill=\"white\" font-size=\"10\">31</text>") == 4);

  // 64 stages, 512 micro-batches: 130,048 events; merged rows, lower, no boxes one by one.
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> time(0.5, 1.5);
  std::vector<StageTiming> many(64);
  for (StageTiming& s : many) s = {time(rng), 2 * time(rng), 0.02 * time(rng), 0.02 * time(rng)};
  events = simulate_1f1b_events(many, 512);
  labels.clear();
  for (int s = 0; s < 64; ++s) labels.push_back("stage " + std::to_string(s) + ": L40S x16, transformer " + std::to_string(s));
  layout = pipeline_timeline_layout(events, labels);
  CHECK(layout.merged);
  CHECK(layout.row_height == 22);
  CHECK(layout.label_font == 11);
  CHECK(layout.width < 2000);
  svg = pipeline_timeline_svg(events, labels, "large");
  CHECK(svg.size() < 1000000);
  CHECK(count(svg, "<title>") == 0);
  CHECK(count(svg, "<path fill=\"#4c78a8\"") == 1);
  CHECK(count(svg, "<path fill=\"#54a24b\"") == 1);
  CHECK(svg.find("512 micro-batches") != std::string::npos);
  // Its ends at a larger scale, merged too: 512 - 2 x (64 + 3 + 1) = 376 micro-batches left out.
  CHECK(svg.find("1F1B, the first and last of 512 micro-batches, too many boxes") != std::string::npos);
  CHECK(svg.find(">376<tspan") != std::string::npos);
  // The same events give the same picture.
  CHECK(pipeline_timeline_svg(events, labels, "large") == svg);
}

TEST_CASE("a merged timeline marks a stage busy exactly where its boxes are", "[pictures]") {
  // One stage, forward 1 s and backward 2 s, 1,500 micro-batches: F0 [0, 1], B0 [1, 3], F1
  // [3, 4], ... B1499 [4498, 4500]. Its 1 s boxes would need 3 x 4,500 pixels: merged, 1,400
  // pixels for 4,500 s. The 2 s between two forwards is 0.62 pixel, so no bin is free: the
  // forward lane is one run from bin 0 to the last forward's (4498 s: pixel 1399.4), the
  // backward lane one from B0's (1 s: pixel 0.3) to the end; the upper and lower half of the
  // 20-pixel box.
  const std::vector<PipelineEvent> events = simulate_1f1b_events({{1, 2, 0, 0}}, 1500);
  REQUIRE(events.back().end_s == Approx(4500));
  const std::vector<std::string> labels = {"s0"};
  const TimelineLayout layout = pipeline_timeline_layout(events, labels, TimelineView::kWhole);
  REQUIRE(layout.merged);
  CHECK(layout.plot_width == 1400);
  CHECK(layout.bin == 1);
  const std::string svg = pipeline_timeline_svg(events, labels, "one", "", TimelineView::kWhole);
  const std::string left = format_number("%g", layout.left);
  CHECK(svg.find("<path fill=\"#4c78a8\" d=\"M" + left + " 60h1400v10h-1400z\"/>") != std::string::npos);
  CHECK(svg.find("<path fill=\"#54a24b\" d=\"M" + left + " 70h1400v10h-1400z\"/>") != std::string::npos);
  CHECK(svg.find("<path fill=\"#f58518\"") == std::string::npos);  // no sends

  // Forward 1 s, backward 20 s, 200 micro-batches: 4,200 s over 1,400 pixels, each forward a
  // third of a pixel 7 pixels from the next: 200 runs; the backwards (6.7 pixels, a third of a
  // pixel apart) one run.
  const std::vector<PipelineEvent> sparse = simulate_1f1b_events({{1, 20, 0, 0}}, 200);
  REQUIRE(pipeline_timeline_layout(sparse, labels, TimelineView::kWhole).merged);
  const std::string sparse_svg = pipeline_timeline_svg(sparse, labels, "one", "", TimelineView::kWhole);
  const size_t forward = sparse_svg.find("<path fill=\"#4c78a8\"");
  const size_t backward = sparse_svg.find("<path fill=\"#54a24b\"");
  REQUIRE(backward != std::string::npos);
  CHECK(count(sparse_svg.substr(forward, backward - forward), "z") == 200);
  CHECK(count(sparse_svg.substr(backward), "z") == 1);
}

TEST_CASE("a long pipeline shows its first and last micro-batches, the axis broken between", "[pictures]") {
  // Four stages, 128 micro-batches of 1 s forwards and 2 s backwards: 1,536 compute boxes, too
  // narrow at 1,100 pixels. Drawn: the first and last pp + 3 = 7 micro-batches of every stage,
  // numbered, and a gap naming the 128 - 2 x 8 = 112 left out.
  const std::vector<StageTiming> four(4, StageTiming{1.0, 2.0, 0.05, 0.05});
  const std::vector<PipelineEvent> events = simulate_1f1b_events(four, 128);
  const std::vector<std::string> labels = {"stage 0", "stage 1", "stage 2", "stage 3"};
  CHECK(pipeline_timeline_layout(events, labels, TimelineView::kWhole).plot_width > 1100);
  const TimelineLayout layout = pipeline_timeline_layout(events, labels);
  CHECK_FALSE(layout.merged);
  CHECK(layout.plot_width == 1100);
  const std::string svg = pipeline_timeline_svg(events, labels, "ends");
  CHECK(svg.find("1F1B, the first and last of 128 micro-batches") != std::string::npos);
  CHECK(svg.find(">112<tspan") != std::string::npos);
  for (const char* number : {">0</text>", ">6</text>", ">121</text>", ">127</text>"})
    CHECK(svg.find(number) != std::string::npos);
  CHECK(svg.find(">64</text>") == std::string::npos);  // the steady middle is left out
  // The whole step is still there to ask for, and a short one is never broken.
  CHECK(pipeline_timeline_svg(events, labels, "whole", "", TimelineView::kWhole).find("more micro-batches") ==
        std::string::npos);
  const std::vector<PipelineEvent> short_step = simulate_1f1b_events(four, 32);
  CHECK(pipeline_timeline_svg(short_step, labels, "short").find("the first and last of") == std::string::npos);
}
