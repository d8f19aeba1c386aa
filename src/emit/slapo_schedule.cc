#include "emit/slapo_schedule.h"

#include <map>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "emit/plan_checks.h"
#include "specs/spec_error.h"

namespace fasop {
namespace {

/// Where a family's modules live in its Hugging Face model, as Slapo paths.
struct SlapoFamily {
  const char* hf_class;        ///< the model class the paths belong to
  const char* layer_class;     ///< the transformer layer's class, for comments
  /// Layer lists by segment ("" for single-stack models): the cut and checkpoint targets.
  std::map<std::string, std::string> layers;
  std::vector<std::string> trace_until;  ///< modules traced so that their children can be cut
  std::vector<std::string> input_names;  ///< forward arguments left symbolic when tracing
  const char* embedding;       ///< what an embedding unit is, for the header
  const char* post_process;    ///< what the post-process unit is (or the last layer holds)
};

/// The module names below come from transformers' modeling_{gpt2,bert,t5,llama}.py and the
/// trace/input names from Slapo's own model_schedule/{gpt2,bert,t5}.py (LLaMA follows GPT-2's).
SlapoFamily family_of(ModelFamily family) {
  switch (family) {
    case ModelFamily::kGpt2:
      return {"GPT2LMHeadModel", "GPT2Block", {{"", "transformer.h"}}, {"transformer"},
              {"input_ids", "attention_mask", "position_ids"}, "transformer.wte, transformer.wpe",
              "transformer.ln_f, lm_head"};
    case ModelFamily::kBert:
      return {"BertForPreTraining", "BertLayer", {{"", "bert.encoder.layer"}}, {"bert.encoder"},
              {"input_ids", "attention_mask", "token_type_ids"}, "bert.embeddings",
              "the heads after bert.encoder (bert.pooler, cls)"};
    case ModelFamily::kT5:
      return {"T5ForConditionalGeneration", "T5Block",
              {{"encoder", "encoder.block"}, {"decoder", "decoder.block"}}, {"encoder", "decoder"},
              {"decoder_input_ids", "input_ids", "decoder_attention_mask", "attention_mask"},
              "shared (the embedding both stacks use)", "final_layer_norm"};
    case ModelFamily::kLlama:
      return {"LlamaForCausalLM", "LlamaDecoderLayer", {{"", "model.layers"}}, {"model"},
              {"input_ids", "attention_mask", "position_ids"}, "model.embed_tokens",
              "model.norm, lm_head"};
  }
  throw SpecError("unknown model family");
}

/// A unit's place in the Hugging Face model: its layer path when it is a transformer layer.
struct UnitPlace {
  int layer = -1;         ///< index within its segment's layer list, -1 for other units
  std::string path;       ///< e.g. "transformer.h.3"; empty for other units
};

std::vector<UnitPlace> place_units(const ModelSpec& model, const SlapoFamily& names) {
  std::vector<UnitPlace> places;
  const std::vector<int> layer = model.segment_layer_indices();  // HF layers restart at 0 in each stack
  for (size_t u = 0; u < model.units.size(); ++u) {
    const LayerUnit& unit = model.units[u];
    UnitPlace place;
    if (layer[u] >= 0) {
      auto list = names.layers.find(unit.segment);
      if (list == names.layers.end())
        throw SpecError("model " + model.name + ": segment '" + unit.segment +
                                    "' has no layer list in the " + family_name(model.family) + " family");
      place.layer = layer[u];
      place.path = list->second + "." + std::to_string(place.layer);
    }
    places.push_back(place);
  }
  return places;
}

/// One cut_pipeline_stage call: the module Slapo cuts after, and why it is there.
struct Cut {
  std::string target;
  std::string note;  ///< non-empty when the cut is not where the plan put the boundary
};

/// Slapo cuts *after* a named child of a traced module, so a boundary before layer i of a stack
/// is a cut after layer i-1; the boundary between T5's stacks is a cut after `encoder` (as
/// Slapo's t5 schedule does). Before layer 0 of a stack there is no layer to cut after (the
/// embedding and its dropout are not one module in these models), so that cut moves to after
/// layer 0: the first stage gains one layer. After the last layer the cut is exact: the final norm
/// and head, which the plan's post-process unit stands for, follow it on the last stage.
std::vector<Cut> pipeline_cuts(const PlanFile& plan, const ModelSpec& model, const std::vector<UnitPlace>& places) {
  std::vector<Cut> cuts;
  int boundary = 0;
  for (size_t s = 0; s + 1 < plan.partition.size(); ++s) {
    boundary += plan.partition[s];
    const LayerUnit& before = model.units[boundary - 1];
    const LayerUnit& after = model.units[boundary];
    Cut cut;
    if (before.segment != after.segment) {
      cut.target = before.segment;  // the stack module itself, e.g. "encoder"
    } else if (places[boundary].layer > 0) {
      cut.target = places[boundary - 1].path;
    } else if (places[boundary].layer == 0) {
      cut.target = places[boundary].path;
      cut.note = "the plan cuts before " + places[boundary].path +
                 ", right after the embedding; Slapo cuts only after a module of the traced stack, "
                 "so the cut is after " + places[boundary].path + " (stage " + std::to_string(s) +
                 " gains that layer)";
    } else if (after.role == LayerRole::kPostProcess && places[boundary - 1].layer >= 0) {
      cut.target = places[boundary - 1].path;  // the head and final norm go to the next stage
    } else {
      throw SpecError("Slapo cannot cut between units " + std::to_string(boundary - 1) + " (" +
                                  before.type + ") and " + std::to_string(boundary) + " (" + after.type + ")");
    }
    for (const Cut& earlier : cuts)
      if (earlier.target == cut.target)
        throw SpecError("Slapo cannot realize partition: stage " + std::to_string(s + 1) +
                                    " would be empty once the cut after the embedding moves to " + cut.target);
    cuts.push_back(cut);
  }
  return cuts;
}

std::string py_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", \"" : "\"") + items[i] + "\"";
  return out + "]";
}

