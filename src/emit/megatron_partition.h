#pragma once
// How a plan's pipeline partition is written for Megatron-LM: upstream's layout string, FASOP's
// fork's --balance (GPT and BERT, and T5's encoder and decoder) and T5's split rank. Pure
// functions of the plan and the model; each throws SpecError for what its Megatron cannot run.
#include <string>
#include <vector>

#include "emit/megatron_flavor.h"
#include "specs/model_spec.h"
#include "specs/plan_file.h"

namespace fasop {

/// An encoder-decoder model (T5): its family says so, or its units name two segments.
bool is_encoder_decoder(const ModelSpec& model);

/// The --pipeline-model-parallel-layout string of a plan: per stage, 'E' for the embedding, 't'
/// per transformer layer (runs written t*n), 'L' for the loss (post-process), stages joined by
/// '|'. Grammar from Megatron-LM megatron/core/transformer/pipeline_parallel_layer_layout.py
/// (PipelineParallelLayerLayout.parse_str_to_list). Throws SpecError for encoder-decoder models.
std::string megatron_pipeline_layout(const PlanFile& plan, const ModelSpec& model);

/// The --pipeline-model-parallel-layout of an interleaved plan (virtual_stages v > 1) whose
/// partition is not Megatron's even split: each stage's units split into v chunks as evenly as
/// they go (larger first), chunk c of stage r written as model chunk c x pp + r, runs of equal
/// chunks as "(...|)*k". A stage with fewer units than chunks leaves some empty (the last
/// stage its first ones, so that the loss closes the model).
std::string megatron_interleaved_layout(const PlanFile& plan, const ModelSpec& model);

/// FASOP's --balance value: transformer layers per pipeline rank joined by '-', e.g. "17-15-16"
/// (embeddings and post-processes are not counted: the fork builds them by rank). The fork
/// (Megatron-LM-2/megatron/model/transformer.py) reads balance[pipeline rank] as that rank's
/// layer count for GPT and BERT, and for T5 on both sides of the split rank: encoder ranks first,
/// then decoder ranks, e.g. "11-13-11-13" with split rank 2 (FASOP's own _00_conf.sh).
std::string fasop_balance(const PlanFile& plan, const ModelSpec& model);

/// T5's --pipeline-model-parallel-split-rank for a plan: the number of encoder stages, the
/// first decoder rank. Throws SpecError naming the plan's partition (a stage holding encoder and
/// decoder units) or the model's layers (a segment that does not start with its embedding).
int t5_split_rank(const PlanFile& plan, const ModelSpec& model);

/// The flags that place the plan's layers on pipeline ranks, empty with one stage: upstream's
/// --pipeline-model-parallel-layout (or --num-virtual-stages-per-pipeline-rank for Megatron's
/// even interleaved split), the fork's --balance, and T5's split rank with the fork's --balance.
/// Throws SpecError naming the plan field and the fix for what that Megatron cannot run.
std::vector<std::string> megatron_partition_args(const PlanFile& plan, const ModelSpec& model,
                                                 MegatronFlavor flavor);

}  // namespace fasop
