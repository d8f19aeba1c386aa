#pragma once
// The checks of context and expert parallelism (PlanKey::cp, ep, etp) against the model, the
// cluster and the rest of the layout: a plan Megatron-LM could not run is refused with the
// reason (one-line SpecError naming the flag and the fix), never priced.
#include <string>

#include "specs/cluster_spec.h"
#include "specs/model_spec.h"
#include "specs/plan.h"

namespace fasop {

/// Refuses cp, ep and etp where they cannot run: below 1; cp with a sequence that does not
/// split into 2 x cp chunks (the causal load balance), with unfused attention, or with layouts
/// the model does not price with it (per-stage dp or tp, uneven or speed-split batches, several
/// zones); ep or etp on a dense model, ep not dividing the experts, ep x etp not dividing the
/// stage's tp x cp x dp GPUs, etp not dividing the expert's width, tp > 1 without sequence
/// parallelism (Megatron-LM asserts it with MoE).
void validate_parallel_dims(const ModelSpec& model, const ClusterSpec& cluster, const PlanKey& key);

/// Refuses the fasop policy (`policy`: its name) for what it does not know: cp, ep, etp or a
/// model with experts.
void validate_parallel_dims_policy(const ModelSpec& model, const PlanKey& key, const std::string& policy);

}  // namespace fasop
