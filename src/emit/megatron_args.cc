#include "emit/megatron_args.h"

#include <cstdio>

#include "emit/plan_checks.h"
#include "emit/shell_quote.h"
#include "specs/parallel_rules.h"
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

std::string num(int v) { return std::to_string(v); }

/// A probability as Python reads it: "0", "0.05" (no trailing zeros).
std::string decimal(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

/// The argument list as it is written, for one plan and flavour.
class ArgWriter {
 public:
  ArgWriter(const PlanFile& plan, MegatronFlavor flavor, FsdpImpl fsdp)
      : plan_(plan), fasop_(flavor == MegatronFlavor::kFasop), torch_fsdp_(fsdp == FsdpImpl::kTorch) {}

  /// Appends a flag and, unless empty, its value.
  void flag(const std::string& name, const std::string& value = "") {
    tokens_.push_back(name);
    if (!value.empty()) tokens_.push_back(value);
  }

  /// Throws, when writing for FASOP's fork, that the fork lacks `what`: it predates it.
  void require_upstream(const std::string& what) const {
    if (fasop_)
      throw SpecError(plan_where(plan_) +
                      "FASOP's Megatron fork (AvatarHwang/FASOP Megatron-LM-2/megatron/arguments.py) has no " + what +
                      "; emit for upstream Megatron-LM (schedule --megatron-flavor upstream) instead");
  }

  bool fasop() const { return fasop_; }
  /// Whether the plan's sharding (ZeRO 2 or 3) is to run as PyTorch's FSDP2 rather than Megatron-FSDP.
  bool torch_fsdp() const { return torch_fsdp_ && plan_.key.zero_stage >= 2; }
  std::vector<std::string>& tokens() { return tokens_; }

 private:
  const PlanFile& plan_;
  bool fasop_;
  bool torch_fsdp_;
  std::vector<std::string> tokens_;
};

/// What neither Megatron runs: per-stage degrees, uneven batches and a batch that does not
/// split into micro-batches over dp; context- and expert-parallel degrees Megatron-LM refuses;
/// fp8 on GPUs without it. A partition that misses the model is an error even with one stage,
/// where nothing of it is written.
void require_megatron_plan(const PlanFile& plan, const ModelSpec& model) {
  stage_boundaries(plan, model);
  require_uniform_dp(plan, "Megatron-LM");
  require_uniform_tp(plan, "Megatron-LM");
  require_even_batch(plan, "Megatron-LM");
  require_no_speed_split(plan, "Megatron-LM");
  micro_batches_per_step(plan, "Megatron-LM requires");
  require_megatron_parallel_dims(plan, model);
  require_precision_on_gpus(plan, model);
}

/// Layout and batch. The data-parallel degree is no flag: Megatron derives it as world size /
/// (tp x cp x pp), so the launcher's GPU count (tp x cp x dp x pp) sets it. The expert groups
/// fold over the same GPUs (ep x etp of each stage's tp x cp x dp).
void layout_flags(ArgWriter& w, const PlanFile& plan, const ModelSpec& model) {
  const PlanKey& key = plan.key;
  if (model.moe.enabled())
    w.require_upstream("mixture-of-experts layers as model '" + model.name + "' has them (--moe-router-topk, "
                       "--expert-model-parallel-size; its --num-experts is a top-1 Switch MLP in every layer)");
  w.flag("--tensor-model-parallel-size", num(key.tp));
  w.flag("--pipeline-model-parallel-size", num(key.pp));
  if (key.cp > 1) {
    w.require_upstream("context parallelism (--context-parallel-size)");
    w.flag("--context-parallel-size", num(key.cp));
  }
  if (key.ep > 1) {
    w.require_upstream("expert parallelism (--expert-model-parallel-size)");
    w.flag("--expert-model-parallel-size", num(key.ep));
  }
  // Megatron-LM's expert tensor parallelism defaults to tp (validate_args), the plan's is its
  // own degree: written where it is above 1 or differs from tp.
  if (model.moe.enabled() && (key.etp > 1 || key.etp != key.tp)) {
    w.require_upstream("expert tensor parallelism (--expert-tensor-parallel-size)");
    w.flag("--expert-tensor-parallel-size", num(key.etp));
  }
  w.flag("--micro-batch-size", num(key.mbs));
  w.flag("--global-batch-size", num(plan.global_batch));
}

/// Model dimensions. T5 names its two stacks; the model file has one sequence length, used for both.
void dimension_flags(ArgWriter& w, const ModelSpec& model) {
  const bool t5 = is_encoder_decoder(model);
  if (t5) {
    w.flag("--encoder-num-layers", num(model_transformer_count(model, "encoder")));
    w.flag("--decoder-num-layers", num(model_transformer_count(model, "decoder")));
  } else {
    w.flag("--num-layers", num(model.num_transformer_layers()));
  }
  w.flag("--hidden-size", num(model.hidden));
  w.flag("--num-attention-heads", num(model.heads));
  // The attention head's width, where it is not hidden / heads (Megatron's default).
  if (model.head_dim > 0 && (model.hidden % model.heads != 0 || model.head_dim != model.hidden / model.heads))
    w.flag("--kv-channels", num(model.head_dim));
  w.flag("--ffn-hidden-size", num(model.ffn_hidden > 0 ? model.ffn_hidden : 4 * model.hidden));
  if (t5) {
    w.flag("--encoder-seq-length", num(model.sequence));
    w.flag("--decoder-seq-length", num(model.sequence));
  } else {
    w.flag("--seq-length", num(model.sequence));
  }
  w.flag("--max-position-embeddings", num(model.sequence));
}

/// The architecture beyond GPT-2's: GQA, SwiGLU, RMSNorm, rotary positions, an untied head.
void architecture_flags(ArgWriter& w, const ModelSpec& model) {
  if (model.mtp_layers > 0) {
    // Megatron-Core builds the MTP modules on the last pipeline stage (the layout's 'm's, beside
    // the loss), as the cost model prices them with the post-process unit.
    w.require_upstream("multi-token prediction (--mtp-num-layers)");
    w.flag("--mtp-num-layers", num(model.mtp_layers));
  }
  if (model.sliding_window.enabled()) {
    // Megatron-Core's window (left tokens, right 0: causal) and the layers that keep full
    // attention (layer_number % full_every == 0), as apply_sliding_window marks them.
    const SlidingWindow& window = model.sliding_window;
    w.require_upstream("sliding-window attention (--window-size)");
    w.flag("--window-size", num(window.tokens) + ",0");
    if (window.full_every > 0) w.flag("--window-attn-skip-freq", num(window.full_every));
  }
  if (model.mla.enabled()) {
    // Multi-head latent attention (Megatron-Core's MLASelfAttention), with the widths the model
    // prices; q_lora_rank 0 projects the queries without a latent.
    const MlaSpec& mla = model.mla;
    w.require_upstream("multi-head latent attention (--multi-latent-attention)");
    w.flag("--multi-latent-attention");
    if (mla.q_lora_rank > 0) w.flag("--q-lora-rank", num(mla.q_lora_rank));
    w.flag("--kv-lora-rank", num(mla.kv_lora_rank));
    w.flag("--qk-head-dim", num(mla.qk_head_dim));
    w.flag("--qk-pos-emb-head-dim", num(mla.qk_rope_head_dim));
    w.flag("--v-head-dim", num(mla.v_head_dim));
  }
  if (model.kv_heads > 0 && model.kv_heads < model.heads) {
    w.require_upstream("grouped-query attention (--num-query-groups)");
    w.flag("--group-query-attention");
    w.flag("--num-query-groups", num(model.kv_heads));
  }
  if (model.activation == Activation::kSwiglu) {
    w.require_upstream("--swiglu");
    w.flag("--swiglu");
  }
  if (model.activation == Activation::kQuickGeglu) {
    // GPT-OSS's GLU offset (1.0) and clamp (moe.activation_clamp) have no flag: its config sets them.
    w.require_upstream("--quick-geglu");
    w.flag("--quick-geglu");
  }
  if (model.norm == Norm::kRmsNorm) {
    w.require_upstream("--normalization RMSNorm");
    w.flag("--normalization", "RMSNorm");
  }
  if (model.family == ModelFamily::kLlama) {
    // LLaMA's rotary positions; Megatron's default is learned absolute positions, base 10000.
    w.require_upstream("rotary position embeddings");
    w.flag("--position-embedding-type", "rope");
    if (model.rotary_base != 10000) w.flag("--rotary-base", num(model.rotary_base));
  }
  // The llama family's linear layers have no biases (the cost model counts none), unless its
  // experts carry them (GPT-OSS); Megatron-LM adds them by default.
  if (!model.linear_biases()) {
    w.require_upstream("--disable-bias-linear");
    w.flag("--disable-bias-linear");
  }
  // Megatron-LM drops 10% by default; the cost model keeps a dropout's mask only where the
  // model has one (the llama family has none), so the run must drop what the model says.
  if (model.hidden_dropout != 0.1) w.flag("--hidden-dropout", decimal(model.hidden_dropout));
  if (model.attention_dropout != 0.1) w.flag("--attention-dropout", decimal(model.attention_dropout));
  if (!model.tied_embeddings) {
    w.require_upstream("--untie-embeddings-and-output-weights");
    w.flag("--untie-embeddings-and-output-weights");
  }
}

/// Precision: fp32 is Megatron's default and has no flag (tf32 is PyTorch's default for its
/// GEMMs). fp8 training is bf16 with Transformer Engine's fp8 GEMMs: per-tensor current
/// scaling (tensorwise, NeMo's FP8-CS) with e4m3 forward and e5m2 gradients, or MXFP8 blocks;
/// nvfp4 is bf16 with NVFP4 GEMMs (--fp4-format e2m1 --fp4-recipe nvfp4, Megatron-Bridge's
/// bf16_with_nvfp4_mixed).
/// bf16 gradients where the plan was priced with them (Megatron reduces bf16's in fp32 unless told).
void precision_flags(ArgWriter& w, const PlanFile& plan, const ModelSpec& model) {
  // The fork's Transformer Engine fp8 (--fp8-hybrid) predates the recipes the model prices.
  if (is_fp8(model.dtype)) w.require_upstream("--fp8-format/--fp8-recipe (dtype " + model.dtype + ")");
  if (model.dtype == "nvfp4") w.require_upstream("--fp4-format/--fp4-recipe (dtype nvfp4)");
  const std::string non_gemm = non_gemm_precision(model.dtype);
  if (non_gemm == "fp16") w.flag("--fp16");
  if (non_gemm == "bf16") w.flag("--bf16");
  if (model.dtype == "fp8") w.flag("--fp8-format", "hybrid"), w.flag("--fp8-recipe", "tensorwise");
  if (model.dtype == "mxfp8") w.flag("--fp8-format", "e4m3"), w.flag("--fp8-recipe", "mxfp8");
  if (model.dtype == "nvfp4") w.flag("--fp4-format", "e2m1"), w.flag("--fp4-recipe", "nvfp4");
  if (plan.execution.grad_reduce_in_bf16 && has_bf16_gradients(model.dtype)) {
    w.require_upstream("--grad-reduce-in-bf16");
    w.flag("--grad-reduce-in-bf16");
  }
}

/// Megatron-LM's --moe-layer-freq pattern of the model's transformer layers, 1 for a MoE layer
/// and 0 for a dense one, as runs: "([0]*3+[1]*58)" (arguments.py's moe_freq_type evaluates
/// such a list expression; its length must be --num-layers).
std::string moe_layer_pattern(const ModelSpec& model) {
  std::vector<bool> moe;
  for (const LayerUnit& u : model.units)
    if (u.role == LayerRole::kTransformer) moe.push_back(u.moe);
  std::string pattern;
  for (size_t i = 0; i < moe.size();) {
    size_t j = i;
    while (j < moe.size() && moe[j] == moe[i]) ++j;
    pattern += std::string(pattern.empty() ? "" : "+") + (moe[i] ? "[1]*" : "[0]*") + num(static_cast<int>(j - i));
    i = j;
  }
  return "(" + pattern + ")";
}

/// The mixture of experts (Megatron-Core's MoELayer), as the cost model prices it: top_k of
/// `experts` MLPs a token, grouped GEMMs, all-to-all token dispatch over ep, the auxiliary
/// load-balancing loss that keeps dropless routing near even (coefficient 1e-2, as Megatron-LM's
/// MoE README starts it), and for token dropping capacity factor 1.
void moe_flags(ArgWriter& w, const PlanFile& plan, const ModelSpec& model) {
  const MoeSpec& moe = model.moe;
  if (!moe.enabled()) return;
  if (is_encoder_decoder(model))
    throw SpecError(plan_where(plan) + "model '" + model.name + "' is an encoder-decoder with experts; Megatron-LM's "
                    "--moe-layer-freq describes one decoder stack: plan a decoder-only MoE model");
  // LLaMA-family MoE models (Mixtral, DeepSeek, Qwen) have no linear biases, as Megatron-LM's
  // MoE examples run them, unless the experts carry them (GPT-OSS: add_bias_linear, attention's
  // too); Megatron-Core asserts "Bias in Moe is only supported when ETP==1".
  const bool biases = model.linear_biases();
  if (biases && plan.key.etp > 1)
    throw SpecError(plan_where(plan) + "etp " + num(plan.key.etp) + " with model '" + model.name + "''s " +
                    family_name(model.family) + " layers, which have biases: Megatron-Core asserts \"Bias in Moe is "
                    "only supported when ETP==1\"; set etp to 1");
  w.flag("--num-experts", num(moe.experts));
  w.flag("--moe-router-topk", num(moe.top_k));
  w.flag("--moe-ffn-hidden-size", num(moe.expert_ffn_hidden));
  if (moe.shared_expert_ffn_hidden > 0) w.flag("--moe-shared-expert-intermediate-size", num(moe.shared_expert_ffn_hidden));
  w.flag("--moe-layer-freq", moe_layer_pattern(model));
  w.flag("--moe-router-load-balancing-type", "aux_loss");
  w.flag("--moe-aux-loss-coeff", "1e-2");
  w.flag("--moe-grouped-gemm");
  const MoeDispatcher dispatcher = plan.key.moe_dispatcher;
  w.flag("--moe-token-dispatcher-type", is_flex(dispatcher) ? "flex" : moe_dispatcher_name(dispatcher));
  if (is_flex(dispatcher)) w.flag("--moe-flex-dispatcher-backend", moe_dispatcher_name(dispatcher));
  if (moe.group_limited()) {
    w.flag("--moe-router-num-groups", num(moe.router_groups));
    w.flag("--moe-router-group-topk", num(moe.router_group_topk));
  }
  if (moe.token_drop) w.flag("--moe-expert-capacity-factor", "1.0");
  if (moe.force_balance) w.flag("--moe-router-force-load-balancing");
}

/// Recomputation and sequence parallelism, as the cost model prices them.
void activation_flags(ArgWriter& w, const PlanKey& key) {
  // Full recomputation of every layer: keep each layer's input, redo its forward in the
  // backward pass (uniform chunks of one layer).
  if (key.recompute) {
    w.flag("--recompute-granularity", "full");
    w.flag("--recompute-method", "uniform");
    w.flag("--recompute-num-layers", "1");
  } else if (key.selective_recompute) {
    // Selective recomputation: Korthikanti et al.'s attention core (Megatron-Core's default
    // module), or the modules the plan names.
    w.require_upstream("selective recomputation");
    w.flag("--recompute-granularity", "selective");
    if (key.names_recompute_modules()) {
      w.require_upstream("--recompute-modules");
      w.flag("--recompute-modules");  // nargs='+': a token per module
      for (const std::string& name : recompute_module_names(key.recompute_modules)) w.tokens().push_back(name);
    }
  }
  if (key.sequence_parallel && key.tp > 1) {
    w.require_upstream("--sequence-parallel");
    w.flag("--sequence-parallel");
  }
}

/// Communication overlapped with compute, where the plan was priced with it, and CUDA graphs.
void overlap_flags(ArgWriter& w, const PlanFile& plan) {
  const PlanKey& key = plan.key;
  if (plan.execution.cuda_graphs) {
    w.require_upstream("CUDA graphs (--cuda-graph-impl)");
    w.flag("--cuda-graph-impl", "local");
  }
  if (plan.execution.tp_comm_overlap && key.tp > 1) {
    // Megatron-LM overlaps tensor-parallel communication with the GEMMs only with sequence
    // parallelism (Transformer Engine's userbuffers).
    if (w.fasop() || !key.sequence_parallel)
      throw SpecError(plan_where(plan) + "--tp-comm-overlap needs sequence parallelism in Megatron-LM" +
                      (w.fasop() ? " and is not in FASOP's fork" : "") +
                      "; re-plan with --fix sp=on, or without the overlap");
    w.flag("--tp-comm-overlap");
  }
  if (plan.execution.overlap_moe_expert_parallel_comm && key.ep > 1) {
    // Megatron-Core's EP all-to-all overlap, with the weight gradients delayed to widen the
    // window, as Megatron-Bridge's perf recipes pair them (moe_a2a_overlap). The rules
    // TransformerConfig asserts were checked when the plan was made (ep_overlap_fault).
    w.require_upstream("the EP all-to-all overlap (--overlap-moe-expert-parallel-comm)");
    if (!ep_overlap_runs(key))
      throw SpecError(plan_where(plan) + "overlap_ep_comm needs virtual stages where pp > 1 and no full "
                      "recomputation (Megatron-Core's TransformerConfig); re-plan with --ep-comm-overlap");
    w.flag("--overlap-moe-expert-parallel-comm");
    w.flag("--delay-wgrad-compute");
  }
  // FASOP's fork overlaps the column-parallel layers' input-gradient all-reduce by default and
  // then refuses to start without CUDA_DEVICE_MAX_CONNECTIONS=1, at any tp (its arguments.py
  // validate_args); FASOP's own runs (_01_run_inter.sh) turn the overlap off, and its profiles
  // and cost model price none.
  if (w.fasop()) w.flag("--no-async-tensor-model-parallel-allreduce");
  const bool analytic_dp = plan.policy == "analytic" && key.dp > 1 && !w.fasop();
  if (plan.execution.overlap_grad_reduce && analytic_dp) w.flag("--overlap-grad-reduce");
  // Megatron-LM overlaps the parameter all-gather only for its distributed optimizer (ZeRO-1
  // here) or Megatron-FSDP, with the gradient reduction overlapped too; FSDP2 prefetches itself.
  if (plan.execution.overlap_param_gather && analytic_dp && key.zero_stage >= 1 && plan.execution.overlap_grad_reduce && !w.torch_fsdp())
    w.flag("--overlap-param-gather");
}

/// ZeRO-3 as PyTorch's FSDP2, with what validate_args asserts for --use-torch-fsdp2: no pipeline
/// or expert parallelism, an untied output layer, no fp16, no distributed optimizer, no gradient
/// accumulation fusion, a torch_dist checkpoint and CUDA_DEVICE_MAX_CONNECTIONS not 1 (the
/// launch leaves it unset for ZeRO 2 and 3: plan_environment).
void torch_fsdp2_flags(ArgWriter& w, const PlanFile& plan, const ModelSpec& model) {
  const PlanKey& key = plan.key;
  w.require_upstream("--use-torch-fsdp2 (PyTorch FSDP2; re-plan with --zero 0 or 1 for the fork)");
  auto refuse = [&](const std::string& why, const std::string& fix) {
    throw SpecError(plan_where(plan) + "--fsdp torch: Megatron-LM runs --use-torch-fsdp2 " + why +
                    " (arguments.py validate_args); " + fix + ", or emit with --fsdp megatron");
  };
  if (key.zero_stage != 3)
    refuse("as ZeRO-3 (parameters resharded after each forward), the plan is ZeRO " + num(key.zero_stage),
           "re-plan with --zero 3");
  if (key.pp > 1) refuse("without pipeline parallelism, the plan has pp " + num(key.pp), "re-plan with --fix pp=1");
  if (key.ep > 1) refuse("without expert parallelism, the plan has ep " + num(key.ep), "re-plan with --ep 1");
  if (model.tied_embeddings)
    refuse("only with --untie-embeddings-and-output-weights, model '" + model.name + "' ties them",
           "untie them in the model file");
  if (non_gemm_precision(model.dtype) == "fp16") refuse("without fp16, model '" + model.name + "' trains in it", "train in bf16");
  w.flag("--use-torch-fsdp2");
  w.flag("--no-gradient-accumulation-fusion");
  w.flag("--ckpt-format", "torch_dist");
}

/// ZeRO. ZeRO-1 is Megatron's distributed optimizer (the optimizer state sharded over dp; the
/// gradients reduce-scattered, but every rank keeps the full gradient buffer). ZeRO-2 and -3 are
/// Megatron-FSDP (megatron/core/distributed/fsdp): its sharding strategy optim_grads shards the
/// gradients too, optim_grads_params the parameters as well, gathered layer by layer in the
/// forward and backward passes; it wants the distributed optimizer (Megatron-FSDP 1) and saves
/// checkpoints as fsdp_dtensor only (arguments.py validate_args). FASOP's fork predates it.
void zero_flags(ArgWriter& w, const PlanFile& plan, const ModelSpec& model) {
  const int zero = plan.key.zero_stage;
  if (w.torch_fsdp()) {
    torch_fsdp2_flags(w, plan, model);
    return;
  }
  const bool fsdp = runs_megatron_fsdp(plan.key);
  if (fsdp)
    w.require_upstream("--use-megatron-fsdp (Megatron-FSDP, ZeRO stage " + num(zero) +
                       "; re-plan with --zero 0 or 1 for the fork)");
  if (zero >= 1) w.flag("--use-distributed-optimizer");
  if (fsdp) {
    w.flag("--use-megatron-fsdp");
    w.flag("--data-parallel-sharding-strategy", zero == 2 ? "optim_grads" : "optim_grads_params");
    w.flag("--ckpt-format", "fsdp_dtensor");
  }
}

}  // namespace

