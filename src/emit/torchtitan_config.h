#pragma once
// torchtitan's configuration for a saved plan: a Python module whose function returns the
// model's own Trainer.Config (torchtitan/config/README.md: a configuration is a Python function)
// with the plan's degrees, stage module lists, schedule, batch, recomputation and precision.
// A pure function of the plan, its model and its cluster: no files are read or written.
#include <string>
#include <vector>

#include "specs/cluster_spec.h"
#include "specs/model_spec.h"
#include "specs/plan_file.h"

namespace fasop {

/// Each stage's torchtitan module names (ParallelismConfig.module_fqns_per_model_part): its
/// units as torchtitan's decoders name them, "tok_embeddings", "layers.<i>", then "norm" and
/// "lm_head" for the post-process. Throws SpecError for a model whose units are not an
/// embedding, transformer layers and a post-process, in that order.
std::vector<std::vector<std::string>> torchtitan_stage_modules(const PlanFile& plan, const ModelSpec& model);

/// The module: `fasop_plan() -> Trainer.Config` starting from the model's base configuration
/// (ModelSpec::torchtitan_config) and setting, field by field, ParallelismConfig's degrees (ZeRO 0
/// as replication, DDP; ZeRO 3 as sharding, FSDP2), schedule, micro-batches and stage modules,
/// TrainingConfig's tokens per micro-batch and per step, context length, parameter precision and
/// CUDA graphs (as priced), and the activation checkpointing (FullAC or none). Throws SpecError naming the plan field and
/// the fix for what torchtitan cannot run as priced: no torchtitan configuration for the model,
/// per-stage tp or dp, an uneven batch split, a speed split, stages of two GPU types, ZeRO 1 or 2,
/// selective (Megatron module) recomputation, etp > 1, ep not dividing dp_shard x cp x tp
/// (ParallelDims), another MoE dispatcher than all-to-all, multi-token prediction, a precision
/// other than bf16 or fp32, CUDA graphs with pp or ep above 1.
std::string torchtitan_config_py(const PlanFile& plan, const ModelSpec& model, const ClusterSpec& cluster);

}  // namespace fasop
