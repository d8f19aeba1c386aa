#include "report/batch_split_note.h"

#include <algorithm>
#include <numeric>

namespace fasop {

std::string batch_split_note(const ModelSpec& model, const ClusterSpec& cluster, const SearchSpaceOptions& space) {
  if (space.uneven_dp) return "";
  const long gpus = cluster.num_gpus(), batch = model.global_batch;
  const long most_dp = std::gcd(batch, gpus);
  const long most_cp = space.cp.empty() ? 1 : *std::max_element(space.cp.begin(), space.cp.end());
  const long most_tp = largest_tp(cluster, space);
  if (most_dp * most_tp * most_cp >= gpus) return "";
  const long fewest_stages = (gpus + most_dp * most_tp * most_cp - 1) / (most_dp * most_tp * most_cp);
  const long nearest = std::max(gpus, (batch + gpus / 2) / gpus * gpus);
  return "batch: the global batch of " + std::to_string(batch) + " and the " + std::to_string(gpus) +
         " GPUs share no factor above " + std::to_string(most_dp) + ", so dp is at most " + std::to_string(most_dp) +
         " and every plan runs at least " + std::to_string(fewest_stages) + " pipeline stages; --global-batch " +
         std::to_string(nearest) + " (which the GPUs divide) or --uneven-dp lets dp grow\n";
}

}  // namespace fasop
