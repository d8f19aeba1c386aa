#pragma once
// The 1F1B timeline of a plan as an SVG picture: one row per stage, forward and backward boxes
// of each micro-batch in the order the stage runs them, sends as thin bars under them.
#include <string>
#include <vector>

#include "costmodel/pipeline_1f1b.h"

namespace fasop {

/// The picture of `events` (from simulate_1f1b_events) for `stage_labels.size()` stages,
/// labelled by `stage_labels` (e.g. "stage 0: A100, units 0-12"), under `title`.
std::string pipeline_timeline_svg(const std::vector<PipelineEvent>& events, const std::vector<std::string>& stage_labels,
                                  const std::string& title);

}  // namespace fasop
