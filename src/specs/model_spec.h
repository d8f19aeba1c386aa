#pragma once
#include <map>
#include <string>
#include <vector>

#include "specs/mla_spec.h"
#include "specs/moe_spec.h"
#include "specs/sliding_window.h"

namespace fasop {

/// What a pipeline unit is, for the parameter and activation formulas.
enum class LayerRole { kEmbedding, kTransformer, kPostProcess };

/// One pipeline unit (a layer the partitioner may place on any stage).
struct LayerUnit {
  std::string type;      ///< profile key, e.g. "transformer" or "encoder_last"
  LayerRole role = LayerRole::kTransformer;
  std::string segment = {};  ///< "" or e.g. "encoder"/"decoder": a stage never spans two segments
  bool cross_attention = false;  ///< a decoder layer that also attends to the encoder (T5)
  bool moe = false;  ///< a transformer layer whose MLP is the model's mixture of experts (ModelSpec::moe)
  /// Tokens before each query that the layer's attention sees (ModelSpec::sliding_window); 0: all.
  int attention_window = 0;
};

/// The MLP's activation: GELU (two matrices), SwiGLU (three, LLaMA), squared ReLU (two,
/// Nemotron) or quick-GELU's GLU (three, GPT-OSS: Megatron's --quick-geglu, x sigmoid(1.702 x)).
enum class Activation { kGelu, kSwiglu, kSquaredRelu, kQuickGeglu };
/// Whether an activation gates: a gate and an up projection (three matrices), not one.
inline bool is_gated(Activation activation) {
  return activation == Activation::kSwiglu || activation == Activation::kQuickGeglu;
}
/// The normalisation layers: LayerNorm (scale and bias) or RMSNorm (scale only).
enum class Norm { kLayerNorm, kRmsNorm };

/// The Hugging Face model family a model belongs to: its module names, which the schedule
/// emitters target (GPT-2, BERT, T5, LLaMA).
enum class ModelFamily { kGpt2, kBert, kT5, kLlama };

/// The family's name as model files write it: gpt2, bert, t5 or llama.
const char* family_name(ModelFamily family);

/// Megatron-LM's --make-vocab-size-divisible-by default: the vocabulary is padded to a multiple
/// of this x tp, which keeps the head's GEMMs aligned (GPT-2's 50,257 rows become 50,304).
constexpr int kMegatronVocabMultiple = 128;

/// Rows of the embedding table (and of the output head) one of tp ranks holds when the
/// vocabulary is padded to a multiple of `multiple` x tp (1: ceil(vocab / tp)). The analytic
/// layer model and the LibTorch profiler share it, so that they count the same rows.
long padded_vocab_shard(long vocab, int tp, int multiple);

/// A transformer model: dimensions, training batch and its pipeline units in order.
struct ModelSpec {
  std::string name;         ///< preset name, e.g. "gpt2xl"
  std::string report_name;  ///< FASOP's table name, e.g. "gpt2"
  std::vector<std::string> aliases;  ///< other names, e.g. FASOP's "gpt2XL"
  std::string source;       ///< file (or preset) it was loaded from, for messages
  int hidden = 0;
  int heads = 0;
  int sequence = 0;
  int vocab = 0;
  int global_batch = 0;
  int precision_bits = 16;
  std::string dtype = "fp16";  ///< training precision of the GEMMs: fp16, bf16 or fp32
  /// Megatron's --grad-reduce-in-bf16 (Megatron-Bridge's grad_reduce_in_fp32 false): bf16 (and
  /// fp8) training keeps and reduces its gradients in bf16, 2 bytes a parameter, not fp32's 4. A
  /// run's choice, not the architecture's: search and estimate --grad-reduce-in-bf16, a plan
  /// file's or a validation plan's field grad_reduce_in_bf16 set it.
  bool grad_reduce_in_bf16 = false;
  int ffn_hidden = 0;          ///< MLP inner width (4 x hidden unless given)
  int kv_heads = 0;            ///< key/value heads: heads, or fewer with grouped-query attention
  /// Width of one attention head: hidden / heads unless given (Qwen3-30B-A3B: 128 where hidden
  /// / heads is 64, so that its attention is wider than its hidden size).
  int head_dim = 0;
  MoeSpec moe;                 ///< the mixture of experts of its `moe` units (none: a dense model)
  /// Multi-head latent attention in every transformer layer (field `mla`; none: multi-head or
  /// grouped-query attention of head_dim-wide heads).
  MlaSpec mla;
  /// Multi-token prediction (DeepSeek-V3; Megatron-Core's --mtp-num-layers): after the last
  /// layer, each of these modules embeds the next tokens again, projects them with the hidden
  /// state (eh_proj, 2h -> h), runs one more transformer layer like the last one and the shared
  /// output head and loss. Field `mtp_layers`; they live with the post-process unit (the loss), as
  /// Megatron places them on the last pipeline stage.
  int mtp_layers = 0;
  /// Sliding-window attention on some or all transformer layers (field `sliding_window:
  /// {tokens, full_every}`); apply_sliding_window marks the units it windows.
  SlidingWindow sliding_window;
  Activation activation = Activation::kGelu;
  Norm norm = Norm::kLayerNorm;
  bool tied_embeddings = true;  ///< the output head shares the input embedding's weights
  ModelFamily family = ModelFamily::kGpt2;  ///< module names for schedules (field `family`)
  /// Fused attention (FlashAttention: the score matrix stays on chip) or Megatron-LM's 2021
  /// unfused kernels, which write the b x heads x s x s scores and read them back (field
  /// `attention: flash|unfused`).
  bool flash_attention = true;
  /// Causal self-attention (decoders: GPT, LLaMA): fused kernels compute half the scores.
  /// Field `causal`; default true except for BERT. Encoder segments (T5) attend to everything.
  bool causal = true;
  /// Dropout probabilities (Megatron's --hidden-dropout, --attention-dropout; fields
  /// hidden_dropout, attention_dropout). Only whether they are above 0 matters to the cost model:
  /// a dropout keeps a one-byte mask of its input for the backward pass. Default 0.1 (GPT-2,
  /// BERT, T5 and Megatron-LM's defaults), 0 for the llama family (no dropout).
  double hidden_dropout = 0.1;
  double attention_dropout = 0.1;
  /// The rotary embedding's base (theta; field rotary_base): 10000 (Megatron-LM's --rotary-base
  /// default, LLaMA 2), 500000 for Llama 3, 1000000 for Qwen3. Costs nothing; the emitters pass it.
  int rotary_base = 10000;
  /// Queries and keys normalised per head before attention (Megatron's --qk-layernorm; Qwen3,
  /// OLMo 2): field qk_layernorm. Each norm keeps its input for the backward pass.
  bool qk_layernorm = false;
  double train_steps = 0;       ///< steps of a full training run, to price it (0: not given)
  double train_tokens = 0;      ///< tokens of a full training run (0: not given); steps follow the batch
  std::vector<LayerUnit> units;
  std::map<std::string, std::string> default_clusters;  ///< "homogeneous"/"heterogeneous"/"pareto" -> preset
  /// The model's name in the training stacks that ship it (field `stacks`), for `schedule`:
  /// torchtitan's base configuration as "module:function" (a config_registry function returning
  /// Trainer.Config), Megatron-Bridge's recipe stem (run_recipe.py --model). Empty: not shipped.
  std::string torchtitan_config;
  std::string megatron_bridge_recipe;
  /// Where the recipe's ConfigContainer holds Megatron-Core's TransformerConfig fields (field
  /// `stacks.megatron_bridge_transformer`): "model" (a GPTModelProvider), or "model.transformer"
  /// (the recipes built with get_model_config(), whose BridgeGPTModelConfig nests them).
  std::string megatron_bridge_transformer = "model";