void check_divides(int tp, int value, const std::string& what, const ModelSpec& model) {
  if (value % tp != 0)
    throw SpecError("tp " + std::to_string(tp) + " does not divide " + what + " (" +
                                std::to_string(value) + ") of " + model.name);
}

/// Megatron's pair in Slapo's words: the column-parallel layer keeps 1/tp of the outputs and
/// all-reduces its input gradient in the backward pass; the row-parallel layer keeps 1/tp of
/// the inputs and all-reduces its partial output in the forward pass.
void column(std::ostream& out, const std::string& path, bool bias, int weight_axis = 0) {
  out << "    sch[\"" << path << "\"].shard(\"weight\", axis=" << weight_axis << ")\n";
  if (bias) out << "    sch[\"" << path << "\"].shard(\"bias\", axis=0)\n";
  out << "    sch[\"" << path << "\"].sync(mode=\"bwd_post\", sync_op_or_fn=\"all_reduce\")\n";
}
void row(std::ostream& out, const std::string& path, int weight_axis = 1) {
  out << "    sch[\"" << path << "\"].shard(\"weight\", axis=" << weight_axis << ")\n";
  out << "    sch[\"" << path << "\"].sync(mode=\"fwd_post\", sync_op_or_fn=\"all_reduce\")\n";
}
void heads(std::ostream& out, const std::string& path, const std::vector<std::string>& attrs) {
  out << "    _divide_heads(sch[\"" << path << "\"].mod, " << py_list(attrs) << ")\n";
}
void fork(std::ostream& out, const std::string& path) {
  out << "    sch[\"" << path << "\"].fork_rng()\n";
}

