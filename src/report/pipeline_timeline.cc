#include "report/pipeline_timeline.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "report/svg_text.h"

namespace fasop {
namespace {

constexpr double kLeft = 230, kRight = 30, kTop = 60, kRowHeight = 34, kBoxHeight = 20, kSendHeight = 5;
constexpr double kPlotWidth = 1100;

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

/// A round step for time ticks: about eight over `span` seconds.
double tick_step(double span) {
  double raw = span / 8, power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * power >= raw) return m * power;
  return 10 * power;
}

}  // namespace

std::string pipeline_timeline_svg(const std::vector<PipelineEvent>& events, const std::vector<std::string>& stage_labels,
                                  const std::string& title) {
  double end_s = 0;
  for (const PipelineEvent& e : events) end_s = std::max(end_s, e.end_s);
  if (end_s <= 0) end_s = 1;
  const double rows = static_cast<double>(stage_labels.size());
  const double width = kLeft + kPlotWidth + kRight, height = kTop + rows * kRowHeight + 70;
  auto x = [&](double seconds) { return kLeft + seconds / end_s * kPlotWidth; };
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << kLeft << "\" y=\"24\" font-size=\"15\">" << xml_escape(title) << "</text>\n"
      << "<text x=\"" << kLeft << "\" y=\"44\" fill=\"#555\">1F1B: forward (blue) and backward (green) of each "
         "micro-batch, numbered; sends to the next stage (orange) and the previous (purple) below</text>\n";
  for (size_t s = 0; s < stage_labels.size(); ++s) {
    double y = kTop + s * kRowHeight;
    svg << "<text x=\"" << kLeft - 8 << "\" y=\"" << y + kBoxHeight * 0.7 << "\" text-anchor=\"end\">"
        << xml_escape(stage_labels[s]) << "</text>\n";
  }
  const double step = tick_step(end_s);
  const double axis_y = kTop + rows * kRowHeight + 4;
  for (double t = 0; t <= end_s * 1.0001; t += step) {
    svg << "<line x1=\"" << format_number("%.2f", x(t)) << "\" y1=\"" << kTop - 6 << "\" x2=\""
        << format_number("%.2f", x(t)) << "\" y2=\"" << axis_y << "\" stroke=\"#eee\"/>\n"
        << "<text x=\"" << format_number("%.2f", x(t)) << "\" y=\"" << axis_y + 16 << "\" text-anchor=\"middle\">"
        << format_number("%.4g", t) << "</text>\n";
  }
  svg << "<text x=\"" << kLeft + kPlotWidth / 2 << "\" y=\"" << axis_y + 36 << "\" text-anchor=\"middle\">seconds</text>\n";
  for (const PipelineEvent& e : events) {
    const double y = kTop + e.stage * kRowHeight + (is_send(e.kind) ? kBoxHeight + 2 : 0);
    const double w = std::max(x(e.end_s) - x(e.start_s), 0.5);
    svg << "<rect x=\"" << format_number("%.2f", x(e.start_s)) << "\" y=\"" << y << "\" width=\""
        << format_number("%.2f", w) << "\" height=\"" << (is_send(e.kind) ? kSendHeight : kBoxHeight) << "\" fill=\""
        << fill(e.kind) << "\" stroke=\"white\" stroke-width=\"0.5\"><title>stage " << e.stage << ", micro-batch "
        << e.microbatch << ": " << format_number("%.6g", e.start_s) << "-" << format_number("%.6g", e.end_s)
        << " s</title></rect>\n";
    if (!is_send(e.kind) && w >= 14)
      svg << "<text x=\"" << format_number("%.2f", x(e.start_s) + w / 2) << "\" y=\"" << y + kBoxHeight * 0.7
          << "\" text-anchor=\"middle\" fill=\"white\" font-size=\"10\">" << e.microbatch << "</text>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace fasop
