#include "costmodel/speed_split.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <utility>

namespace fasop {

SpeedSplit split_by_speed(int replicas, int samples, const ReplicaTimeS& time_s) {
  SpeedSplit split;
  split.samples.assign(std::max(replicas, 0), 0);
  if (replicas <= 0 || samples <= 0) return split;
  // (a replica's time once it takes one more sample, the replica): least first, then lowest replica.
  using Next = std::pair<double, int>;
  std::priority_queue<Next, std::vector<Next>, std::greater<Next>> next;
  for (int r = 0; r < replicas; ++r) next.push({time_s(r, 1), r});
  for (int given = 1; given <= samples; ++given) {
    const int r = next.top().second;
    next.pop();
    ++split.samples[r];
    if (given < samples) next.push({time_s(r, split.samples[r] + 1), r});
  }
  for (int r = 0; r < replicas; ++r)
    if (split.samples[r] > 0) split.time_s = std::max(split.time_s, time_s(r, split.samples[r]));
  return split;
}

}  // namespace fasop
