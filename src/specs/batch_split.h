#pragma once
// How a plan splits the global batch over its data-parallel replicas, evenly (FASOP, Megatron)
// or, with PlanKey::uneven_dp, unevenly (Sailor).
#include "specs/plan.h"

namespace fasop {

/// Whether dp replicas may split the global batch in micro-batches of mbs: evenly (dp divides
/// it and mbs the per-replica batch, as FASOP and Megatron-LM need) or, with `uneven`, every
/// replica at least a sample and mbs at most the largest replica's share, ceil(global / dp).
inline bool batch_split_allowed(int global_batch, int mbs, int dp, bool uneven) {
  if (uneven) return dp <= global_batch && mbs <= (global_batch + dp - 1) / dp;
  return global_batch % dp == 0 && (global_batch / dp) % mbs == 0;
}

/// Micro-batches a step, as the slowest replica runs them. Convention: the global batch goes
/// to the dp replicas as evenly as it can (each takes floor or ceil of global / dp samples),
/// each runs its share in micro-batches of mbs (the last one possibly short, priced whole),
/// and the step waits for the replica with the most: ceil(ceil(global / dp) / mbs), which is
/// ceil(global / (mbs x dp)). Where mbs x dp divides the batch this is FASOP's global / (mbs x dp).
inline int slowest_replica_microbatches(int global_batch, const PlanKey& key) {
  const long long per_step = 1LL * key.mbs * key.dp;
  return static_cast<int>((global_batch + per_step - 1) / per_step);
}

/// Samples one GPU of a stage with `stage_dp` replicas runs per micro-batch: the pipeline
/// micro-batch (mbs x dp samples) split over them, the replica with the most taking the ceiling.
inline int replica_micro_batch(const PlanKey& key, int stage_dp) {
  return (key.mbs * key.dp + stage_dp - 1) / stage_dp;
}

/// True where the plan splits its batch unevenly: mbs x dp does not divide the global batch,
/// or some stage's replicas do not divide the pipeline micro-batch.
inline bool splits_batch_unevenly(int global_batch, const PlanKey& key) {
  if (key.mbs <= 0 || key.dp <= 0) return false;  // no split at all: validate_plan_key refuses it
  if (global_batch % (1LL * key.mbs * key.dp) != 0) return true;
  for (int d : key.stage_dp)
    if (d > 0 && (key.mbs * key.dp) % d != 0) return true;
  return false;
}

}  // namespace fasop
