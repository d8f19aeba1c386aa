#pragma once
// The checks of context and expert parallelism (PlanKey::cp, ep, etp) against the model, the
// cluster and the rest of the layout: a plan Megatron-LM could not run is refused with the
// reason (one-line SpecError naming the flag and the fix), never priced.
#include <string>

#include "specs/cluster_spec.h"
#include "specs/moe_dispatcher.h"
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

/// Why `key`'s context parallelism cannot run (the first of: 2 x cp not dividing the sequence,
/// unfused attention, sliding-window attention (not priced), a non-uniform layout, several
/// zones), as validate_parallel_dims says it;
/// empty where it can or cp is 1. The search skips such layouts with it.
std::string context_parallel_fault(const ModelSpec& model, const ClusterSpec& cluster, const PlanKey& key);

/// Why `key`'s expert groups cannot be laid out (no experts, ep not dividing them, ep x etp not
/// dividing tp x cp x dp, a non-uniform layout, several zones), as validate_parallel_dims says
/// it; empty where they can. The degrees only: widths and sequence parallelism, which the
/// search sets per variant, are validate_parallel_dims's alone.
std::string expert_layout_fault(const ModelSpec& model, const ClusterSpec& cluster, const PlanKey& key);

/// Why `model` cannot run context-parallel degree `cp` on any layout (2 x cp not dividing the
/// sequence, unfused attention, sliding-window attention); empty where it can or cp is 1.
std::string context_degree_fault(const ModelSpec& model, int cp);

/// Why `ep` cannot split `model`'s experts (it does not divide them); empty where it can.
std::string expert_degree_fault(const ModelSpec& model, int ep);

/// Why `key` cannot run Megatron-Core's EP all-to-all overlap (parallel_rules.h ep_overlap_runs:
/// pp > 1 without virtual stages, or full recomputation), naming --ep-comm-overlap and the fix;
/// empty where it can or where ep is 1 (no all-to-alls to overlap).
std::string ep_overlap_fault(const PlanKey& key);

/// Why key.moe_dispatcher cannot move `key`'s tokens as Megatron-Core and DeepEP would refuse it, naming
/// --moe-dispatcher and the fix: a model without experts (any dispatcher but alltoall), the flex
/// dispatcher with tp x ep = 1, DeepEP with token dropping padded to capacity, DeepEP's
/// internode kernels (ep above 8) on nodes of other than 8 GPUs. Empty where it can.
std::string moe_dispatcher_fault(const ModelSpec& model, const ClusterSpec& cluster, const PlanKey& key);

/// Why Megatron-Core cannot capture `model`'s layers in CUDA graphs (--cuda-graphs): experts
/// routed dropless, whose token counts change each step ("moe cuda graph is only supported with
/// drop-padding MoE"). Empty where it can.
std::string cuda_graph_fault(const ModelSpec& model);

/// Refuses the fasop policy (`policy`: its name) for what it does not know: cp, ep, etp or a
/// model with experts.
void validate_parallel_dims_policy(const ModelSpec& model, const PlanKey& key, const std::string& policy);

}  // namespace fasop
