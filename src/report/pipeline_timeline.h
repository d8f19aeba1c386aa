#pragma once
// The 1F1B timeline of a plan as an SVG picture: one row per stage, forward and backward boxes
// of each micro-batch in the order the stage runs them, sends as thin bars under them.
#include <string>
#include <vector>

#include "costmodel/pipeline_1f1b.h"

namespace fasop {

/// How the timeline is drawn, worked out from the events and labels before drawing.
struct TimelineLayout {
  double label_font = 12;  ///< the stage labels' font size (pixels)
  double left = 0;         ///< the left margin: the longest stage label at label_font, and room
  double plot_width = 0;   ///< pixels for the whole step
  double row_height = 0, box_height = 0, send_height = 0;
  /// Too many or too narrow boxes to draw one by one: each row then shows, to the pixel (or a
  /// coarser bin, `bin` pixels, where the rows would hold too many runs), when the stage runs
  /// forwards, backwards and sends, merged; no micro-batch numbers.
  bool merged = false;
  double bin = 1;
  double width = 0, height = 0;  ///< of the whole picture
};

/// What of a long step a picture shows: its first and last micro-batches at a readable scale
/// (the steady 1F1B between them left out, the time axis broken; only where the whole step's
/// boxes would not fit the usual width: the ends box by box where they fit, else merged too),
/// or the whole step.
enum class TimelineView { kEnds, kWhole };

/// The layout pipeline_timeline_svg uses: boxes one by one (numbered where the number fits) up
/// to a few thousand events, the plot widened up to 2,400 pixels so that the narrowest forward or
/// backward box gets 3; beyond that, merged rows. Rows get lower past 16 stages.
TimelineLayout pipeline_timeline_layout(const std::vector<PipelineEvent>& events,
                                        const std::vector<std::string>& stage_labels,
                                        TimelineView view = TimelineView::kEnds);

/// The picture of `events` (from simulate_1f1b_events) for `stage_labels.size()` stages,
/// labelled by `stage_labels` (e.g. "stage 0: A100, units 0-12"), under `title`, with
/// `caption` (e.g. the step's terms, step_breakdown_text.h) below the axis. Its size is
/// bounded (about a megabyte) whatever the number of stages and micro-batches.
std::string pipeline_timeline_svg(const std::vector<PipelineEvent>& events, const std::vector<std::string>& stage_labels,
                                  const std::string& title, const std::string& caption = "",
                                  TimelineView view = TimelineView::kEnds);

}  // namespace fasop
