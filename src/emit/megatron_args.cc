#include "emit/megatron_args.h"

#include <set>

#include "emit/plan_checks.h"
#include "emit/shell_quote.h"
#include "specs/precision.h"
#include "specs/spec_error.h"

namespace fasop {
namespace {

/// The units of each stage, after checking that the partition covers the model exactly once:
/// a plan edited by hand or saved for another model must not emit a silently wrong layout.
std::vector<std::vector<const LayerUnit*>> stage_units(const PlanFile& plan, const ModelSpec& model) {
  const std::vector<int> parts = stage_boundaries(plan, model);
  std::vector<std::vector<const LayerUnit*>> stages(plan.key.pp);
  for (int s = 0; s < plan.key.pp; ++s)
    for (int u = parts[s]; u < parts[s + 1]; ++u) stages[s].push_back(&model.units[u]);
  return stages;
}

/// An encoder-decoder model (T5): its units name two segments.
bool is_encoder_decoder(const ModelSpec& model) {
  std::set<std::string> segments;
  for (const LayerUnit& u : model.units)
    if (!u.segment.empty()) segments.insert(u.segment);
  return model.family == ModelFamily::kT5 || segments.size() > 1;
}

/// Megatron's GPT/BERT builds the embedding on the first pipeline rank (pre_process) and the
/// output head and loss on the last (post_process): a decoder-only plan must say the same.
void require_embedding_first_loss_last(const PlanFile& plan, const ModelSpec& model) {
  int embeddings = 0, posts = 0;
  for (const LayerUnit& u : model.units) {
    embeddings += u.role == LayerRole::kEmbedding;
    posts += u.role == LayerRole::kPostProcess;
  }
  if (embeddings != 1 || posts != 1 || model.units.front().role != LayerRole::kEmbedding ||
      model.units.back().role != LayerRole::kPostProcess)
    throw SpecError(plan_where(plan) + "model '" + model.name +
                    "' must have one embedding unit first and one post_process unit last for Megatron-LM's "
                    "layout (E ... L); fix the model's layers");
}

int transformer_count(const std::vector<const LayerUnit*>& units, const std::string& segment = "*") {
  int n = 0;
  for (const LayerUnit* u : units)
    if (u->role == LayerRole::kTransformer && (segment == "*" || u->segment == segment)) ++n;
  return n;
}

int model_transformer_count(const ModelSpec& model, const std::string& segment) {
  int n = 0;
  for (const LayerUnit& u : model.units)
    if (u.role == LayerRole::kTransformer && u.segment == segment) ++n;
  return n;
}

/// FASOP's fork (Megatron-LM-2/megatron/model/transformer.py, _get_num_layers) ignores
/// --balance for T5's offsets and asserts that each segment's layers divide evenly over its
/// ranks; upstream's examples/t5/pretrain_t5.py raises "Pipeline parallelism is not supported
/// for T5". So an encoder-decoder pipeline is written as the split rank, and only when even.
int t5_split_rank(const PlanFile& plan, const ModelSpec& model,
                  const std::vector<std::vector<const LayerUnit*>>& stages) {
  int encoder_stages = 0;
  for (const auto& stage : stages) {
    if (stage.front()->segment != stage.back()->segment)
      throw SpecError(plan_where(plan) + "a stage holds both encoder and decoder units; Megatron-LM pipelines "
                      "T5's encoder and decoder on separate ranks. Re-plan (the search keeps segments apart)");
    if (stage.front()->segment == "encoder") {
      if (encoder_stages != static_cast<int>(&stage - &stages[0]))
        throw SpecError(plan_where(plan) + "an encoder stage follows a decoder stage; fix the partition");
      ++encoder_stages;
    }
  }
  const int decoder_stages = plan.key.pp - encoder_stages;
  if (encoder_stages == 0 || decoder_stages == 0)
    throw SpecError(plan_where(plan) + "T5 pipeline needs at least one encoder and one decoder stage");
  const int enc = model_transformer_count(model, "encoder"), dec = model_transformer_count(model, "decoder");
  for (int s = 0; s < plan.key.pp; ++s) {
    const bool encoder = s < encoder_stages;
    const int want = encoder ? enc / encoder_stages : dec / decoder_stages;
    const int have = transformer_count(stages[s]);
    if ((encoder ? enc % encoder_stages : dec % decoder_stages) != 0 || have != want)
      throw SpecError(plan_where(plan) + "stage " + std::to_string(s) + " holds " + std::to_string(have) + " " +
                      (encoder ? "encoder" : "decoder") +
                      " layers, but Megatron-LM splits T5's encoder and decoder layers evenly over their ranks "
                      "(--pipeline-model-parallel-split-rank), so this uneven partition cannot be expressed. "
                      "Re-plan T5 with an even split per segment, or run it with pp 1");
  }
  return encoder_stages;
}

}  // namespace

std::string megatron_pipeline_layout(const PlanFile& plan, const ModelSpec& model) {
  if (is_encoder_decoder(model))
    throw SpecError(plan_where(plan) + "Megatron-LM's --pipeline-model-parallel-layout has no encoder layers "
                    "(PipelineParallelLayerLayout.validate_layer_layout raises NotImplementedError); "
                    "T5 cannot be laid out this way");
  require_embedding_first_loss_last(plan, model);
  std::string layout;
  for (const auto& stage : stage_units(plan, model)) {
    if (!layout.empty()) layout += '|';
    int run = 0;  // pending transformer layers, written t or t*n
    auto flush = [&] {
      if (run == 1) layout += 't';
      if (run > 1) layout += "t*" + std::to_string(run);
      run = 0;
    };
    for (const LayerUnit* u : stage) {
      if (u->role == LayerRole::kTransformer) {
        ++run;
        continue;
      }
      flush();
      layout += u->role == LayerRole::kEmbedding ? 'E' : 'L';
    }
    flush();
  }
  return layout;
}

std::string fasop_balance(const PlanFile& plan, const ModelSpec& model) {
  if (is_encoder_decoder(model))
    throw SpecError(plan_where(plan) + "FASOP's Megatron fork reads --balance only for decoder-only models "
                    "(T5's offsets ignore it); use --pipeline-model-parallel-split-rank with an even split");
  require_embedding_first_loss_last(plan, model);
  std::string balance;
  for (const auto& stage : stage_units(plan, model)) {
    if (!balance.empty()) balance += '-';
    balance += std::to_string(transformer_count(stage));
  }
  return balance;
}

std::vector<std::string> megatron_args(const PlanFile& plan, const ModelSpec& model, MegatronFlavor flavor) {
  const PlanKey& key = plan.key;
  const bool fasop = flavor == MegatronFlavor::kFasop;
  const std::string fork = "FASOP's Megatron fork (AvatarHwang/FASOP Megatron-LM-2/megatron/arguments.py) has no ";
  const std::string fix = "; emit for upstream Megatron-LM (MegatronFlavor::kUpstream) instead";
  const auto stages = stage_units(plan, model);
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

  // The partition. With one stage there is nothing to place.
  if (key.pp > 1) {
    if (is_encoder_decoder(model)) {
      if (!fasop)
        throw SpecError(plan_where(plan) + "upstream Megatron-LM's T5 (examples/t5/pretrain_t5.py) raises "
                        "\"Pipeline parallelism is not supported for T5\"; run T5 with pp 1, or emit for "
                        "FASOP's fork (MegatronFlavor::kFasop) with an even split per segment");
      flag("--pipeline-model-parallel-split-rank", num(t5_split_rank(plan, model, stages)));
    } else if (fasop) {
      if (key.virtual_stages > 1) throw SpecError(plan_where(plan) + fork + "the interleaved schedule" + fix);
      flag("--balance", fasop_balance(plan, model));
    } else if (key.virtual_stages > 1) {
      // The interleaved schedule splits each rank's layers into v equal chunks: Megatron's own
      // even split, which only a partition of layers / pp per stage (embedding first, loss last)
      // describes; the cost model prices exactly that.
      const int per_stage = model.num_transformer_layers() / key.pp;
      for (int s = 0; s < key.pp; ++s) {
        int layers = 0;
        for (const LayerUnit* unit : stages[s]) layers += unit->role == LayerRole::kTransformer;
        if (layers != per_stage)
          throw SpecError(plan_where(plan) + "virtual stages " + num(key.virtual_stages) + " need " +
                          num(per_stage) + " layers on every stage (Megatron's even split); stage " + num(s) +
                          " has " + num(layers) + ". Re-plan with --fix vpp=1 or an even partition");
      }
      flag("--num-virtual-stages-per-pipeline-rank", num(key.virtual_stages));
    } else {
      // The layout places every layer, so --num-layers must equal its 't' count (checked by
      // validate_layer_layout) and --decoder-first/last-pipeline-num-layers and
      // --account-for-embedding/loss-in-pipeline-split must be absent (TransformerConfig).
      flag("--pipeline-model-parallel-layout", megatron_pipeline_layout(plan, model));
    }
  }
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
