#pragma once
#include <string>
#include <vector>

#include "search/search.h"
#include "specs/cluster_spec.h"
#include "specs/model_spec.h"

namespace fasop {

/// What `search --json` says around its ranked plans.
struct SearchJsonHeader {
  std::string model;
  std::string cluster;
  std::string ranking;             ///< "fastest first" or "cheapest first": how rank counts
  size_t candidates = 0;           ///< candidates estimated
  std::vector<std::string> files;  ///< reports written
};

/// The first `count` of `ranked` as one JSON document for scripts: each plan with its rank
/// (the number the text table, the SVG and --save-plan --rank use), degrees, placement,
/// partition, step time, price and memory verdict, units in the names.
std::string search_json(const SearchJsonHeader& header, const ClusterSpec& cluster,
                        const std::vector<CandidateResult>& ranked, size_t count);

/// One estimated plan (`estimate --json`) in search_json's schema, its one plan ranked 1 and
/// carrying the detail: the step's parts and terms, each stage, the worst stage's memory.
std::string estimate_json(const ModelSpec& model, const ClusterSpec& cluster, const CandidateResult& result);

}  // namespace fasop
