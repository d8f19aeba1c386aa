#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "search/pareto_search.h"
#include "specs/cluster_spec.h"

namespace fasop {

/// A rectangle in the picture's pixels (y down).
struct PixelBox {
  double x = 0, y = 0, w = 0, h = 0;
  bool overlaps(const PixelBox& o) const { return x < o.x + o.w && o.x < x + w && y < o.y + o.h && o.y < y + h; }
};

/// What the front picture shows and what it leaves out, worked out before drawing.
struct ParetoPlotLayout {
  /// The data the axes span (seconds per step, USD), before the axes' margin: the runnable
  /// candidates (those not out of memory) and the front, cut to a window about the front where
  /// runnable candidates reach much further (see ParetoPlot).
  double t_lo = 1, t_hi = 1, c_lo = 1, c_hi = 1;
  size_t runnable = 0;         ///< candidates that fit in memory
  size_t runnable_beyond = 0;  ///< of them, outside the axes (not drawn; counted in the note)
  double runnable_t_hi = 0, runnable_c_hi = 0;  ///< the slowest and the dearest runnable candidate
  size_t oom = 0;                               ///< candidates out of memory (not drawn)
  double oom_t_lo = 0, oom_t_hi = 0, oom_c_lo = 0, oom_c_hi = 0;
  size_t front_oom = 0;  ///< front plans out of memory (drawn hollow: the front is FASOP's)
  /// The plottable front plans' span (seconds per step, USD); hi 0 where there are none.
  double front_t_lo = 1e300, front_t_hi = 0, front_c_lo = 1e300, front_c_hi = 0;
  /// The numbers of the front's plans on the plot: label i numbers front[plan]; `box` is where
  /// the number is drawn, `leader` whether a line joins it to its point. No two boxes overlap,
  /// nor a box and another plan's point or the legend.
  struct Label {
    size_t plan = 0;
    PixelBox box;
    bool leader = false;
  };
  std::vector<Label> labels;
  /// What is not drawn, in words ("" when everything is): the picture's last lines.
  std::vector<std::string> notes;
};

/// The pareto front as an SVG picture: training cost against seconds per step on log axes, the
/// candidates that fit in memory as a density raster (one square per 4 x 4 pixels, darker where
/// more candidates fall), the front a line through its numbered plans, listed beside the plot
/// with their cluster shape and (tp, dp, pp, mbs). Candidates out of memory are not drawn
/// (they would stretch the axes over plans nobody can run) but counted, with their range, under
/// the plot; so are runnable candidates beyond the window about the front (1.5x beyond its
/// extremes on each axis, or the square of its own max / min ratio where that is larger: what
/// fits can reach far slower and dearer, as llama2-70b's 4,854 s against a front at 71-84 s,
/// and would leave the front a blob in a corner). The picture's size
/// is bounded whatever the number of candidates, and the same candidates give the same bytes in
/// any order. As a sink it keeps counts on a fine log grid, coarsened if it grows past a bound,
/// so memory stays bounded too.
class ParetoPlot : public CandidateSink {
 public:
  void consume(std::vector<CandidateResult>& chunk, const std::vector<EnumerationIndex>& index) override;
  /// The picture; `title` is its heading. `limits`' step-time and cost limits, where finite,
  /// are drawn as dashed lines on the axes, or named under the plot where they lie beyond them.
  std::string svg(const ClusterSpec& inventory, const std::vector<CandidateResult>& front,
                  const std::string& title, const PlanConstraints& limits = {}) const;
  /// The axes, the counts and the labels' places svg() draws for `front`.
  ParetoPlotLayout layout(const std::vector<CandidateResult>& front) const;

 private:
  void coarsen();
  /// Runnable candidates by log-space cell (2^shift_ cells of the finest grid make one): counts.
  std::unordered_map<uint64_t, uint32_t> cells_;
  int shift_ = 0;
  size_t runnable_ = 0, oom_ = 0;
  double t_lo_ = 0, t_hi_ = 0, c_lo_ = 0, c_hi_ = 0;  ///< runnable extents
  double oom_t_lo_ = 0, oom_t_hi_ = 0, oom_c_lo_ = 0, oom_c_hi_ = 0;
};

}  // namespace fasop
