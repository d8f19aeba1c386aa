#include "specs/validation_case.h"

#include <algorithm>
#include <tuple>

#include "specs/execution_fields.h"
#include "specs/parallel_rules.h"
#include "specs/pipeline_layout.h"
#include "specs/plan_degrees.h"
#include "specs/precision.h"
#include "specs/spec_error.h"
#include "specs/spec_loader.h"
#include "specs/yaml_field.h"

namespace fasop {
namespace {

Field require_map(const Field& field, const std::string& shape) {
  field.require();
  field.keys("a mapping " + shape);
  return field;
}

bool optional_bool(const Field& field, bool fallback) {
  return field.present() ? field.as<bool>("true or false") : fallback;
}


template <typename Case>
void parse_node_type_field(const Field& field, const SpecStore& store, Case& c) {
  require_map(field, "{cluster: PRESET_OR_FILE, name: NODE_TYPE} or a node type as a cluster file gives it");
  if (field.child("cluster").present()) {
    field.only_keys({"cluster", "name"});
    std::string cluster_ref = field.child("cluster").text();
    std::string name = field.child("name").text();
    ClusterSpec cluster = store.load_cluster(cluster_ref, c.file + ": field '" + field.path + ".cluster'");
    int type = cluster.find_node_type(name);
    if (type < 0) {
      std::string known;
      for (const NodeType& t : cluster.node_types) known += (known.empty() ? "" : ", ") + t.name;
      field.child("name").fail("cluster '" + cluster_ref + "' has no node type '" + name + "'; use " + known);
    }
    c.node_type = cluster.node_types[type];
    c.node_type_ref = cluster_ref + "/" + name;
  } else {
    c.node_type = parse_node_type(field);
    c.node_type_ref = "inline";
  }
}

template <typename Case>
void parse_model_field(const Field& field, const SpecStore& store, Case& c) {
  require_map(field, "{preset: NAME} or inline dimensions {hidden, heads, layers, sequence, vocab, ...}");
  if (field.child("preset").present()) {
    field.only_keys({"preset"});
    c.model_ref = field.child("preset").text();
    c.model = store.load_model(c.model_ref, c.file + ": field '" + field.path + ".preset'");
    return;
  }
  std::vector<std::string> known = model_dim_fields();
  known.push_back("layers");
  field.only_keys(known);
  c.model_ref = "inline";
  ModelSpec& model = c.model;
  model.source = c.file;
  model.name = c.name;
  model.report_name = c.name;
  parse_model_dims(field, model);
  int layers = field.child("layers").positive_int(kMaxUnits - 2);
  if (model.moe.dense_layers > layers)
    field.child("moe").child("dense_layers").fail("is more than the model's " + std::to_string(layers) + " layers");
  model.units.push_back({"embedding", LayerRole::kEmbedding, "", false});
  // A MoE model's first dense_layers keep a dense MLP; the rest are its MoE layers.
  for (int i = 0; i < layers; ++i) {
    const bool moe = model.moe.enabled() && i >= model.moe.dense_layers;
    model.units.push_back({moe ? "moe_transformer" : "transformer", LayerRole::kTransformer, "", false, moe});
  }
  model.units.push_back({"post_process", LayerRole::kPostProcess, "", false});
  apply_sliding_window(model);
}

RecomputeMode parse_recompute(const Field& field) {
  std::string name = field.text();
  if (std::optional<RecomputeMode> mode = recompute_mode_named(name)) return *mode;
  field.fail("unknown recomputation '" + name + "'; use none, selective or full");
}

/// The micro-batch size: stated, assumed (with the reason), or a range; exactly one.
void parse_micro_batch(const Field& field, ValidationPlan& plan) {
  const bool stated = field.child("micro_batch").present(), assumed = field.child("micro_batch_assumed").present(),
             range = field.child("micro_batch_range").present();
  if (stated + assumed + range != 1)
    field.child("micro_batch").fail(stated + assumed + range == 0
        ? "missing; give the size the run used, or where the source states none, micro_batch_assumed: N with "
          "micro_batch_assumption: WHY (e.g. Megatron-LM's default 1), or micro_batch_range: [MIN, MAX]"
        : "give only one of micro_batch, micro_batch_assumed and micro_batch_range");
  if (stated) plan.micro_batch = field.child("micro_batch").positive_int(kMaxGlobalBatch);
  plan.micro_batch_stated = stated;
  if (assumed) {
    plan.micro_batch = field.child("micro_batch_assumed").positive_int(kMaxGlobalBatch);
    plan.micro_batch_assumption = field.child("micro_batch_assumption").text();
  } else if (!range && field.child("micro_batch_assumption").present()) {
    field.child("micro_batch_assumption").fail("goes with micro_batch_assumed or micro_batch_range only");
  }
  if (range) {
    Field r = field.child("micro_batch_range");
    if (r.items("[MIN, MAX]").size() != 2) r.fail("expected [MIN, MAX]");
    plan.micro_batch_min = r.item(0).positive_int(kMaxGlobalBatch);
    plan.micro_batch_max = r.item(1).positive_int(kMaxGlobalBatch);
    if (plan.micro_batch_max < plan.micro_batch_min) r.fail("MAX is below MIN");
    if (field.child("micro_batch_assumption").present())
      plan.micro_batch_assumption = field.child("micro_batch_assumption").text();
  }
}

/// The stack and its memory-relevant settings of a plan field; Megatron's settings need the
/// megatron stack, torchtitan's torchtitan.
void parse_memory_settings(const Field& field, MemorySettings& memory) {
  if (Field stack = field.child("stack"); stack.present()) {
    const std::optional<TrainingStack> named = training_stack_named(stack.text());
    if (!named) stack.fail("unknown stack '" + stack.text() + "'; use " + training_stack_choices());
    memory.stack = *named;
  }
  const bool megatron = memory.stack == TrainingStack::kMegatron;
  constexpr TrainingStack kMegatron = TrainingStack::kMegatron, kTorchtitan = TrainingStack::kTorchtitan;
  for (auto [name, value, owner] : {std::tuple{"transformer_engine", &memory.transformer_engine, kMegatron},
                                    {"gradient_accumulation_fusion", &memory.gradient_accumulation_fusion, kMegatron},
                                    {"cross_entropy_fusion", &memory.cross_entropy_fusion, kMegatron},
                                    {"compile", &memory.compiled, kTorchtitan},
                                    {"compile_loss", &memory.compiled_loss, kTorchtitan},
                                    {"async_tp", &memory.async_tp, kTorchtitan},
                                    {"float8_all_gather", &memory.float8_all_gather, kTorchtitan},
                                    {"pipeline_keeps_outputs", &memory.pipeline_keeps_outputs, kTorchtitan}}) {
    const Field setting = field.child(name);
    if (!setting.present()) continue;
    if (owner != memory.stack)
      setting.fail(std::string("is a setting of the ") + training_stack_name(owner) + " stack, and this plan's stack is " +
                   training_stack_name(memory.stack) + "; remove it");
    *value = setting.as<bool>("true or false");
  }
  if (Field dtype = field.child("optimizer_dtype"); dtype.present()) {
    if (!megatron) dtype.fail("is Megatron's (NeMo's distributed_fused_adam); this plan's stack is " +
                              std::string(training_stack_name(memory.stack)) + ": remove it");
    if (dtype.text() != "bf16" && dtype.text() != "fp32") dtype.fail("expected bf16 or fp32, got '" + dtype.text() + "'");
    memory.bf16_optimizer = dtype.text() == "bf16";
  }
  if (Field offload = field.child("activation_offload_layers"); offload.present()) {
    if (!megatron) offload.fail("is Megatron-Core's activation offloading; this plan's stack is " +
                                std::string(training_stack_name(memory.stack)) + ": remove it");
    memory.activation_offload_layers = offload.non_negative_int(kMaxUnits);
  }
}

void parse_plan_field(const Field& field, ValidationPlan& plan) {
  require_map(field, "{gpus, tp, pp, dp, global_batch, micro_batch?, recompute, ...}");
  std::vector<std::string> keys{"gpus", "tp", "pp", "dp", "global_batch", "micro_batch", "micro_batch_assumed",
                              "micro_batch_assumption", "micro_batch_range", "recompute", "recompute_modules", "sequence_parallel",
                              "virtual_stages", "pipeline_layout", "distributed_optimizer", "overlap_grad_reduce", "fsdp", "stack", "transformer_engine",
                              "gradient_accumulation_fusion", "cross_entropy_fusion", "activation_offload_layers",
                              "compile", "compile_loss", "async_tp", "float8_all_gather", "pipeline_keeps_outputs",
                              "optimizer_dtype", kMoeDispatcherKey};
  for (const std::vector<std::string>& more : {plan_degree_names(), execution_field_keys()})
    keys.insert(keys.end(), more.begin(), more.end());
  field.only_keys(keys);
  plan.gpus = field.child("gpus").positive_int(kMaxNodes);
  plan.key.tp = field.child("tp").positive_int(kMaxGpusPerNode);
  plan.key.pp = field.child("pp").positive_int(kMaxUnits);
  plan.key.dp = field.child("dp").positive_int(kMaxNodes);
  read_plan_degrees(field, plan.key);
  read_moe_dispatcher(field, plan.key.moe_dispatcher);
  plan.global_batch = field.child("global_batch").positive_int(kMaxGlobalBatch);
  parse_micro_batch(field, plan);
  plan.recompute = parse_recompute(field.child("recompute"));
  if (const Field modules = field.child("recompute_modules"); modules.present())
    plan.recompute_modules = recompute_modules_field(modules, plan.recompute == RecomputeMode::kSelective);
  plan.sequence_parallel = optional_bool(field.child("sequence_parallel"), false);
  if (field.child("virtual_stages").present()) plan.virtual_stages = field.child("virtual_stages").positive_int(kMaxUnits);
  if (field.child("pipeline_layout").present()) plan.pipeline_layout = field.child("pipeline_layout").text();
  plan.distributed_optimizer = optional_bool(field.child("distributed_optimizer"), false);
  plan.execution.overlap_grad_reduce = optional_bool(field.child("overlap_grad_reduce"), false);
  read_execution_fields(field, plan.execution);
  plan.fsdp = optional_bool(field.child("fsdp"), false);
  parse_memory_settings(field, plan.memory);
}

/// A measured peak memory: {figure: max_allocated|max_reserved, rank: last|max, peak_gib,
/// allocated_after_step_gib?}.
MemoryMeasurement parse_memory_measurement(const Field& field) {
  require_map(field, "{figure, rank, peak_gib, allocated_after_step_gib?}");
  field.only_keys({"figure", "rank", "peak_gib", "allocated_after_step_gib"});
  MemoryMeasurement memory;
  const std::string figure = field.child("figure").text(), rank = field.child("rank").text();
  if (figure == "max_allocated") memory.figure = MemoryFigure::kMaxAllocated;
  else if (figure == "max_reserved") memory.figure = MemoryFigure::kMaxReserved;
  else field.child("figure").fail("unknown figure '" + figure + "'; use max_allocated or max_reserved (PyTorch's peaks)");
  if (rank == "last") memory.rank = MeasuredRank::kLast;
  else if (rank == "max") memory.rank = MeasuredRank::kMax;
  else field.child("rank").fail("unknown rank '" + rank + "'; use last (the job's last rank) or max (the largest over ranks)");
  memory.peak_gib = field.child("peak_gib").positive_double();
  if (Field after = field.child("allocated_after_step_gib"); after.present()) {
    if (memory.figure != MemoryFigure::kMaxAllocated) after.fail("goes with figure max_allocated; remove it");
    memory.allocated_after_step_gib = after.positive_double();
    if (memory.allocated_after_step_gib > memory.peak_gib) after.fail("is above peak_gib; the peak holds at least as much");
  }
  return memory;
}

void parse_measurement_field(const Field& field, ValidationMeasurement& m) {
  require_map(field, "{step_s: SECONDS}, {tflops_per_gpu: X, flop_formula: megatron-narayanan-2021}, "
                     "{tokens_per_s_per_gpu: X} and or {memory: {...}}");
  field.only_keys({"step_s", "tflops_per_gpu", "flop_formula", "tokens_per_s_per_gpu", "memory"});
  if (Field memory = field.child("memory"); memory.present()) m.memory = parse_memory_measurement(memory);
  bool step = field.child("step_s").present(), tflops = field.child("tflops_per_gpu").present(),
       tokens = field.child("tokens_per_s_per_gpu").present();
  if (step + tflops + tokens > 1) field.fail("gives more than one of step_s, tflops_per_gpu and tokens_per_s_per_gpu; keep one");
  if (step + tflops + tokens == 0) {
    if (m.memory.peak_gib > 0) return;  // a memory measurement alone
    field.fail("gives none of step_s, tflops_per_gpu (with flop_formula), tokens_per_s_per_gpu and memory; add one");
  }
  if (tokens) {
    m.tokens_per_s_per_gpu = field.child("tokens_per_s_per_gpu").positive_double();
  } else if (step) {
    m.step_s = field.child("step_s").positive_double();
    if (field.child("flop_formula").present()) field.child("flop_formula").fail("goes with tflops_per_gpu only; remove it");
  } else {
    m.tflops_per_gpu = field.child("tflops_per_gpu").positive_double();
    m.flop_formula = field.child("flop_formula").text();  // checked where it is applied (src/validate/measurement.h)
  }
}

/// The layout against the model and the node type.
void check_case(const Field& root, ValidationCase& c) {
  ValidationPlan& p = c.plan;
  Field plan = root.child("plan");
  auto n = [](long long v) { return std::to_string(v); };
  const long long product = p.key.num_gpus();  // under 4096 x 10^15: no overflow in 64 bits
  if (product != p.gpus)
    plan.child("gpus").fail("is " + n(p.gpus) + (p.key.cp > 1 ? " but tp x pp x cp x dp = " : " but tp x pp x dp = ") +
                            n(p.key.tp) + " x " + n(p.key.pp) + (p.key.cp > 1 ? " x " + n(p.key.cp) : "") + " x " + n(p.key.dp) + " = " +
                            n(product) + "; make them agree");
  if (p.global_batch % p.key.dp != 0)
    plan.child("global_batch").fail(n(p.global_batch) + " is not divisible by dp (" + n(p.key.dp) + "); fix either");
  if (p.micro_batch > 0 && p.global_batch % (1LL * p.micro_batch * p.key.dp) != 0)
    plan.child(p.micro_batch_stated ? "micro_batch" : "micro_batch_assumed").fail("global_batch (" + n(p.global_batch) + ") is not divisible by micro_batch x dp (" +
                                   n(p.micro_batch * p.key.dp) + "); fix either");
  if (p.gpus % c.node_type.gpus_per_node != 0)
    plan.child("gpus").fail(n(p.gpus) + " is not a multiple of the node type's gpus_per_node (" +
                            n(c.node_type.gpus_per_node) + "); validation cases run on whole nodes");
  if (p.key.tp > c.node_type.gpus_per_node)
    plan.child("tp").fail(n(p.key.tp) + " is more than a node's GPUs (" + n(c.node_type.gpus_per_node) +
                          "); tensor parallelism stays inside a node");
  if (c.model.heads % p.key.tp != 0)
    plan.child("tp").fail(n(p.key.tp) + " does not divide the model's heads (" + n(c.model.heads) + ")");
  if (p.execution.overlap_moe_expert_parallel_comm) {
    // Megatron-Core's TransformerConfig asserts these of --overlap-moe-expert-parallel-comm.
    const Field overlap = plan.child("overlap_ep_comm");
    const bool full_recompute = p.recompute == RecomputeMode::kFull;
    if (p.key.ep <= 1) overlap.fail("needs expert parallelism (ep > 1); set it false");
    const bool recomputes_moe = p.recompute == RecomputeMode::kSelective && (p.recompute_modules & kRecomputeMoe);
    if (!ep_overlap_runs(p.key.pp, p.virtual_stages, full_recompute, recomputes_moe))
      overlap.fail(full_recompute    ? "does not run with full recomputation; set it false"
                   : recomputes_moe ? "does not run while the MoE block is recomputed (recompute_modules moe); set it false"
                                    : "needs the interleaved schedule (virtual_stages > 1) with pp > 1, as Megatron-Core "
                                      "asserts; set it false or state virtual_stages");
  }
  int layers = c.model.num_transformer_layers();
  if (!p.pipeline_layout.empty()) {
    // A stated layout places the layers itself: Megatron's checks of it replace the even split's.
    PipelineLayout layout;
    std::string error;
    if (parse_pipeline_layout(p.pipeline_layout, &layout, &error))
      p.layout_units = layout_units_per_rank(layout, p.key.pp, p.virtual_stages, layers, c.model.mtp_layers, &error);
    if (p.layout_units.empty()) plan.child("pipeline_layout").fail("'" + p.pipeline_layout + "' " + error);
  } else if (layers % (1LL * p.key.pp * p.virtual_stages) != 0)
    plan.child(p.virtual_stages > 1 ? "virtual_stages" : "pp")
        .fail("pp x virtual_stages (" + n(p.key.pp * p.virtual_stages) + ") does not divide the model's layers (" +
              n(layers) + ")");
}

ValidationSource parse_source(const Field& root) {
  Field src = require_map(root.child("source"), "{title, table, url?, date}");
  src.only_keys({"title", "table", "url", "date"});
  ValidationSource source;
  source.title = src.child("title").text();
  source.table = src.child("table").text();
  if (src.child("url").present()) source.url = src.child("url").text();
  source.date = src.child("date").text();
  return source;
}

/// What every case gives: its file, set, name, source, node type and model.
template <typename Case>
void parse_case_header(const Field& root, const std::string& source, const SpecStore& store, Case& c) {
  c.file = source;
  c.set = root.child("set").text();
  c.name = root.child("case").text();
  c.source = parse_source(root);
  parse_node_type_field(root.child("node_type"), store, c);
  parse_model_field(root.child("model"), store, c);
}

}  // namespace

bool is_layer_time_case(const std::string& yaml_text) {
  try {
    YAML::Node root = YAML::Load(yaml_text);
    return root.IsMap() && root["kind"] && root["kind"].as<std::string>() == "layer_times";
  } catch (const YAML::Exception&) {
    return false;
  }
}

LayerTimeCase parse_layer_time_case(const std::string& yaml_text, const std::string& source, const SpecStore& store) {
  Field root = load_root(yaml_text, source);
  root.only_keys({"kind", "set", "case", "source", "node_type", "model", "stack", "tp_comm_included", "points",
                             "notes"});
  LayerTimeCase c;
  parse_case_header(root, source, store, c);
  const std::string stack = root.child("stack").text();
  if (!stack_named(stack, &c.stack))
    root.child("stack").fail("unknown stack '" + stack + "'; use megatron, eager, libtorch, torchtitan or torchtitan-compiled");
  if (c.model.mla.enabled() && c.stack != Stack::kMegatron)
    root.child("stack").fail("is " + stack + ", whose layers are counted op by op as dense attention; a model with an "
                             "'mla' block is priced on the megatron stack only");
  c.tp_comm_included = optional_bool(root.child("tp_comm_included"), true);
  Field points = root.child("points");
  for (const Field& p : points.items("list of {unit, tp, mbs, forward_s, backward_s?} (or forward_backward_s)", true)) {
    p.only_keys({"unit", "tp", "mbs", "forward_s", "backward_s", "forward_backward_s"});
    LayerTimePoint point;
    point.unit = p.child("unit").text();
    if (std::none_of(c.model.units.begin(), c.model.units.end(), [&](const LayerUnit& u) { return u.type == point.unit; }))
      p.child("unit").fail("the model has no unit type '" + point.unit + "'");
    point.tp = p.child("tp").positive_int(kMaxGpusPerNode);
    if (c.model.heads % point.tp != 0) p.child("tp").fail("does not divide the model's heads");
    point.mbs = p.child("mbs").positive_int(kMaxGlobalBatch);
    if (p.child("forward_backward_s").present()) {
      // Measured as one interval (forward and backward together).
      point.forward_backward_s = p.child("forward_backward_s").positive_double();
      if (p.child("forward_s").present() || p.child("backward_s").present())
        p.child("forward_backward_s").fail("goes without forward_s and backward_s; give either");
    } else {
      point.forward_s = p.child("forward_s").positive_double();
      if (p.child("backward_s").present()) point.backward_s = p.child("backward_s").positive_double();
    }
    c.points.push_back(point);
  }
  if (root.child("notes").present()) c.notes = root.child("notes").text();
  return c;
}

ValidationCase parse_validation_case(const std::string& yaml_text, const std::string& source,
                                     const SpecStore& store) {
  Field root = load_root(yaml_text, source);
  root.only_keys({"set", "case", "source", "node_type", "model", "plan", "measurement", "notes"});
  ValidationCase c;
  parse_case_header(root, source, store, c);
  parse_plan_field(root.child("plan"), c.plan);
  c.model.global_batch = c.plan.global_batch;
  if (c.plan.execution.grad_reduce_in_bf16 && !has_bf16_gradients(c.model.dtype))
    root.child("plan").child("grad_reduce_in_bf16").fail("the model " + no_bf16_gradients_text(c.model.dtype) + "; remove it");
  c.model.grad_reduce_in_bf16 = c.plan.execution.grad_reduce_in_bf16;
  parse_measurement_field(root.child("measurement"), c.measurement);
  if (root.child("notes").present()) c.notes = root.child("notes").text();
  check_case(root, c);
  return c;
}

}  // namespace fasop