/// Tensor parallelism of one layer. Comments in the script say the per-family reasons once.
void shard_layer(std::ostream& out, ModelFamily family, const LayerUnit& unit, const UnitPlace& place) {
  const std::string& p = place.path;
  out << "    # " << p << "\n";
  switch (family) {
    case ModelFamily::kGpt2:
      out << "    _regroup_fused_qkv(sch[\"" << p << ".attn.c_attn\"].mod)\n";
      column(out, p + ".attn.c_attn", true, 1);  // Conv1D: weight is (in, out)
      heads(out, p + ".attn", {"num_heads", "split_size"});
      fork(out, p + ".attn.attn_dropout");
      row(out, p + ".attn.c_proj", 0);
      column(out, p + ".mlp.c_fc", true, 1);
      row(out, p + ".mlp.c_proj", 0);
      break;
    case ModelFamily::kBert:
      for (const char* proj : {"query", "key", "value"}) column(out, p + ".attention.self." + proj, true);
      heads(out, p + ".attention.self", {"num_attention_heads", "all_head_size"});
      fork(out, p + ".attention.self.dropout");
      row(out, p + ".attention.output.dense");
      column(out, p + ".intermediate.dense", true);
      row(out, p + ".output.dense");
      break;
    case ModelFamily::kT5: {
      const bool decoder = unit.cross_attention;
      std::vector<std::string> attentions = {p + ".layer.0.SelfAttention"};
      if (decoder) attentions.push_back(p + ".layer.1.EncDecAttention");
      for (const std::string& a : attentions) {
        for (const char* proj : {"q", "k", "v"}) column(out, a + "." + proj, false);
        heads(out, a, {"n_heads", "inner_dim"});
        fork(out, a);
        row(out, a + ".o");
      }
      if (place.layer == 0) {
        // The first block's self-attention holds the relative position bias, one column per
        // head; every later block reuses its output, so it is split by heads like q, k and v.
        out << "    sch[\"" << attentions[0] << ".relative_attention_bias\"].shard(\"weight\", axis=1)\n";
      }
      const std::string ff = p + (decoder ? ".layer.2" : ".layer.1") + ".DenseReluDense";
      column(out, ff + ".wi", false);
      fork(out, ff + ".dropout");
      row(out, ff + ".wo");
      break;
    }
    case ModelFamily::kLlama:
      for (const char* proj : {"q_proj", "k_proj", "v_proj"}) column(out, p + ".self_attn." + proj, false);
      heads(out, p + ".self_attn", {"num_heads", "num_key_value_heads", "hidden_size"});
      fork(out, p + ".self_attn");
      row(out, p + ".self_attn.o_proj");
      for (const char* proj : {"gate_proj", "up_proj"}) column(out, p + ".mlp." + proj, false);
      row(out, p + ".mlp.down_proj");
      break;
  }
}

const char* kTpNotes[] = {
    // GPT-2
    "    # GPT-2 (Conv1D layers store weights as (in, out)): c_attn and c_fc are column-parallel\n"
    "    # (weight axis 1, bias axis 0), attn.c_proj and mlp.c_proj row-parallel (weight axis 0; Slapo\n"
    "    # adds their bias after the all-reduce). c_attn is one fused [q | k | v] projection, so its\n"
    "    # columns are regrouped per rank before sharding. attn_dropout acts on the sharded heads: its\n"
    "    # RNG is forked so that ranks drop different elements; resid_dropout runs after the\n"
    "    # all-reduce on the full tensor and keeps the shared RNG.\n",
    // BERT
    "    # BERT: query/key/value and intermediate.dense are column-parallel (nn.Linear weight axis 0,\n"
    "    # bias axis 0), attention.output.dense and output.dense row-parallel (weight axis 1). Each of\n"
    "    # q, k and v all-reduces its own input gradient; the sum of the three is the full gradient.\n"
    "    # attention.self.dropout acts on the sharded attention probabilities: forked RNG.\n",
    // T5
    "    # T5 (no biases): q/k/v and DenseReluDense.wi are column-parallel, o and wo row-parallel.\n"
    "    # T5's attention dropout is functional inside SelfAttention/EncDecAttention, so the whole\n"
    "    # attention module forks the RNG (its o projection draws no random numbers); the\n"
    "    # DenseReluDense dropout sits between wi and wo, in the sharded region, and forks too.\n",
    // LLaMA
    "    # LLaMA (no biases): q/k/v_proj and gate/up_proj are column-parallel, o_proj and down_proj\n"
    "    # row-parallel. Grouped-query attention shards the key/value heads too. The attention\n"
    "    # dropout (config.attention_dropout) is functional inside self_attn, so the module forks\n"
    "    # the RNG (o_proj draws no random numbers).\n",
};

}  // namespace

