#include "report/pareto_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "report/svg_text.h"
#include "search/cluster_shapes.h"

namespace fasop {
namespace {

// Cells per decade when thinning dots: finer than the picture's pixels.
constexpr double kCellsPerDecade = 600;
// The plot on the left, the list of front plans on the right.
constexpr double kWidth = 1240, kHeight = 680;
constexpr double kLeft = 90, kRight = 420, kTop = 60, kBottom = 60;
constexpr size_t kListedPlans = 40;

/// A log10 axis over [lo, hi] (in log10 units) mapped to pixels [from, to].
struct LogAxis {
  double lo, hi, from, to;
  double pixel(double value) const { return from + (std::log10(value) - lo) / (hi - lo) * (to - from); }
  /// Tick values: 1, 2 and 5 times powers of ten inside the range.
  std::vector<double> ticks() const {
    std::vector<double> out;
    for (int e = int(std::floor(lo)) - 1; e <= int(std::ceil(hi)); ++e)
      for (double m : {1.0, 2.0, 5.0}) {
        double v = m * std::pow(10.0, e);
        double l = std::log10(v);
        if (l >= lo && l <= hi) out.push_back(v);
      }
    return out;
  }
};

LogAxis make_axis(double min_value, double max_value, double from, double to) {
  double lo = std::log10(min_value), hi = std::log10(max_value);
  double pad = std::max(0.05 * (hi - lo), 0.05);
  return {lo - pad, hi + pad, from, to};
}

std::string tick_label(double v) {
  if (v >= 1e6) return format_number("%gM", v / 1e6);
  if (v >= 1e3) return format_number("%gk", v / 1e3);
  return format_number("%g", v);
}

/// "$123.4k": dollars, short.
std::string tick_label_money(double usd) {
  if (usd >= 1e6) return format_number("%.2fM", usd / 1e6);
  if (usd >= 1e3) return format_number("%.1fk", usd / 1e3);
  return format_number("%.0f", usd);
}

std::string front_label(const ClusterSpec& inventory, const CandidateResult& r) {
  const PlanKey& k = r.plan.key;
  return shape_label(inventory, counts_of(inventory, k.node_order)) + " (tp" + std::to_string(k.tp) + " dp" +
         std::to_string(k.dp) + " pp" + std::to_string(k.pp) + " mbs" + std::to_string(k.mbs) + ")";
}

}  // namespace

void ParetoPlot::consume(std::vector<CandidateResult>& chunk, const std::vector<EnumerationIndex>&) {
  for (const CandidateResult& r : chunk) {
    const PlanEstimate& e = r.estimate;
    if (!(e.step_time_s > 0 && e.train_cost_usd > 0)) continue;
    auto x = static_cast<int64_t>(std::floor(std::log10(e.step_time_s) * kCellsPerDecade));
    auto y = static_cast<int64_t>(std::floor(std::log10(e.train_cost_usd) * kCellsPerDecade));
    uint64_t cell = (uint64_t(uint32_t(int32_t(x))) << 32) | uint32_t(int32_t(y));
    dots_.emplace(cell, Dot{e.step_time_s, e.train_cost_usd, e.memory.is_oom});
  }
}

std::string ParetoPlot::svg(const ClusterSpec& inventory, const std::vector<CandidateResult>& front,
                            const std::string& title) const {
  // Draw dots in a fixed order (their cells), not the hash map's.
  std::map<uint64_t, Dot> ordered(dots_.begin(), dots_.end());
  double t_min = 1e300, t_max = 0, c_min = 1e300, c_max = 0;
  auto extend = [&](double t, double c) {
    t_min = std::min(t_min, t), t_max = std::max(t_max, t);
    c_min = std::min(c_min, c), c_max = std::max(c_max, c);
  };
  for (const auto& [cell, dot] : ordered) extend(dot.step_time_s, dot.cost_usd);
  for (const CandidateResult& r : front) extend(r.estimate.step_time_s, r.estimate.train_cost_usd);
  if (t_max == 0) extend(1, 1);
  const LogAxis x = make_axis(t_min, t_max, kLeft, kWidth - kRight);
  const LogAxis y = make_axis(c_min, c_max, kHeight - kBottom, kTop);

  std::ostringstream out;
  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << kHeight
      << "\" viewBox=\"0 0 " << kWidth << ' ' << kHeight << "\" font-family=\"sans-serif\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << kWidth / 2 << "\" y=\"28\" text-anchor=\"middle\" font-size=\"16\">" << xml_escape(title)
      << "</text>\n";
  // Grid and axes.
  for (double v : x.ticks()) {
    std::string px = format_number("%.1f", x.pixel(v));
    out << "<line x1=\"" << px << "\" y1=\"" << kTop << "\" x2=\"" << px << "\" y2=\"" << kHeight - kBottom
        << "\" stroke=\"#eee\"/>\n<text x=\"" << px << "\" y=\"" << kHeight - kBottom + 16
        << "\" text-anchor=\"middle\" font-size=\"11\">" << tick_label(v) << "</text>\n";
  }
  for (double v : y.ticks()) {
    std::string py = format_number("%.1f", y.pixel(v));
    out << "<line x1=\"" << kLeft << "\" y1=\"" << py << "\" x2=\"" << kWidth - kRight << "\" y2=\"" << py
        << "\" stroke=\"#eee\"/>\n<text x=\"" << kLeft - 6 << "\" y=\"" << py
        << "\" text-anchor=\"end\" dominant-baseline=\"middle\" font-size=\"11\">$" << tick_label(v)
        << "</text>\n";
  }
  out << "<rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << kWidth - kLeft - kRight
      << "\" height=\"" << kHeight - kTop - kBottom << "\" fill=\"none\" stroke=\"#444\"/>\n"
      << "<text x=\"" << (kLeft + kWidth - kRight) / 2 << "\" y=\"" << kHeight - 18
      << "\" text-anchor=\"middle\" font-size=\"13\">time per step (s, log scale)</text>\n"
      << "<text transform=\"translate(20," << (kTop + kHeight - kBottom) / 2
      << ") rotate(-90)\" text-anchor=\"middle\" font-size=\"13\">training cost (USD, log scale)</text>\n";
  // Every candidate, faint.
  out << "<g fill-opacity=\"0.25\">\n";
  for (const auto& [cell, dot] : ordered)
    out << "<circle cx=\"" << format_number("%.1f", x.pixel(dot.step_time_s)) << "\" cy=\""
        << format_number("%.1f", y.pixel(dot.cost_usd)) << "\" r=\"1.6\" fill=\"" << (dot.oom ? "#d62728" : "#7f7f7f")
        << "\"/>\n";
  out << "</g>\n";
  // The front: a line through its plans, cheapest first, each numbered; hollow where the
  // plan runs out of memory.
  if (!front.empty()) {
    out << "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\" points=\"";
    for (const CandidateResult& r : front)
      out << format_number("%.1f", x.pixel(r.estimate.step_time_s)) << ',' << format_number("%.1f", y.pixel(r.estimate.train_cost_usd))
          << ' ';
    out << "\"/>\n";
    for (size_t i = 0; i < front.size(); ++i) {
      const CandidateResult& r = front[i];
      double px = x.pixel(r.estimate.step_time_s), py = y.pixel(r.estimate.train_cost_usd);
      bool oom = r.estimate.memory.is_oom;
      out << "<circle cx=\"" << format_number("%.1f", px) << "\" cy=\"" << format_number("%.1f", py) << "\" r=\"3.5\" fill=\""
          << (oom ? "white" : "#1f77b4") << "\" stroke=\"#1f77b4\"><title>" << xml_escape(front_label(inventory, r))
          << ": " << format_number("%.4f", r.estimate.step_time_s) << " s/step, $" << format_number("%.0f", r.estimate.train_cost_usd)
          << "</title></circle>\n";
      // Alternate sides so that neighbours' numbers do not overlap.
      bool right = i % 2 == 0;
      out << "<text x=\"" << format_number("%.1f", px + (right ? 6 : -6)) << "\" y=\"" << format_number("%.1f", py + (right ? -4 : 11))
          << "\" font-size=\"10\" fill=\"#1f77b4\" text-anchor=\"" << (right ? "start" : "end") << "\">" << i + 1
          << "</text>\n";
    }
  }
  // Legend.
  double lx = kWidth - kRight - 220, ly = kTop + 16;
  out << "<g font-size=\"11\"><rect x=\"" << lx - 8 << "\" y=\"" << ly - 12
      << "\" width=\"218\" height=\"72\" fill=\"white\" stroke=\"#ccc\"/>\n"
      << "<line x1=\"" << lx << "\" y1=\"" << ly << "\" x2=\"" << lx + 20 << "\" y2=\"" << ly
      << "\" stroke=\"#1f77b4\" stroke-width=\"2\"/><text x=\"" << lx + 26 << "\" y=\"" << ly + 4
      << "\">pareto front (" << front.size() << " plans)</text>\n"
      << "<circle cx=\"" << lx + 10 << "\" cy=\"" << ly + 16 << "\" r=\"3.5\" fill=\"white\" stroke=\"#1f77b4\"/>"
      << "<text x=\"" << lx + 26 << "\" y=\"" << ly + 20 << "\">front plan, out of memory</text>\n"
      << "<circle cx=\"" << lx + 10 << "\" cy=\"" << ly + 32 << "\" r=\"3\" fill=\"#7f7f7f\"/><text x=\""
      << lx + 26 << "\" y=\"" << ly + 36 << "\">candidate plan</text>\n"
      << "<circle cx=\"" << lx + 10 << "\" cy=\"" << ly + 48 << "\" r=\"3\" fill=\"#d62728\"/><text x=\""
      << lx + 26 << "\" y=\"" << ly + 52 << "\">candidate, out of memory</text></g>\n";
  // The front plans, listed.
  double tx = kWidth - kRight + 24, ty = kTop + 4;
  out << "<g font-size=\"11\"><text x=\"" << tx << "\" y=\"" << ty << "\" font-weight=\"bold\">"
      << "#  cluster (tp dp pp mbs): s/step, training $</text>\n";
  for (size_t i = 0; i < front.size() && i < kListedPlans; ++i) {
    const CandidateResult& r = front[i];
    out << "<text x=\"" << tx << "\" y=\"" << ty + 14 * (i + 1) << "\">" << i + 1 << "  "
        << xml_escape(front_label(inventory, r)) << ": " << format_number("%.3f", r.estimate.step_time_s) << ", $"
        << tick_label_money(r.estimate.train_cost_usd) << (r.estimate.memory.is_oom ? " (OOM)" : "") << "</text>\n";
  }
  if (front.size() > kListedPlans)
    out << "<text x=\"" << tx << "\" y=\"" << ty + 14 * (kListedPlans + 1) << "\">... " << front.size() - kListedPlans
        << " more in the front CSV</text>\n";
  out << "</g>\n";
  out << "</svg>\n";
  return out.str();
}

}  // namespace fasop
