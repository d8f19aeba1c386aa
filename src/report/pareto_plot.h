#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "search/pareto_search.h"
#include "specs/cluster_spec.h"

namespace fasop {

/// The pareto front as an SVG picture: training cost against seconds per step on log axes,
/// every candidate a faint dot (red where it runs out of memory), the front a line through
/// its plans, each labelled with its cluster shape and (tp, dp, pp, mbs).
/// As a sink it keeps one dot per plotted pixel cell, so memory stays bounded.
class ParetoPlot : public CandidateSink {
 public:
  void consume(std::vector<CandidateResult>& chunk, const std::vector<EnumerationIndex>& index) override;
  /// The picture; `title` is its heading.
  std::string svg(const ClusterSpec& inventory, const std::vector<CandidateResult>& front,
                  const std::string& title) const;

 private:
  struct Dot {
    double step_time_s, cost_usd;
    bool oom;
  };
  std::unordered_map<uint64_t, Dot> dots_;  ///< by log-space cell; the first candidate wins
};

}  // namespace fasop
