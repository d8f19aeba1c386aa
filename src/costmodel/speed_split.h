#pragma once
// Metis's split of a stage's micro-batch over data-parallel replicas of different speeds
// (PlanKey::speed_split), as a pure function of the replicas' times.
#include <functional>
#include <vector>

namespace fasop {

/// Seconds replica `replica` takes for one micro-batch of `samples` samples (samples >= 1).
using ReplicaTimeS = std::function<double(int replica, int samples)>;

/// How a micro-batch's samples go to the replicas, and what the slowest of them then takes.
struct SpeedSplit {
  std::vector<int> samples;  ///< per replica, >= 0, summing to the micro-batch
  double time_s = 0;         ///< max over replicas of time_s(r, samples[r]); a replica without samples takes 0
};

/// Splits `samples` samples over `replicas` replicas to minimise the slowest replica's time:
/// each sample in turn goes to the replica whose time after taking it is least (ties to the
/// lower replica). time_s is asked only for 1..`samples` samples.
///
/// Optimal where each replica's time does not fall as it takes more samples (as profiles give
/// it): replica r's times t_r(1) <= t_r(2) <= ... form a sorted list, so the greedy merges the
/// lists and takes the `samples` least values of all of them; its time is the largest value it
/// took. Any split takes a prefix t_r(1..n_r) of each list, `samples` values in all, whose largest
/// is at least the `samples`-th least value: no split is faster. Where a time falls, the split
/// is still valid and its time exact, but not necessarily the least. O(samples x log replicas).
SpeedSplit split_by_speed(int replicas, int samples, const ReplicaTimeS& time_s);

}  // namespace fasop
