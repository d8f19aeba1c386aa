#include "emit/megatron_args.h"

#include "emit/plan_checks.h"
#include "emit/shell_quote.h"
#include "specs/precision.h"
#include "specs/spec_error.h"

namespace fasop {
namespace {

/// Transformer layers of one segment ("encoder", "decoder"): T5's --encoder/--decoder-num-layers.
int model_transformer_count(const ModelSpec& model, const std::string& segment) {
  int n = 0;
  for (const LayerUnit& u : model.units) n += u.role == LayerRole::kTransformer && u.segment == segment;
  return n;
}

}  // namespace

std::vector<std::string> megatron_args(const PlanFile& plan, const ModelSpec& model, MegatronFlavor flavor) {
  const PlanKey& key = plan.key;
  const bool fasop = flavor == MegatronFlavor::kFasop;
  const std::string fork = "FASOP's Megatron fork (AvatarHwang/FASOP Megatron-LM-2/megatron/arguments.py) has no ";
  const std::string fix = "; emit for upstream Megatron-LM (MegatronFlavor::kUpstream) instead";
  // A partition that misses the model is an error even with one stage, where nothing of it is written.
  stage_boundaries(plan, model);
  require_uniform_dp(plan, "Megatron-LM");
  require_uniform_tp(plan, "Megatron-LM");
  require_even_batch(plan, "Megatron-LM");
  require_no_speed_split(plan, "Megatron-LM");
  if (key.mbs <= 0 || key.dp <= 0 || plan.global_batch % (key.mbs * key.dp) != 0)
    throw SpecError(plan_where(plan) + "global batch " + std::to_string(plan.global_batch) +
                    " is not a multiple of micro-batch " + std::to_string(key.mbs) + " x dp " +
                    std::to_string(key.dp) + ", which Megatron-LM requires; fix global_batch or mbs");

  std::vector<std::string> a;
  auto flag = [&](const std::string& name, const std::string& value = "") {
    a.push_back(name);
    if (!value.empty()) a.push_back(value);
  };
  auto num = [](int v) { return std::to_string(v); };

  // Layout and batch. The data-parallel degree is no flag: Megatron derives it as
  // world size / (tp x pp), so the launcher's GPU count sets it.
  flag("--tensor-model-parallel-size", num(key.tp));
  flag("--pipeline-model-parallel-size", num(key.pp));
  flag("--micro-batch-size", num(key.mbs));
  flag("--global-batch-size", num(plan.global_batch));

  // Model dimensions. T5 names its two stacks; the model file has one sequence length, used for both.
  const int ffn = model.ffn_hidden > 0 ? model.ffn_hidden : 4 * model.hidden;
  if (is_encoder_decoder(model)) {
    flag("--encoder-num-layers", num(model_transformer_count(model, "encoder")));
    flag("--decoder-num-layers", num(model_transformer_count(model, "decoder")));
  } else {
    flag("--num-layers", num(model.num_transformer_layers()));
  }
  flag("--hidden-size", num(model.hidden));
  flag("--num-attention-heads", num(model.heads));
  flag("--ffn-hidden-size", num(ffn));
  if (is_encoder_decoder(model)) {
    flag("--encoder-seq-length", num(model.sequence));
    flag("--decoder-seq-length", num(model.sequence));
  } else {
    flag("--seq-length", num(model.sequence));
  }
  flag("--max-position-embeddings", num(model.sequence));
  if (model.kv_heads > 0 && model.kv_heads < model.heads) {
    if (fasop) throw SpecError(plan_where(plan) + fork + "grouped-query attention (--num-query-groups)" + fix);
    flag("--group-query-attention");
    flag("--num-query-groups", num(model.kv_heads));
  }
  if (model.activation == Activation::kSwiglu) {
    if (fasop) throw SpecError(plan_where(plan) + fork + "--swiglu" + fix);
    flag("--swiglu");
  }
  if (model.norm == Norm::kRmsNorm) {
    if (fasop) throw SpecError(plan_where(plan) + fork + "--normalization RMSNorm" + fix);
    flag("--normalization", "RMSNorm");
  }
  if (model.family == ModelFamily::kLlama) {
    // LLaMA's rotary positions; Megatron's default is learned absolute positions.
    if (fasop) throw SpecError(plan_where(plan) + fork + "rotary position embeddings" + fix);
    flag("--position-embedding-type", "rope");
  }
  if (!model.tied_embeddings) {
    if (fasop) throw SpecError(plan_where(plan) + fork + "--untie-embeddings-and-output-weights" + fix);
    flag("--untie-embeddings-and-output-weights");
  }

  // Precision: fp32 is Megatron's default and has no flag (tf32 is PyTorch's default for its
  // GEMMs). fp8 training is bf16 with Transformer Engine's fp8 GEMMs: per-tensor current
  // scaling (tensorwise, NeMo's FP8-CS) with e4m3 forward and e5m2 gradients, or MXFP8 blocks.
  const std::string non_gemm = non_gemm_precision(model.dtype);
  if (non_gemm == "fp16") flag("--fp16");
  if (non_gemm == "bf16") flag("--bf16");
  if (model.dtype == "fp8") flag("--fp8-format", "hybrid"), flag("--fp8-recipe", "tensorwise");
  if (model.dtype == "mxfp8") flag("--fp8-format", "e4m3"), flag("--fp8-recipe", "mxfp8");

  // Full recomputation of every layer, as the cost model prices it: keep each layer's input,
  // redo its forward in the backward pass (uniform chunks of one layer).
  if (key.recompute) {
    flag("--recompute-granularity", "full");
    flag("--recompute-method", "uniform");
    flag("--recompute-num-layers", "1");
  } else if (key.selective_recompute) {
    // Korthikanti et al.'s selective recomputation: attention's core only.
    if (fasop) throw SpecError(plan_where(plan) + fork + "selective recomputation" + fix);
    flag("--recompute-granularity", "selective");
  }
  if (key.sequence_parallel && key.tp > 1) {
    if (fasop) throw SpecError(plan_where(plan) + fork + "--sequence-parallel" + fix);
    flag("--sequence-parallel");
  }
  if (plan.overlap_tp_comm && key.tp > 1) {
    // Megatron-LM overlaps tensor-parallel communication with the GEMMs only with sequence
    // parallelism (Transformer Engine's userbuffers).
    if (fasop || !key.sequence_parallel)
      throw SpecError(plan_where(plan) + "--tp-comm-overlap needs sequence parallelism in Megatron-LM" +
                      (fasop ? " and is not in FASOP's fork" : "") + "; re-plan with --fix sp=on, or without the overlap");
    flag("--tp-comm-overlap");
  }
  if (plan.overlap_dp_allreduce && plan.policy == "analytic" && key.dp > 1 && !fasop)
    flag("--overlap-grad-reduce");
  // Megatron-LM overlaps the parameter all-gather only for its distributed optimizer (ZeRO-1
  // here) with the gradient reduction overlapped too.
  if (plan.overlap_param_gather && plan.policy == "analytic" && key.dp > 1 && !fasop && key.zero_stage >= 1 &&
      plan.overlap_dp_allreduce)
    flag("--overlap-param-gather");

  // ZeRO. Megatron's distributed optimizer shards the optimizer state over dp (ZeRO-1); its
  // gradients are reduce-scattered but every rank keeps the full gradient buffer, so ZeRO-2's
  // gradient saving is not had, and ZeRO-3's parameter sharding is Megatron-FSDP, a different
  // data-parallel engine. A plan priced with ZeRO-2/3 memory could run out of memory here.
  if (key.zero_stage >= 2)
    throw SpecError(plan_where(plan) + "ZeRO stage " + num(key.zero_stage) +
                    " has no Megatron-LM flag (--use-distributed-optimizer is ZeRO-1); re-plan with "
                    "--zero 0 or 1, or run the plan with DeepSpeed");
  if (key.zero_stage == 1) flag("--use-distributed-optimizer");

  // The partition: which layers each pipeline rank builds (nothing with one stage but T5's checks).
  for (const std::string& token : megatron_partition_args(plan, model, flavor)) a.push_back(token);
  return a;
}

std::string megatron_args_text(const PlanFile& plan, const ModelSpec& model, MegatronFlavor flavor) {
  const std::vector<std::string> tokens = megatron_args(plan, model, flavor);
  std::string text;
  for (size_t i = 0; i < tokens.size(); ++i) {
    // A flag starts a line; its value, when it has one, follows on the same line.
    if (tokens[i].rfind("--", 0) == 0) {
      if (!text.empty()) text += " \\\n";
      text += tokens[i];
    } else {
      text += " " + shell_quote(tokens[i]);
    }
  }
  return text;
}

}  // namespace fasop