  /// Number of transformer-role units (FASOP's num_layers, the bound on pp).
  int num_transformer_layers() const;
  /// The transformer layer a multi-token-prediction module runs: one like the model's last
  /// (Megatron-Core builds it from the decoder's layer spec, so DeepSeek-V3's is a MoE layer).
  LayerUnit mtp_transformer_unit() const;
  int num_units() const { return static_cast<int>(units.size()); }
  /// The attention head's width: head_dim, or hidden / heads.
  int attention_head_dim() const { return head_dim > 0 ? head_dim : hidden / heads; }
  /// Width of the queries (and of the attention's output): heads x the head's width.
  double query_width() const { return double(heads) * attention_head_dim(); }
  /// Width of the keys, and of the values: kv_heads x the head's width.
  double kv_width() const { return double(kv_heads) * attention_head_dim(); }
  /// Learned absolute position embeddings (GPT-2, BERT: Megatron's default), whose position ids
  /// the embedding keeps; the llama family rotates queries and keys instead, T5 biases scores.
  bool learned_positions() const { return family == ModelFamily::kGpt2 || family == ModelFamily::kBert; }
  /// Rotary position embeddings on queries and keys (the llama family: Megatron's --position-embedding-type rope).
  bool rotary_positions() const { return family == ModelFamily::kLlama; }
  /// Biases on the linear layers: GPT-2, BERT and T5 carry them; the llama family only where its
  /// experts do (GPT-OSS; Megatron's add_bias_linear, --disable-bias-linear otherwise).
  bool linear_biases() const { return family != ModelFamily::kLlama || moe.expert_bias; }
  /// Each unit's index among its segment's transformer-role units (each stack numbers its
  /// layers from 0, as Hugging Face and `plan show` do: T5's "decoder 0"); -1 for other units.
  std::vector<int> segment_layer_indices() const;
};

/// Marks the transformer units `model.sliding_window` windows (their attention_window, and
/// "_window" after their type, so that they get a profile of their own), counting layers from 1
/// as Megatron-Core does. Loading a model or a validation case calls it once its units are built.
void apply_sliding_window(ModelSpec& model);

}  // namespace fasop
