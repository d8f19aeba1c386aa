#pragma once
// A global batch that the cluster's GPU count barely divides caps data parallelism: said
// beside the plans, since the search then only finds pipelined plans and would not say why.
#include <string>

#include "search/search_space.h"
#include "specs/cluster_spec.h"
#include "specs/model_spec.h"

namespace fasop {

/// Where dp (which must divide both the global batch and the GPUs) is so small that no plan of
/// `cluster`'s GPUs runs without a pipeline even at the largest tp and cp `space` tries: one line
/// with the cap, the nearest batch the GPUs divide, and --uneven-dp; "" otherwise.
std::string batch_split_note(const ModelSpec& model, const ClusterSpec& cluster, const SearchSpaceOptions& space);

}  // namespace fasop
