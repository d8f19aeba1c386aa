#include "report/pareto_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <sstream>

#include "report/svg_text.h"
#include "search/cluster_shapes.h"
#include "specs/plan_degrees.h"

namespace fasop {
namespace {

// The finest grid the sink counts candidates on: cells per decade of either axis. A window a
// few hundredths of a decade wide (llama2-70b's front spans 7% in cost) still gets several
// cells per pixel.
constexpr double kFinestPerDecade = 16384;
// More cells than this and the grid is coarsened by half on each axis.
constexpr size_t kMaxCells = size_t(1) << 18;
// The plot on the left, the list of front plans on the right; notes under the plot.
constexpr double kLeft = 90, kPlotRight = 820, kTop = 60, kPlotBottom = 620;
constexpr double kListWidth = 420;  // at least; wider where the list's longest line needs it
constexpr double kNoteLine = 16;
constexpr size_t kListedPlans = 40;
// The density raster: squares of kCell pixels; more candidates in one, a darker square.
constexpr int kCell = 4;
// Runnable candidates beyond the front's extremes by more than this factor, or by more than the
// square of the front's own ratio (max / min) where that is larger, are left off the axes (and
// counted): the front then spans at least a third of each axis, or a fifth where the factor
// decides.
constexpr double kContextFactor = 1.5;
// The numbers on the front's points.
constexpr double kLabelFont = 10, kLabelHeight = 10, kMarkerRadius = 3.5;
// The legend, in the plot's upper right corner.
constexpr double kLegendWidth = 240, kLegendX = kPlotRight - kLegendWidth - 8, kLegendY = kTop + 8;

/// A log10 axis over [lo, hi] (in log10 units) mapped to pixels [from, to].
struct LogAxis {
  double lo, hi, from, to;
  double at_log(double l) const { return from + (l - lo) / (hi - lo) * (to - from); }
  double pixel(double value) const { return at_log(std::log10(value)); }
  /// Tick values: 1, 2 and 5 times powers of ten where the range holds at least four of them;
  /// else round steps of a linear scale, about six.
  std::vector<double> ticks() const {
    std::vector<double> out;
    for (int e = int(std::floor(lo)) - 1; e <= int(std::ceil(hi)); ++e)
      for (double m : {1.0, 2.0, 5.0}) {
        double v = m * std::pow(10.0, e);
        double l = std::log10(v);
        if (l >= lo && l <= hi) out.push_back(v);
      }
    if (out.size() >= 4) return out;
    const double a = std::pow(10.0, lo), b = std::pow(10.0, hi);
    const double step = round_tick_step(b - a, 6);
    out.clear();
    for (double k = std::ceil(a / step); k * step <= b; ++k) out.push_back(k * step);
    return out;
  }
};

/// `ticks` (ascending) with, where none lies in [lo, hi] (the front's span on that axis), the
/// span's geometric middle rounded to two significant digits, in its place.
std::vector<double> with_front_tick(std::vector<double> ticks, double lo, double hi) {
  if (!(lo <= hi) || lo <= 0) return ticks;
  for (double t : ticks)
    if (t >= lo && t <= hi) return ticks;
  const double middle = std::sqrt(lo * hi);
  const double unit = std::pow(10.0, std::floor(std::log10(middle)) - 1);
  double tick = std::round(middle / unit) * unit;
  if (tick < lo || tick > hi) tick = middle;
  ticks.insert(std::upper_bound(ticks.begin(), ticks.end(), tick), tick);
  return ticks;
}

/// The axis over data [lo_value, hi_value] with a margin of 5% of its range (a small one for a
/// narrow range; a twentieth of a decade about a single value).
LogAxis make_axis(double lo_value, double hi_value, double from, double to) {
  double lo = std::log10(lo_value), hi = std::log10(hi_value);
  double pad = hi > lo ? std::max(0.05 * (hi - lo), 0.002) : 0.05;
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

/// Seconds with three digits, whole seconds from 1,000 on.
std::string short_seconds(double s) { return s >= 1000 ? format_number("%.0f", s) : format_number("%.3g", s); }

/// 12,345.
std::string with_commas(size_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string front_label(const ClusterSpec& inventory, const CandidateResult& r) {
  const PlanKey& k = r.plan.key;
  std::string beyond;  // " cp2 ep8": the degrees above 1 beyond tp, dp and pp
  for (const auto& [name, value] : context_expert_degrees(k)) beyond += " " + name + std::to_string(value);
  if (k.moe_dispatcher != MoeDispatcher::kAlltoall) beyond += std::string(" ") + moe_dispatcher_name(k.moe_dispatcher);
  return shape_label(inventory, counts_of(inventory, k.node_order)) + " (tp" + std::to_string(k.tp) + " dp" +
         std::to_string(k.dp) + " pp" + std::to_string(k.pp) + beyond + " mbs" + std::to_string(k.mbs) + ")";
}

bool plottable(const PlanEstimate& e) { return e.step_time_s > 0 && e.train_cost_usd > 0; }

int32_t halve(int32_t v) { return v >= 0 ? v / 2 : -((1 - v) / 2); }  // floor(v / 2)

uint64_t cell_key(int32_t x, int32_t y) { return (uint64_t(uint32_t(x)) << 32) | uint32_t(y); }
int32_t cell_x(uint64_t key) { return int32_t(uint32_t(key >> 32)); }
int32_t cell_y(uint64_t key) { return int32_t(uint32_t(key)); }

struct Axes {
  LogAxis x, y;
};

Axes axes_of(const ParetoPlotLayout& layout) {
  return {make_axis(layout.t_lo, layout.t_hi, kLeft, kPlotRight), make_axis(layout.c_lo, layout.c_hi, kPlotBottom, kTop)};
}

/// The legend's box, and its lines: (kind, text), kind 0 the front's line, 1 a hollow point, 2
/// the raster.
std::vector<std::pair<int, std::string>> legend_lines(const ParetoPlotLayout& layout, size_t front_plans) {
  std::vector<std::pair<int, std::string>> lines = {
      {0, "pareto front (" + with_commas(front_plans) + (front_plans == 1 ? " plan)" : " plans)")}};
  if (layout.front_oom > 0) lines.push_back({1, "front plan, out of memory"});
  lines.push_back({2, "candidates that fit (darker: more)"});
  return lines;
}

PixelBox legend_box(size_t lines) { return {kLegendX, kLegendY, kLegendWidth, 8 + 16.0 * double(lines)}; }

/// Places the numbers of the first kListedPlans front points: each in the first free spot of
/// rings about its point (below left first: the other candidates lie above and to the right
/// of the front), else the nearest free spot of the plot; never over another number, a front
/// point or the legend, never outside the plot.
std::vector<ParetoPlotLayout::Label> place_labels(const std::vector<std::pair<double, double>>& points,
                                                  const PixelBox& legend) {
  const PixelBox plot{kLeft + 1, kTop + 1, kPlotRight - kLeft - 2, kPlotBottom - kTop - 2};
  std::vector<PixelBox> taken = {legend};
  for (const auto& [px, py] : points)
    taken.push_back({px - kMarkerRadius - 1, py - kMarkerRadius - 1, 2 * kMarkerRadius + 2, 2 * kMarkerRadius + 2});
  auto free = [&](const PixelBox& b) {
    if (b.x < plot.x || b.y < plot.y || b.x + b.w > plot.x + plot.w || b.y + b.h > plot.y + plot.h) return false;
    for (const PixelBox& t : taken)
      if (b.overlaps(t)) return false;
    return true;
  };
  // Directions, below left first, then round both ways from it.
  std::vector<std::pair<double, double>> directions;
  const double pi = std::acos(-1.0);
  for (int k = 0; k < 16; ++k) {
    int turn = (k + 1) / 2 * (k % 2 ? 1 : -1);  // 0, 1, -1, 2, -2, ...
    double angle = 0.75 * pi + turn * pi / 8;    // 135 degrees: left and down (y grows down)
    directions.push_back({std::cos(angle), std::sin(angle)});
  }
  std::vector<ParetoPlotLayout::Label> labels;
  const size_t n = std::min(points.size(), kListedPlans);
  for (size_t i = 0; i < n; ++i) {
    const auto [px, py] = points[i];
    if (px < plot.x - kMarkerRadius - 1) continue;  // not on the plot (no time or cost)
    const double w = text_width(std::to_string(i + 1), kLabelFont) + 2, h = kLabelHeight;
    bool placed = false;
    PixelBox box;
    for (double gap : {1.0, 4.0, 8.0, 13.0, 19.0, 26.0, 35.0, 46.0, 60.0, 78.0, 100.0}) {
      // Near the point, any side; further out, only down, left or between (no candidate the
      // constraints admit lies both faster and cheaper than a front plan), so that leader
      // lines run side by side.
      for (size_t k = 0; k < (gap < 8 ? directions.size() : 5); ++k) {
        const auto [dx, dy] = directions[k];
        const double reach = kMarkerRadius + gap + std::abs(dx) * w / 2 + std::abs(dy) * h / 2;
        box = {px + dx * reach - w / 2, py + dy * reach - h / 2, w, h};
        if (free(box)) {
          placed = true;
          break;
        }
      }
      if (placed) break;
    }
    if (!placed) {  // the nearest free spot anywhere on the plot, on a 3-pixel grid
      double best = 1e300;
      for (double y = plot.y; y + h <= plot.y + plot.h; y += 3)
        for (double x = plot.x; x + w <= plot.x + plot.w; x += 3) {
          const double d = std::hypot(x + w / 2 - px, y + h / 2 - py);
          PixelBox b{x, y, w, h};
          if (d < best && free(b)) best = d, box = b, placed = true;
        }
    }
    if (!placed) continue;  // the plot is full: the point goes unnumbered (it is still listed)
    taken.push_back(box);
    const double cx = std::clamp(px, box.x, box.x + box.w), cy = std::clamp(py, box.y, box.y + box.h);
    labels.push_back({i, box, std::hypot(cx - px, cy - py) > kMarkerRadius + 5});
  }
  return labels;
}

}  // namespace

void ParetoPlot::consume(std::vector<CandidateResult>& chunk, const std::vector<EnumerationIndex>&) {
  for (const CandidateResult& r : chunk) {
    const PlanEstimate& e = r.estimate;
    if (!plottable(e)) continue;
    const double t = e.step_time_s, c = e.train_cost_usd;
    if (e.memory.is_oom) {
      if (oom_++ == 0) oom_t_lo_ = oom_t_hi_ = t, oom_c_lo_ = oom_c_hi_ = c;
      oom_t_lo_ = std::min(oom_t_lo_, t), oom_t_hi_ = std::max(oom_t_hi_, t);
      oom_c_lo_ = std::min(oom_c_lo_, c), oom_c_hi_ = std::max(oom_c_hi_, c);
      continue;
    }
    if (runnable_++ == 0) t_lo_ = t_hi_ = t, c_lo_ = c_hi_ = c;
    t_lo_ = std::min(t_lo_, t), t_hi_ = std::max(t_hi_, t);
    c_lo_ = std::min(c_lo_, c), c_hi_ = std::max(c_hi_, c);
    const double per_cell = std::ldexp(1.0, shift_) / kFinestPerDecade;  // decades
    auto x = static_cast<int32_t>(std::floor(std::log10(t) / per_cell));
    auto y = static_cast<int32_t>(std::floor(std::log10(c) / per_cell));
    ++cells_[cell_key(x, y)];
    if (cells_.size() > kMaxCells) coarsen();
  }
}

void ParetoPlot::coarsen() {
  while (cells_.size() > kMaxCells / 2) {
    std::unordered_map<uint64_t, uint32_t> coarser;
    for (const auto& [key, count] : cells_) coarser[cell_key(halve(cell_x(key)), halve(cell_y(key)))] += count;
    cells_ = std::move(coarser);
    ++shift_;
  }
}

ParetoPlotLayout ParetoPlot::layout(const std::vector<CandidateResult>& front) const {
  ParetoPlotLayout out;
  out.runnable = runnable_, out.oom = oom_;
  out.runnable_t_hi = t_hi_, out.runnable_c_hi = c_hi_;
  out.oom_t_lo = oom_t_lo_, out.oom_t_hi = oom_t_hi_, out.oom_c_lo = oom_c_lo_, out.oom_c_hi = oom_c_hi_;
  double &ft_lo = out.front_t_lo, &ft_hi = out.front_t_hi, &fc_lo = out.front_c_lo, &fc_hi = out.front_c_hi;
  for (const CandidateResult& r : front) {
    if (!plottable(r.estimate)) continue;
    ft_lo = std::min(ft_lo, r.estimate.step_time_s), ft_hi = std::max(ft_hi, r.estimate.step_time_s);
    fc_lo = std::min(fc_lo, r.estimate.train_cost_usd), fc_hi = std::max(fc_hi, r.estimate.train_cost_usd);
    out.front_oom += r.estimate.memory.is_oom ? 1 : 0;
  }
  // One axis: the runnable candidates' range, cut to the window about the front, which it
  // always covers.
  auto fit = [&](double f_lo, double f_hi, double r_lo, double r_hi, double& lo, double& hi) {
    if (f_hi == 0) {  // no front to show
      if (runnable_ > 0) lo = r_lo, hi = r_hi;
      return;
    }
    const double factor = std::max(kContextFactor, (f_hi / f_lo) * (f_hi / f_lo));
    lo = f_lo, hi = f_hi;
    if (runnable_ > 0) lo = std::min(lo, std::max(r_lo, f_lo / factor)), hi = std::max(hi, std::min(r_hi, f_hi * factor));
  };
  fit(ft_lo, ft_hi, t_lo_, t_hi_, out.t_lo, out.t_hi);
  fit(fc_lo, fc_hi, c_lo_, c_hi_, out.c_lo, out.c_hi);
  // Runnable candidates whose cell lies wholly outside the axes' data range.
  const double per_cell = std::ldexp(1.0, shift_) / kFinestPerDecade;
  const double tl = std::log10(out.t_lo), th = std::log10(out.t_hi), cl = std::log10(out.c_lo), ch = std::log10(out.c_hi);
  for (const auto& [key, count] : cells_) {
    const double x0 = cell_x(key) * per_cell, y0 = cell_y(key) * per_cell;
    if (x0 > th || x0 + per_cell < tl || y0 > ch || y0 + per_cell < cl) out.runnable_beyond += count;
  }
  if (out.oom > 0) {
    std::string note = with_commas(out.oom) + " candidate" + (out.oom == 1 ? "" : "s") + " out of memory, not drawn: " +
                       short_seconds(out.oom_t_lo) + "-" + short_seconds(out.oom_t_hi) + " s/step, $" +
                       tick_label_money(out.oom_c_lo) + "-$" + tick_label_money(out.oom_c_hi);
    if (out.front_oom > 0)
      note += " (" + with_commas(out.front_oom) + " of them on the front, drawn hollow: the front keeps plans out of memory)";
    out.notes.push_back(note);
  }
  if (out.runnable_beyond > 0)
    out.notes.push_back(with_commas(out.runnable_beyond) + " candidate" + (out.runnable_beyond == 1 ? "" : "s") +
                        " that fit lie beyond the axes, which keep to the front's neighbourhood; not drawn: up to " +
                        short_seconds(out.runnable_t_hi) + " s/step, $" + tick_label_money(out.runnable_c_hi));
  // The numbers on the front's points.
  const Axes axes = axes_of(out);
  std::vector<std::pair<double, double>> points;
  for (const CandidateResult& r : front)
    points.push_back(plottable(r.estimate)
                         ? std::pair{axes.x.pixel(r.estimate.step_time_s), axes.y.pixel(r.estimate.train_cost_usd)}
                         : std::pair{-1e9, -1e9});
  out.labels = place_labels(points, legend_box(legend_lines(out, front.size()).size()));
  return out;
}

std::string ParetoPlot::svg(const ClusterSpec& inventory, const std::vector<CandidateResult>& front,
                            const std::string& title, const PlanConstraints& limits) const {
  ParetoPlotLayout layout = this->layout(front);
  const Axes axes = axes_of(layout);
  const LogAxis &x = axes.x, &y = axes.y;
  // The limits: a dashed line where it crosses the axes, else a note.
  std::string limit_lines;
  auto limit = [&](double value, const LogAxis& axis, bool vertical, const std::string& words) {
    if (!(value < std::numeric_limits<double>::infinity())) return;
    const double l = std::log10(value);
    if (l < axis.lo || l > axis.hi) {
      layout.notes.push_back(words + (l > axis.hi ? " lies beyond the axes (every plan drawn is within it)"
                                                  : " lies below the axes (no plan drawn is within it)"));
      return;
    }
    const double at = axis.at_log(l);
    const std::string p = format_number("%.1f", at);
    limit_lines += vertical ? "<line x1=\"" + p + "\" y1=\"" + format_number("%.0f", kTop) + "\" x2=\"" + p + "\" y2=\"" +
                                  format_number("%.0f", kPlotBottom) + "\""
                            : "<line x1=\"" + format_number("%.0f", kLeft) + "\" y1=\"" + p + "\" x2=\"" +
                                  format_number("%.0f", kPlotRight) + "\" y2=\"" + p + "\"";
    limit_lines += " stroke=\"#c33\" stroke-dasharray=\"6 4\"/>\n";
    limit_lines += vertical ? "<text x=\"" + format_number("%.1f", at - 4) + "\" y=\"" + format_number("%.0f", kTop + 14) +
                                  "\" text-anchor=\"end\" font-size=\"11\" fill=\"#c33\">" + xml_escape(words) + "</text>\n"
                            : "<text x=\"" + format_number("%.0f", kLeft + 6) + "\" y=\"" + format_number("%.1f", at - 4) +
                                  "\" font-size=\"11\" fill=\"#c33\">" + xml_escape(words) + "</text>\n";
  };
  limit(limits.max_step_time_s, x, true, "step limit " + short_seconds(limits.max_step_time_s) + " s");
  limit(limits.max_cost_usd, y, false, "cost limit $" + tick_label_money(limits.max_cost_usd));
  const double height = kPlotBottom + 60 + kNoteLine * double(layout.notes.size());
  // The list of front plans beside the plot: as wide as its longest line.
  std::vector<std::string> listed;
  listed.push_back("#  cluster (tp dp pp mbs): s/step, training $");
  for (size_t i = 0; i < front.size() && i < kListedPlans; ++i) {
    const CandidateResult& r = front[i];
    listed.push_back(std::to_string(i + 1) + "  " + front_label(inventory, r) + ": " +
                     format_number("%.3f", r.estimate.step_time_s) + ", $" + tick_label_money(r.estimate.train_cost_usd) +
                     (r.estimate.memory.is_oom ? " (OOM)" : ""));
  }
  if (front.size() > kListedPlans)
    listed.push_back("... " + with_commas(front.size() - kListedPlans) + " more in the front CSV (unnumbered on the plot)");
  double list_width = 0;
  for (size_t i = 0; i < listed.size(); ++i) list_width = std::max(list_width, text_width(listed[i], 11) * (i == 0 ? 1.1 : 1.0));
  const double width = kPlotRight + std::max(kListWidth, list_width + 48);
  const double title_font = std::min(16.0, (width - 20) / text_width(title, 1));

  std::ostringstream out;
  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << width << ' ' << height << "\" font-family=\"sans-serif\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << format_number("%.0f", width / 2) << "\" y=\"28\" text-anchor=\"middle\" font-size=\"" << format_number("%.1f", title_font) << "\">" << xml_escape(title)
      << "</text>\n";
  // Grid and axes; a tick's label is left out where it would touch the previous one. Each axis
  // labels the front's span: a round value inside it where no tick falls there.
  const std::vector<double> x_ticks = with_front_tick(x.ticks(), layout.front_t_lo, layout.front_t_hi);
  const std::vector<double> y_ticks = with_front_tick(y.ticks(), layout.front_c_lo, layout.front_c_hi);
  double last_right = -1e300;
  for (double v : x_ticks) {
    const double px = x.pixel(v);
    const std::string label = tick_label(v);
    const double half = text_width(label, 11) / 2;
    out << "<line x1=\"" << format_number("%.1f", px) << "\" y1=\"" << kTop << "\" x2=\"" << format_number("%.1f", px)
        << "\" y2=\"" << kPlotBottom << "\" stroke=\"#eee\"/>\n";
    if (px - half < last_right + 4) continue;
    last_right = px + half;
    out << "<text x=\"" << format_number("%.1f", px) << "\" y=\"" << kPlotBottom + 16
        << "\" text-anchor=\"middle\" font-size=\"11\">" << label << "</text>\n";
  }
  double last_top = 1e300;
  for (double v : y_ticks) {
    const double py = y.pixel(v);
    out << "<line x1=\"" << kLeft << "\" y1=\"" << format_number("%.1f", py) << "\" x2=\"" << kPlotRight << "\" y2=\""
        << format_number("%.1f", py) << "\" stroke=\"#eee\"/>\n";
    if (py + 7 > last_top - 2) continue;
    last_top = py - 7;
    out << "<text x=\"" << kLeft - 6 << "\" y=\"" << format_number("%.1f", py)
        << "\" text-anchor=\"end\" dominant-baseline=\"middle\" font-size=\"11\">$" << tick_label(v) << "</text>\n";
  }
  out << limit_lines << "<rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << kPlotRight - kLeft << "\" height=\""
      << kPlotBottom - kTop << "\" fill=\"none\" stroke=\"#444\"/>\n"
      << "<text x=\"" << (kLeft + kPlotRight) / 2 << "\" y=\"" << kPlotBottom + 38
      << "\" text-anchor=\"middle\" font-size=\"13\">time per step (s, log scale)</text>\n"
      << "<text transform=\"translate(20," << (kTop + kPlotBottom) / 2
      << ") rotate(-90)\" text-anchor=\"middle\" font-size=\"13\">training cost (USD, log scale)</text>\n";

  // The runnable candidates on the axes, as a density raster: per square of kCell pixels, its
  // count, drawn at one of four shades; each shade one path of runs along the rows.
  const int nx = int(std::ceil((kPlotRight - kLeft) / kCell)), ny = int(std::ceil((kPlotBottom - kTop) / kCell));
  std::vector<uint32_t> grid(size_t(nx) * ny, 0);
  const double per_cell = std::ldexp(1.0, shift_) / kFinestPerDecade;
  const double tl = std::log10(layout.t_lo), th = std::log10(layout.t_hi), cl = std::log10(layout.c_lo),
               ch = std::log10(layout.c_hi);
  for (const auto& [key, count] : cells_) {
    const double x0 = cell_x(key) * per_cell, y0 = cell_y(key) * per_cell;
    if (x0 > th || x0 + per_cell < tl || y0 > ch || y0 + per_cell < cl) continue;  // counted in the notes
    const double lx = std::clamp(x0 + per_cell / 2, tl, th), ly = std::clamp(y0 + per_cell / 2, cl, ch);
    const int i = std::clamp(int((x.at_log(lx) - kLeft) / kCell), 0, nx - 1);
    const int j = std::clamp(int((y.at_log(ly) - kTop) / kCell), 0, ny - 1);
    grid[size_t(j) * nx + i] += count;
  }
  auto shade = [](uint32_t n) { return n == 0 ? 0 : n == 1 ? 1 : n <= 4 ? 2 : n <= 16 ? 3 : 4; };
  const char* opacity[5] = {"", "0.22", "0.38", "0.58", "0.85"};
  for (int level = 1; level <= 4; ++level) {
    std::string d;
    double at_x = 0, at_y = 0;  // the last subpath's start: moves are relative to it
    for (int j = 0; j < ny; ++j)
      for (int i = 0; i < nx;) {
        if (shade(grid[size_t(j) * nx + i]) != level) {
          ++i;
          continue;
        }
        int run = 1;
        while (i + run < nx && shade(grid[size_t(j) * nx + i + run]) == level) ++run;
        const double px = kLeft + i * kCell, py = kTop + j * kCell;
        d += (d.empty() ? "M" + format_number("%g", px) + " " + format_number("%g", py)
                        : "m" + format_number("%g", px - at_x) + " " + format_number("%g", py - at_y)) +
             "h" + std::to_string(run * kCell) + "v" + std::to_string(kCell) + "h-" + std::to_string(run * kCell) + "z";
        at_x = px, at_y = py;
        i += run;
      }
    if (!d.empty()) out << "<path fill=\"#6f6f6f\" fill-opacity=\"" << opacity[level] << "\" d=\"" << d << "\"/>\n";
  }

  // The front: a line through its plans, cheapest first, each numbered; hollow where the
  // plan runs out of memory.
  if (!front.empty()) {
    out << "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\" points=\"";
    for (const CandidateResult& r : front)
      if (plottable(r.estimate))
        out << format_number("%.1f", x.pixel(r.estimate.step_time_s)) << ','
            << format_number("%.1f", y.pixel(r.estimate.train_cost_usd)) << ' ';
    out << "\"/>\n";
    for (const ParetoPlotLayout::Label& label : layout.labels) {
      const CandidateResult& r = front[label.plan];
      const double px = x.pixel(r.estimate.step_time_s), py = y.pixel(r.estimate.train_cost_usd);
      const PixelBox& b = label.box;
      if (label.leader) {
        const double cx = std::clamp(px, b.x, b.x + b.w), cy = std::clamp(py, b.y, b.y + b.h);
        out << "<line x1=\"" << format_number("%.1f", px) << "\" y1=\"" << format_number("%.1f", py) << "\" x2=\""
            << format_number("%.1f", cx) << "\" y2=\"" << format_number("%.1f", cy)
            << "\" stroke=\"#1f77b4\" stroke-width=\"0.6\"/>\n";
      }
      out << "<text x=\"" << format_number("%.1f", b.x + b.w / 2) << "\" y=\"" << format_number("%.1f", b.y + 8.6)
          << "\" font-size=\"" << kLabelFont << "\" fill=\"#1f77b4\" text-anchor=\"middle\">" << label.plan + 1
          << "</text>\n";
    }
    for (const CandidateResult& r : front) {
      if (!plottable(r.estimate)) continue;
      const double px = x.pixel(r.estimate.step_time_s), py = y.pixel(r.estimate.train_cost_usd);
      const bool oom = r.estimate.memory.is_oom;
      out << "<circle cx=\"" << format_number("%.1f", px) << "\" cy=\"" << format_number("%.1f", py) << "\" r=\""
          << kMarkerRadius << "\" fill=\"" << (oom ? "white" : "#1f77b4") << "\" stroke=\"#1f77b4\"><title>"
          << xml_escape(front_label(inventory, r)) << ": " << format_number("%.4f", r.estimate.step_time_s)
          << " s/step, $" << format_number("%.0f", r.estimate.train_cost_usd) << (oom ? ", out of memory" : "")
          << "</title></circle>\n";
    }
  }
  // Legend.
  const auto lines = legend_lines(layout, front.size());
  const PixelBox legend = legend_box(lines.size());
  out << "<g font-size=\"11\"><rect x=\"" << legend.x << "\" y=\"" << legend.y << "\" width=\"" << legend.w
      << "\" height=\"" << legend.h << "\" fill=\"white\" stroke=\"#ccc\"/>\n";
  for (size_t i = 0; i < lines.size(); ++i) {
    const double lx = legend.x + 8, ly = legend.y + 12 + 16 * double(i);
    if (lines[i].first == 0)
      out << "<line x1=\"" << lx << "\" y1=\"" << ly << "\" x2=\"" << lx + 20 << "\" y2=\"" << ly
          << "\" stroke=\"#1f77b4\" stroke-width=\"2\"/>";
    else if (lines[i].first == 1)
      out << "<circle cx=\"" << lx + 10 << "\" cy=\"" << ly << "\" r=\"3.5\" fill=\"white\" stroke=\"#1f77b4\"/>";
    else
      for (int k = 1; k <= 4; ++k)
        out << "<rect x=\"" << lx + (k - 1) * 5 << "\" y=\"" << ly - 2 << "\" width=\"4\" height=\"4\" fill=\"#6f6f6f\" "
            << "fill-opacity=\"" << opacity[k] << "\"/>";
    out << "<text x=\"" << lx + 26 << "\" y=\"" << ly + 4 << "\">" << xml_escape(lines[i].second) << "</text>\n";
  }
  out << "</g>\n";
  // What is not drawn.
  for (size_t i = 0; i < layout.notes.size(); ++i)
    out << "<text x=\"" << kLeft << "\" y=\"" << kPlotBottom + 60 + kNoteLine * double(i) - 4
        << "\" font-size=\"11\" fill=\"#555\">" << xml_escape(layout.notes[i]) << "</text>\n";
  // The front plans, listed.
  const double tx = kPlotRight + 24, ty = kTop + 4;
  out << "<g font-size=\"11\">";
  for (size_t i = 0; i < listed.size(); ++i)
    out << "<text x=\"" << tx << "\" y=\"" << ty + 14 * double(i) << "\"" << (i == 0 ? " font-weight=\"bold\"" : "")
        << ">" << xml_escape(listed[i]) << "</text>\n";
  out << "</g>\n";
  out << "</svg>\n";
  return out.str();
}

}  // namespace fasop