std::vector<std::string> megatron_args(const PlanFile& plan, const ModelSpec& model, MegatronFlavor flavor,
                                       FsdpImpl fsdp) {
  require_megatron_plan(plan, model);
  ArgWriter w(plan, flavor, fsdp);
  layout_flags(w, plan, model);
  dimension_flags(w, model);
  architecture_flags(w, model);
  moe_flags(w, plan, model);
  precision_flags(w, plan, model);
  activation_flags(w, plan.key);
  overlap_flags(w, plan);
  zero_flags(w, plan, model);
  // The partition: which layers each pipeline rank builds (nothing with one stage but T5's checks).
  for (const std::string& token : megatron_partition_args(plan, model, flavor)) w.tokens().push_back(token);
  return w.tokens();
}

std::vector<TrainerArg> split_flags(const std::vector<std::string>& tokens) {
  std::vector<TrainerArg> args;
  for (const std::string& token : tokens) {
    if (token.rfind("--", 0) == 0)
      args.push_back({token, {}});
    else if (!args.empty())
      args.back().values.push_back(token);
  }
  return args;
}

std::string megatron_args_text(const PlanFile& plan, const ModelSpec& model, MegatronFlavor flavor, FsdpImpl fsdp) {
  const std::vector<std::string> tokens = megatron_args(plan, model, flavor, fsdp);
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
