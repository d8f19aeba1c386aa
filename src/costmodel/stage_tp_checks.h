#pragma once
// The checks of per-stage tensor parallelism (PlanKey::stage_tp, Sailor-style), apart from
// make_context.cc's uniform checks: each throws a one-line SpecError naming the field and the fix.
#include "specs/cluster_spec.h"
#include "specs/model_spec.h"
#include "specs/plan.h"

namespace fasop {

/// The degrees alone: one positive tp per stage, tp the largest, each dividing the heads, and
/// every GPU of the cluster used.
void validate_stage_tp_degrees(const ModelSpec& model, const ClusterSpec& cluster, const PlanKey& key);

/// Against the placement (checked before): every stage's tp divides the GPUs of the nodes it
/// lands on and its tp groups start on a multiple of tp within a node (so none straddles two
/// nodes), and a node type's stages share one tp (its layers are timed at one).
void validate_stage_tp_nodes(const ClusterSpec& cluster, const PlanKey& key);

}  // namespace fasop