std::string slapo_schedule_py(const PlanFile& plan, const ModelSpec& model) {
  const PlanKey& key = plan.key;
  const SlapoFamily names = family_of(model.family);
  stage_boundaries(plan, model);  // throws unless the partition covers the model in pp stages
  require_no_context_or_experts(plan, model, "this Slapo schedule");
  require_no_megatron_features(plan, "this Slapo schedule");
  require_uniform_tp(plan, "this Slapo schedule");
  require_even_batch(plan, "this Slapo schedule");
  require_no_speed_split(plan, "this Slapo schedule");
  if (key.tp > 1) {
    check_divides(key.tp, model.heads, "the attention heads", model);
    check_divides(key.tp, model.kv_heads > 0 ? model.kv_heads : model.heads, "the key/value heads", model);
    check_divides(key.tp, model.ffn_hidden > 0 ? model.ffn_hidden : 4 * model.hidden, "the MLP width", model);
  }
  const std::vector<UnitPlace> places = place_units(model, names);
  const std::vector<Cut> cuts = pipeline_cuts(plan, model, places);

  std::ostringstream out;
  // Header: the layout, so that a reader knows which plan the script realizes.
  out << "# Slapo schedule for " << model.name << " (" << family_name(model.family) << " family, Hugging Face "
      << names.hf_class << "), generated by fasop-cpp.\n";
  out << "# Layout: tp=" << key.tp << " dp=" << key.dp << " pp=" << key.pp << " mbs=" << key.mbs
      << " global_batch=" << plan.global_batch << " zero_stage=" << key.zero_stage
      << " recompute=" << (key.recompute ? "full" : "none") << "\n";
  out << "# Partition (units per stage): [";
  for (size_t s = 0; s < plan.partition.size(); ++s) out << (s ? ", " : "") << plan.partition[s];
  out << "]\n# Node order: " << (plan.node_order.empty() ? "(not given)" : "");
  for (size_t n = 0; n < plan.node_order.size(); ++n) out << (n ? ", " : "") << plan.node_order[n];
  out << "\n";
  int unit = 0;
  for (size_t s = 0; s < plan.partition.size(); ++s) {
    const int end = unit + plan.partition[s];
    out << "#   stage " << s << ": units " << unit << "-" << end - 1 << ":";
    for (int u = unit; u < end;) {
      if (places[u].layer < 0) {
        out << " " << model.units[u++].type;
        continue;
      }
      int last = u;  // a run of layers of one stack is written first..last
      while (last + 1 < end && places[last + 1].layer >= 0 && model.units[last + 1].segment == model.units[u].segment)
        ++last;
      out << " " << places[u].path;
      if (last > u) out << ".." << places[last].layer;
      u = last + 1;
    }
    out << "\n";
    unit = end;
  }
  out << "# Embeddings and output heads stay replicated (not vocab-parallel): the plan's tp applies to\n"
         "# the transformer layers (a vocabulary such as GPT-2's 50257 entries need not split evenly).\n";
  for (const Cut& cut : cuts)
    if (!cut.note.empty()) out << "# NOTE: " << cut.note << ".\n";
  out << "\"\"\"Slapo schedule of a fasop-cpp plan: call build_schedule(model) on every rank.\"\"\"\n"
         "import inspect\n\n"
         "import slapo\n"
         "from torch import fx\n\n";
  out << "TP = " << key.tp << "\nPP = " << key.pp << "\nDP = " << key.dp << "\nMICRO_BATCH = " << key.mbs
      << "\nGLOBAL_BATCH = " << plan.global_batch << "\n";
  std::vector<std::string> cut_targets;
  for (const Cut& cut : cuts) cut_targets.push_back(cut.target);
  out << "# Slapo cuts after each of these modules.\nPIPELINE_CUTS = " << py_list(cut_targets) << "\n\n\n";

  // Helpers the per-layer calls use.
  out << "def _divide_heads(module, names):\n"
         "    \"\"\"Each rank keeps 1/TP of the heads; the HF attention reshapes with these counts.\n"
         "    Attributes a transformers version does not have are skipped (newer ones reshape with -1).\"\"\"\n"
         "    for name in names:\n"
         "        if hasattr(module, name):\n"
         "            value = getattr(module, name)\n"
         "            if value % TP:\n"
         "                raise ValueError(f\"{name}={value} does not split over TP={TP}\")\n"
         "            setattr(module, name, value // TP)\n\n\n";
  if (model.family == ModelFamily::kGpt2 && key.tp > 1) {
    out << "def _regroup_fused_qkv(conv1d):\n"
           "    \"\"\"c_attn's output columns are [q | k | v]; contiguous TP chunks of that would give\n"
           "    rank 0 all of q. Reorder them to [q0 k0 v0 | q1 k1 v1 | ...] so that after shard() each\n"
           "    rank holds q, k and v of its own heads (split_size then splits them).\"\"\"\n"
           "    import torch\n\n"
           "    with torch.no_grad():\n"
           "        n_in, n_out = conv1d.weight.shape\n"
           "        part = n_out // 3 // TP\n"
           "        conv1d.weight.copy_(conv1d.weight.reshape(n_in, 3, TP, part).transpose(1, 2).reshape(n_in, n_out))\n"
           "        conv1d.bias.copy_(conv1d.bias.reshape(3, TP, part).transpose(0, 1).reshape(n_out))\n\n\n";
  }
  out << "def _in_signature_order(layer):\n"
         "    \"\"\"Slapo's checkpoint passes arguments positionally, while HF models call their layers\n"
         "    with keywords: bind them to the layer's signature and pass them in its order.\"\"\"\n"
         "    sig = inspect.signature(layer.forward)\n"
         "    names = [p.name for p in sig.parameters.values()\n"
         "             if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]\n\n"
         "    def order_args_fn(*args, **kwargs):\n"
         "        bound = sig.bind_partial(*args, **kwargs)\n"
         "        bound.apply_defaults()\n"
         "        return tuple(bound.arguments.get(name) for name in names)\n\n"
         "    return order_args_fn\n\n\n";

  // Tensor parallelism.
  out << "def _shard_tensor_parallel(sch):\n"
         "    \"\"\"Megatron-style tensor parallelism of every transformer layer (TP = " << key.tp << ").\"\"\"\n";
  if (key.tp > 1) {
    out << kTpNotes[static_cast<int>(model.family)];
    for (size_t u = 0; u < model.units.size(); ++u)
      if (places[u].layer >= 0) shard_layer(out, model.family, model.units[u], places[u]);
  } else {
    out << "    # tp = 1: nothing to shard.\n";
  }
  out << "\n\n";

  // Activation recomputation.
  out << "def _checkpoint_layers(sch):\n"
         "    \"\"\"Full recomputation: each transformer layer keeps only its input.\"\"\"\n";
  if (key.recompute) {
    for (size_t u = 0; u < model.units.size(); ++u)
      if (places[u].layer >= 0)
        out << "    sch[\"" << places[u].path << "\"].checkpoint(order_args_fn=_in_signature_order(sch[\""
            << places[u].path << "\"].mod))\n";
  } else {
    out << "    # The plan does not recompute activations.\n";
  }
  out << "\n\n";

  // Pipeline stages.
  out << "def _cut_pipeline_stages(sch):\n"
         "    \"\"\"Cuts at the plan's stage boundaries; the parent of each cut must be traced first.\"\"\"\n";
  if (!cuts.empty()) {
    out << "    sig = inspect.signature(sch.mod.forward)\n"
           "    concrete_args = {p.name: p.default for p in sig.parameters.values()\n"
           "                     if p.name not in " << py_list(names.input_names) << "}\n";
    const std::string until = names.trace_until.size() == 1 ? "\"" + names.trace_until[0] + "\"" : py_list(names.trace_until);
    // Pipelines pass plain tensors between stages: the key/value cache's tuples cannot be cut
    // (Slapo's examples turn it off too). Slapo only warns when tracing fails, and its cut then
    // fails with a confusing message: say what went wrong instead.
    out << "    config = getattr(sch.mod, \"config\", None)\n"
           "    if getattr(config, \"use_cache\", False):\n"
           "        config.use_cache = False\n"
           "    sch.trace_until(" << until << ", tracer=\"huggingface\", concrete_args=concrete_args)\n"
           "    for path in " << py_list(names.trace_until) << ":\n"
           "        if not isinstance(sch[path].mod, fx.GraphModule):\n"
           "            raise RuntimeError(f\"Slapo could not trace {path} (its warning above says why; the Hugging Face \"\n"
           "                               \"tracer needs transformers installed), so the pipeline cannot be cut\")\n";
    for (size_t c = 0; c < cuts.size(); ++c) {
      if (!cuts[c].note.empty()) out << "    # Moved: " << cuts[c].note << ".\n";
      out << "    sch[\"" << cuts[c].target << "\"].cut_pipeline_stage()  # end of stage " << c << "\n";
    }
  } else {
    out << "    # pp = 1: one stage.\n";
  }
  out << "\n\n";

  out << "def schedule_model(model, tp_group=None, seed=2013):\n"
         "    \"\"\"The Slapo schedule of `model` (a " << names.hf_class << ") for this plan.\n"
         "    tp_group: the process group of this rank's TP = " << key.tp << " ranks. seed: Slapo's random\n"
         "    seed, set here unless the caller set it (slapo.set_random_seed).\"\"\"\n"
         "    sch = slapo.create_schedule(model, group=tp_group)\n"
         "    if sch.world_size != TP:\n"
         "        raise ValueError(f\"the tensor-parallel group has {sch.world_size} ranks; the plan has TP={TP}\")\n"
         "    if TP > 1 and not slapo.is_random_seed_set():\n"
         "        # fork_rng draws dropout masks from Slapo's tensor-parallel RNG tracker (CUDA only).\n"
         "        slapo.set_random_seed(seed, tp_rank=sch.rank)\n"
         "    _shard_tensor_parallel(sch)\n"
         "    _checkpoint_layers(sch)\n"
         "    _cut_pipeline_stages(sch)\n"
         "    return sch\n\n\n";
  out << "def build_schedule(model, tp_group=None, topology=None, target=None, init_weights=False, seed=2013,\n"
         "                   **build_kwargs):\n"
         "    \"\"\"Schedules `model` and builds it with slapo.build. With target=\\\"deepspeed\\\" and no\n"
         "    topology, the plan's PP x TP x DP topology is made with DeepSpeed's class.\n"
         "    init_weights=False keeps the model's weights (loaded, pretrained, and the shards made here);\n"
         "    True (or an init function, e.g. model._init_weights) makes Slapo initialise them afresh.\"\"\"\n"
         "    sch = schedule_model(model, tp_group, seed)\n"
         "    if topology is None and target == \"deepspeed\":\n"
         "        from deepspeed.runtime.pipe.topology import PipeModelDataParallelTopology\n\n"
         "        topology = PipeModelDataParallelTopology(num_pp=PP, num_mp=TP, num_dp=DP)\n"
         "    if topology is not None:\n"
         "        build_kwargs[\"topology\"] = topology\n"
         "    return slapo.build(sch, target=target, init_weights=init_weights, **build_kwargs)\n";
  return out.str();
}

}  // namespace fasop
