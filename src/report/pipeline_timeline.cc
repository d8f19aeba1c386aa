#include "report/pipeline_timeline.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <sstream>

#include "report/svg_text.h"

namespace fasop {
namespace {

constexpr double kMargin = 12, kRight = 30, kTop = 60, kBottom = 70;
constexpr double kPlotWidth = 1100, kMaxPlotWidth = 2400, kMergedPlotWidth = 1400;
// Boxes one by one while there are at most this many events and the narrowest compute box gets
// at least kMinBox pixels (widening the plot up to kMaxPlotWidth for it).
constexpr size_t kMaxDetailEvents = 4000;
constexpr double kMinBox = 3;
// Merged rows hold at most this many runs (rectangles) in all; past it the bins widen.
constexpr size_t kMaxRuns = 24000;
constexpr double kNumberFont = 10;

/// Colours: forward blue, backward green, sends orange (forward) and purple (backward).
const char* fill(PipelineEvent::Kind kind) {
  switch (kind) {
    case PipelineEvent::Kind::kForward: return "#4c78a8";
    case PipelineEvent::Kind::kBackward: return "#54a24b";
    case PipelineEvent::Kind::kForwardSend: return "#f58518";
    case PipelineEvent::Kind::kBackwardSend: return "#b279a2";
  }
  return "#000";
}

bool is_send(PipelineEvent::Kind kind) {
  return kind == PipelineEvent::Kind::kForwardSend || kind == PipelineEvent::Kind::kBackwardSend;
}

double end_of(const std::vector<PipelineEvent>& events) {
  double end_s = 0;
  for (const PipelineEvent& e : events) end_s = std::max(end_s, e.end_s);
  return end_s > 0 ? end_s : 1;
}

/// Merged rows: per stage and kind (forward, backward, forward send, backward send), the runs
/// of bins in which the stage does that, as (first bin, bins).
using Runs = std::vector<std::pair<int, int>>;
std::vector<std::array<Runs, 4>> merged_runs(const std::vector<PipelineEvent>& events, size_t stages, double end_s,
                                             const TimelineLayout& layout, size_t* total) {
  const int bins = int(std::ceil(layout.plot_width / layout.bin));
  std::vector<std::array<std::vector<uint8_t>, 4>> busy(stages);
  for (auto& lanes : busy)
    for (auto& lane : lanes) lane.assign(size_t(bins), 0);
  for (const PipelineEvent& e : events) {
    if (e.stage < 0 || size_t(e.stage) >= stages) continue;
    const double x0 = e.start_s / end_s * layout.plot_width / layout.bin, x1 = e.end_s / end_s * layout.plot_width / layout.bin;
    const int b0 = std::clamp(int(std::floor(x0)), 0, bins - 1);
    const int b1 = std::clamp(std::max(int(std::ceil(x1)) - 1, b0), 0, bins - 1);
    std::vector<uint8_t>& lane = busy[size_t(e.stage)][size_t(e.kind)];
    std::fill(lane.begin() + b0, lane.begin() + b1 + 1, uint8_t(1));
  }
  std::vector<std::array<Runs, 4>> runs(stages);
  *total = 0;
  for (size_t s = 0; s < stages; ++s)
    for (size_t k = 0; k < 4; ++k) {
      const std::vector<uint8_t>& lane = busy[s][k];
      for (int b = 0; b < bins;) {
        if (!lane[size_t(b)]) {
          ++b;
          continue;
        }
        int n = 1;
        while (b + n < bins && lane[size_t(b + n)]) ++n;
        runs[s][k].push_back({b, n});
        b += n;
      }
      *total += runs[s][k].size();
    }
  return runs;
}

/// A long pipeline drawn with a broken time axis: its first and last `kEndMicrobatches`-plus-pp
/// micro-batches at a readable scale, the steady 1F1B between them left out (`cut1_s` to
/// `cut2_s`, shown as a gap of `gap_s` of drawn time).
struct TimeWindow {
  bool broken = false;
  double cut1_s = 0, cut2_s = 0, gap_s = 0;
  int left_out = 0;  ///< micro-batches wholly inside the gap
  /// Drawn time of real time `t`.
  double warp(double t) const { return !broken || t <= cut1_s ? t : t >= cut2_s ? t - cut2_s + cut1_s + gap_s : cut1_s; }
};
constexpr int kEndMicrobatches = 3;

/// The window for `events` of `stages` stages: broken where they hold more micro-batches than
/// two warm-ups and a few steady ones, else whole.
TimeWindow choose_window(const std::vector<PipelineEvent>& events, size_t stages) {
  int microbatches = 0;
  for (const PipelineEvent& e : events) microbatches = std::max(microbatches, e.microbatch + 1);
  const int shown = int(stages) + kEndMicrobatches;  // at each end
  TimeWindow w;
  if (microbatches <= 2 * shown + 2) return w;
  double first_of_shown = 1e300, last_of_end = 0;
  for (const PipelineEvent& e : events) {
    if (e.microbatch == shown) first_of_shown = std::min(first_of_shown, e.start_s);
    if (e.microbatch == microbatches - 1 - shown) last_of_end = std::max(last_of_end, e.end_s);
  }
  if (!(first_of_shown < last_of_end)) return w;
  w.broken = true;
  w.cut1_s = first_of_shown;
  w.cut2_s = last_of_end;
  w.gap_s = 0.08 * (w.cut1_s + end_of(events) - w.cut2_s);
  w.left_out = microbatches - 2 * shown - 2;
  return w;
}

/// `events` on the window's drawn time: those before the first cut and after the second; those
/// inside the gap or across a cut left out (a sliver of a box would set the scale).
std::vector<PipelineEvent> windowed(const std::vector<PipelineEvent>& events, const TimeWindow& w) {
  if (!w.broken) return events;
  std::vector<PipelineEvent> out;
  for (PipelineEvent e : events) {
    if (e.end_s <= w.cut1_s) {
      out.push_back(e);
    } else if (e.start_s >= w.cut2_s) {
      e.start_s = w.warp(e.start_s);
      e.end_s = w.warp(e.end_s);
      out.push_back(e);
    }
  }
  return out;
}

/// The layout of `events` under `stage_labels`: boxes one by one, or merged rows (whose runs
/// merge_rows adds).
TimelineLayout layout_of(const std::vector<PipelineEvent>& events, const std::vector<std::string>& stage_labels) {
  TimelineLayout layout;
  const size_t stages = stage_labels.size();
  const bool low_rows = stages > 16;
  layout.label_font = low_rows ? 11 : 12;
  layout.row_height = low_rows ? 22 : 34;
  layout.box_height = low_rows ? 14 : 20;
  layout.send_height = low_rows ? 4 : 5;
  double longest = 0;
  for (const std::string& label : stage_labels) longest = std::max(longest, text_width(label, layout.label_font));
  layout.left = std::ceil(kMargin + longest + 8);
  const double end_s = end_of(events);
  double narrowest_s = end_s;
  for (const PipelineEvent& e : events)
    if (!is_send(e.kind)) narrowest_s = std::min(narrowest_s, e.end_s - e.start_s);
  const double needed = narrowest_s > 0 ? kMinBox * end_s / narrowest_s : 1e300;  // plot width for kMinBox
  layout.merged = events.size() > kMaxDetailEvents || needed > kMaxPlotWidth;
  layout.plot_width = layout.merged ? kMergedPlotWidth : std::max(kPlotWidth, std::ceil(needed));
  layout.width = layout.left + layout.plot_width + kRight;
  layout.height = kTop + double(stages) * layout.row_height + kBottom;
  return layout;
}

/// A merged layout's runs, its bin widened until they are at most kMaxRuns.
std::vector<std::array<Runs, 4>> merge_rows(const std::vector<PipelineEvent>& events, size_t stages,
                                            TimelineLayout& layout) {
  for (;;) {
    size_t total = 0;
    std::vector<std::array<Runs, 4>> runs = merged_runs(events, stages, end_of(events), layout, &total);
    if (total <= kMaxRuns) return runs;
    layout.bin *= 2;
  }
}

/// What a picture draws: the window, its events on the drawn time, their layout and, where
/// rows are merged, their runs.
struct TimelineDrawing {
  TimeWindow window;
  std::vector<PipelineEvent> events;
  TimelineLayout layout;
  std::vector<std::array<Runs, 4>> runs;
};

/// The drawing of `all`: under kEnds, its ends with the axis broken where the whole would merge
/// its rows or need a wider plot for its boxes, and the ends draw them one by one (or the whole
/// merges too: the ends merge at their larger scale); else the whole step.
TimelineDrawing drawing_of(const std::vector<PipelineEvent>& all, const std::vector<std::string>& stage_labels,
                           TimelineView view) {
  TimelineDrawing d{.window = {}, .events = all, .layout = layout_of(all, stage_labels), .runs = {}};
  const TimeWindow w = view == TimelineView::kEnds ? choose_window(all, stage_labels.size()) : TimeWindow{};
  if (w.broken && (d.layout.merged || d.layout.plot_width > kPlotWidth)) {
    std::vector<PipelineEvent> ends = windowed(all, w);
    const TimelineLayout ends_layout = layout_of(ends, stage_labels);
    if (!ends_layout.merged || d.layout.merged) {
      d.window = w;
      d.events = std::move(ends);
      d.layout = ends_layout;
    }
  }
  if (d.layout.merged) d.runs = merge_rows(d.events, stage_labels.size(), d.layout);
  return d;
}

}  // namespace

TimelineLayout pipeline_timeline_layout(const std::vector<PipelineEvent>& events,
                                        const std::vector<std::string>& stage_labels, TimelineView view) {
  return drawing_of(events, stage_labels, view).layout;
}

std::string pipeline_timeline_svg(const std::vector<PipelineEvent>& all_events,
                                  const std::vector<std::string>& stage_labels, const std::string& title,
                                  const std::string& caption, TimelineView view) {
  const TimelineDrawing drawing = drawing_of(all_events, stage_labels, view);
  const TimeWindow& window = drawing.window;
  const std::vector<PipelineEvent>& events = drawing.events;
  const TimelineLayout& layout = drawing.layout;
  const std::vector<std::array<Runs, 4>>& runs = drawing.runs;  // merged rows only
  const double end_s = end_of(events), left = layout.left, plot = layout.plot_width;
  const double rows = static_cast<double>(stage_labels.size());
  auto x = [&](double seconds) { return left + seconds / end_s * plot; };
  size_t microbatches = 0;
  for (const PipelineEvent& e : all_events) microbatches = std::max(microbatches, size_t(e.microbatch) + 1);
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << layout.width << "\" height=\"" << layout.height
      << "\" viewBox=\"0 0 " << layout.width << ' ' << layout.height << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << kMargin << "\" y=\"24\" font-size=\"15\">" << xml_escape(title) << "</text>\n"
      << "<text x=\"" << kMargin << "\" y=\"44\" fill=\"#555\">";
  if (!layout.merged)
    svg << (window.broken ? "1F1B, the first and last of " + std::to_string(microbatches) +
                                " micro-batches: forward (blue), backward (green), numbered where it fits; sends to the "
                                "next stage (orange) and back (purple) below</text>\n"
                          : std::string("1F1B: forward (blue) and backward (green) of each micro-batch, numbered where "
                                        "the number fits; sends to the next stage (orange) and the previous (purple) "
                                        "below</text>\n"));
  else
    svg << "1F1B, " << (window.broken ? "the first and last of " : "") << microbatches
        << " micro-batches, too many boxes to draw one by one: when each stage runs "
        << "forwards (upper half, blue) and backwards (lower half, green), and sends to the next stage (orange) and the "
        << "previous (purple), to " << (layout.bin == 1 ? std::string("the pixel") : format_number("%g pixels", layout.bin))
        << "</text>\n";
  for (size_t s = 0; s < stage_labels.size(); ++s) {
    const double y = kTop + double(s) * layout.row_height;
    svg << "<text x=\"" << left - 8 << "\" y=\"" << y + layout.box_height * 0.7 << "\" text-anchor=\"end\" font-size=\""
        << layout.label_font << "\">" << xml_escape(stage_labels[s]) << "</text>\n";
  }
  const double axis_y = kTop + rows * layout.row_height + 4;
  // Ticks in real seconds; a broken axis has its own over each window, and the gap between.
  auto ticks = [&](double from_s, double to_s, int count) {
    const double step = round_tick_step(to_s - from_s, count);
    for (double k = std::ceil(from_s / step); k * step <= to_s * 1.0001; ++k) {
      const double t = k * step, px = x(window.warp(t));
      svg << "<line x1=\"" << format_number("%.2f", px) << "\" y1=\"" << kTop - 6 << "\" x2=\"" << format_number("%.2f", px)
          << "\" y2=\"" << axis_y << "\" stroke=\"#eee\"/>\n"
          << "<text x=\"" << format_number("%.2f", px) << "\" y=\"" << axis_y + 16 << "\" text-anchor=\"middle\">"
          << format_number("%.4g", t) << "</text>\n";
    }
  };
  if (!window.broken) {
    ticks(0, end_s, 8);
  } else {
    const double real_end_s = end_of(all_events);
    ticks(0, window.cut1_s, 4);
    ticks(window.cut2_s, real_end_s, 4);
    const double g0 = x(window.cut1_s), g1 = x(window.cut1_s + window.gap_s);
    svg << "<rect x=\"" << format_number("%.2f", g0) << "\" y=\"" << kTop - 6 << "\" width=\"" << format_number("%.2f", g1 - g0)
        << "\" height=\"" << axis_y - kTop + 6 << "\" fill=\"#f4f4f4\"/>\n"
        << "<text x=\"" << format_number("%.2f", (g0 + g1) / 2) << "\" y=\"" << format_number("%.1f", (kTop + axis_y) / 2 - 12)
        << "\" text-anchor=\"middle\" font-size=\"10\" fill=\"#555\">" << window.left_out
        << "<tspan x=\"" << format_number("%.2f", (g0 + g1) / 2) << "\" dy=\"12\">more</tspan><tspan x=\""
        << format_number("%.2f", (g0 + g1) / 2) << "\" dy=\"12\">micro-batches,</tspan><tspan x=\""
        << format_number("%.2f", (g0 + g1) / 2) << "\" dy=\"12\">" << format_number("%.4g", window.cut2_s - window.cut1_s)
        << " s</tspan></text>\n";
  }
  svg << "<text x=\"" << left + plot / 2 << "\" y=\"" << axis_y + 36 << "\" text-anchor=\"middle\">seconds</text>\n";
  if (!caption.empty())
    svg << "<text x=\"" << kMargin << "\" y=\"" << axis_y + 58 << "\" fill=\"#555\">" << xml_escape(caption) << "</text>\n";
  if (layout.merged) {
    const double half = layout.box_height / 2, send_half = layout.send_height / 2;
    // Each kind one path; a lane's offset in its row and height.
    const std::array<std::pair<double, double>, 4> lanes = {
        std::pair{0.0, half}, std::pair{half, half}, std::pair{layout.box_height + 2, send_half},
        std::pair{layout.box_height + 2 + send_half, send_half}};
    const PipelineEvent::Kind kinds[4] = {PipelineEvent::Kind::kForward, PipelineEvent::Kind::kBackward,
                                          PipelineEvent::Kind::kForwardSend, PipelineEvent::Kind::kBackwardSend};
    for (size_t k = 0; k < 4; ++k) {
      std::string d;
      double at_x = 0, at_y = 0;  // the last subpath's start: moves are relative to it
      for (size_t s = 0; s < runs.size(); ++s)
        for (const auto& [first, n] : runs[s][size_t(kinds[k])]) {
          const double px = left + first * layout.bin, py = kTop + double(s) * layout.row_height + lanes[k].first;
          const std::string w = format_number("%g", n * layout.bin);
          d += (d.empty() ? "M" + format_number("%g", px) + " " + format_number("%g", py)
                          : "m" + format_number("%g", px - at_x) + " " + format_number("%g", py - at_y)) +
               "h" + w + "v" + format_number("%g", lanes[k].second) + "h-" + w + "z";
          at_x = px, at_y = py;
        }
      if (!d.empty()) svg << "<path fill=\"" << fill(kinds[k]) << "\" d=\"" << d << "\"/>\n";
    }
    svg << "</svg>\n";
    return svg.str();
  }
  // A stage's forwards (or backwards) are numbered where every one of them holds the largest
  // number: a row numbered throughout or not at all.
  std::vector<std::array<double, 2>> narrowest(stage_labels.size(), {1e300, 1e300});
  for (const PipelineEvent& e : events)
    if (!is_send(e.kind) && e.stage >= 0 && size_t(e.stage) < narrowest.size()) {
      double& n = narrowest[size_t(e.stage)][e.kind == PipelineEvent::Kind::kForward ? 0 : 1];
      n = std::min(n, x(e.end_s) - x(e.start_s));
    }
  const double number_width = text_width(std::to_string(microbatches > 0 ? microbatches - 1 : 0), kNumberFont) + 3;
  for (const PipelineEvent& e : events) {
    const double y = kTop + e.stage * layout.row_height + (is_send(e.kind) ? layout.box_height + 2 : 0);
    const double w = std::max(x(e.end_s) - x(e.start_s), 0.5);
    svg << "<rect x=\"" << format_number("%.2f", x(e.start_s)) << "\" y=\"" << y << "\" width=\""
        << format_number("%.2f", w) << "\" height=\"" << (is_send(e.kind) ? layout.send_height : layout.box_height)
        << "\" fill=\"" << fill(e.kind) << "\" stroke=\"white\" stroke-width=\"0.5\"><title>stage " << e.stage
        << ", micro-batch " << e.microbatch << ": " << format_number("%.6g", e.start_s) << "-"
        << format_number("%.6g", e.end_s) << " s</title></rect>\n";
    const std::string number = std::to_string(e.microbatch);
    if (!is_send(e.kind) && size_t(e.stage) < narrowest.size() && narrowest[size_t(e.stage)][e.kind == PipelineEvent::Kind::kForward ? 0 : 1] >= number_width)
      svg << "<text x=\"" << format_number("%.2f", x(e.start_s) + w / 2) << "\" y=\"" << y + layout.box_height * 0.7
          << "\" text-anchor=\"middle\" fill=\"white\" font-size=\"" << kNumberFont << "\">" << number << "</text>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace fasop
