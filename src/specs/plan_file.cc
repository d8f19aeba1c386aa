#include "specs/plan_file.h"

#include <cmath>
#include <cstdio>
#include <numeric>
#include <sstream>

#include "specs/execution_fields.h"
#include "specs/plan_degrees.h"
#include "specs/precision.h"
#include "specs/spec_loader.h"
#include "specs/training_stack.h"
#include "specs/yaml_field.h"

namespace fasop {
namespace {

/// A double that reads back bit for bit.
std::string exact(double value) {
  char text[40];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

/// A YAML string in double quotes (paths may hold ':' or '#').
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

template <typename T>
std::string flow_list(const std::vector<T>& values) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < values.size(); ++i) out << (i ? ", " : "") << values[i];
  out << "]";
  return out.str();
}

/// A list of positive whole numbers up to `max`, e.g. a partition.
std::vector<int> positive_list(const Field& field, int max) {
  std::vector<int> values;
  for (const Field& item : field.items("a list of whole numbers, e.g. [4, 4, 3]")) values.push_back(item.positive_int(max));
  return values;
}

double number(const Field& field) {
  const double value = field.as<double>("a number");
  if (!std::isfinite(value)) field.fail("must be a finite number");
  return value;
}

}  // namespace

std::string plan_file_yaml(const PlanFile& plan) {
  std::ostringstream out;
  out << "# A fasop-cpp plan: `fasop-cpp plan show` prints it, `estimate --plan` re-estimates it,\n"
      << "# `schedule --plan` writes it for a training framework.\n"
      << "version: 1\n"
      << "model: " << quoted(plan.model) << "\n"
      << "cluster: " << quoted(plan.cluster) << "\n";
  if (!plan.profile_dir.empty()) out << "profile_dir: " << quoted(plan.profile_dir) << "\n";
  out << "policy: " << plan.policy << "\n";
  if (plan.policy == "analytic") out << "overlap_dp_allreduce: " << (plan.execution.overlap_grad_reduce ? "true" : "false") << "\n";
  out << execution_fields_yaml(plan.execution);
  if (!plan.stack.empty()) out << "stack: " << plan.stack << "    # the framework whose memory the plan is priced for\n";
  if (!plan.memory_headroom.empty())
    out << "memory_headroom: " << quoted(plan.memory_headroom) << "    # memory each GPU keeps free\n";
  out << "nodes: {";
  for (size_t i = 0; i < plan.nodes.size(); ++i)
    out << (i ? ", " : "") << quoted(plan.nodes[i].first) << ": " << plan.nodes[i].second;
  out << "}    # the cluster shape the plan runs on\n";
  out << "global_batch: " << plan.global_batch << "\n"
      << "micro_batch: " << plan.key.mbs << "\n"
      << "tp: " << plan.key.tp << "\n"
      << "dp: " << plan.key.dp << "\n"
      << "pp: " << plan.key.pp << "\n";
  out << plan_degrees_yaml(plan.key) << moe_dispatcher_yaml(plan.key.moe_dispatcher);
  if (!plan.key.precision.empty()) out << "precision: " << plan.key.precision << "    # the training precision the search chose\n";
  out << "zero_stage: " << plan.key.zero_stage << "\n"
      << "recompute: " << recompute_name(plan.key.recompute_mode()) << "\n";
  if (plan.key.names_recompute_modules())
    out << "recompute_modules: [" << recompute_modules_text(plan.key.recompute_modules, ", ") << "]\n";
  if (plan.key.sequence_parallel) out << "sequence_parallel: true\n";
  if (plan.key.virtual_stages > 1) out << "virtual_stages: " << plan.key.virtual_stages << "\n";
  if (!plan.key.stage_dp.empty()) out << "stage_dp: " << flow_list(plan.key.stage_dp) << "\n";
  if (!plan.key.stage_tp.empty()) out << "stage_tp: " << flow_list(plan.key.stage_tp) << "\n";
  if (plan.key.uneven_dp) out << "uneven_dp: true    # replicas take floor or ceil of their share of the batch\n";
  if (plan.key.speed_split) out << "speed_split: true    # a stage's replicas on several node types split its micro-batch by speed\n";
  out << "node_order: [";
  for (size_t i = 0; i < plan.node_order.size(); ++i) out << (i ? ", " : "") << quoted(plan.node_order[i]);
  out << "]    # node type of each node, in rank order\n"
      << "partition: " << flow_list(plan.partition) << "    # pipeline units per stage\n"
      << "stages:    # units [first, first + count) of the model's layers\n";
  for (const PlanStage& s : plan.stages)
    out << "  - {first_unit: " << s.first_unit << ", num_units: " << s.num_units << ", node_type: " << quoted(s.node_type)
        << ", gpu: " << quoted(s.gpu) << ", dp: " << s.dp << ", compute_s: " << exact(s.compute_s)
        << ", memory_gib: " << exact(s.memory_gib) << "}\n";
  const SavedEstimate& e = plan.estimate;
  out << "estimate:    # when saved; estimate --plan computes it again\n"
      << "  step_time_s: " << exact(e.step_time_s) << "\n"
      << "  pipeline_time_s: " << exact(e.pipeline_time_s) << "\n"
      << "  dp_allreduce_s: " << exact(e.dp_allreduce_s) << "\n"
      << "  embedding_allreduce_s: " << exact(e.embedding_allreduce_s) << "\n"
      << "  price_per_step_usd: " << exact(e.price_per_step_usd) << "\n"
      << "  train_cost_usd: " << exact(e.train_cost_usd) << "\n"
      << "  iterations: " << exact(e.iterations) << "\n"
      << "  peak_memory_gib: " << exact(e.peak_memory_gib) << "\n"
      << "  out_of_memory: " << (e.out_of_memory ? "true" : "false") << "\n";
  return out.str();
}

PlanFile parse_plan_file(const std::string& yaml_text, const std::string& source) {
  Field root = load_root(yaml_text, source);
  PlanFile plan;
  plan.source = source;
  std::vector<std::string> keys{"version", "model", "cluster", "profile_dir", "policy", "overlap_dp_allreduce", "precision", "stack", "memory_headroom", "nodes", "global_batch", "micro_batch", "tp", "dp", "pp", "zero_stage",
                                "recompute", "recompute_modules", "sequence_parallel", "virtual_stages", "stage_dp", "stage_tp", "uneven_dp", "speed_split", "node_order", "partition", "stages",
                                "estimate", kMoeDispatcherKey};
  for (const std::vector<std::string>& more : {plan_degree_names(), execution_field_keys()})
    keys.insert(keys.end(), more.begin(), more.end());
  root.only_keys(keys);
  if (int version = root.child("version").as<int>("a whole number"); version != 1)
    root.child("version").fail("unknown version " + std::to_string(version) + "; this fasop-cpp reads version 1");
  plan.model = root.child("model").text();
  plan.cluster = root.child("cluster").text();
  if (root.child("profile_dir").present()) plan.profile_dir = root.child("profile_dir").text();
  plan.policy = root.child("policy").text();
  if (plan.policy != "fasop" && plan.policy != "analytic")
    root.child("policy").fail("unknown policy '" + plan.policy + "'; use fasop or analytic");
  if (root.child("overlap_dp_allreduce").present())
    plan.execution.overlap_grad_reduce = root.child("overlap_dp_allreduce").as<bool>("true or false");
  read_execution_fields(root, plan.execution);
  if (plan.execution.grad_reduce_in_bf16 && plan.policy != "analytic")
    root.child("grad_reduce_in_bf16").fail("the fasop policy prices FASOP's fixed gradient bytes; use policy: analytic, or drop it");
  for (auto [name, value] : {std::pair{"stack", &plan.stack}, {"memory_headroom", &plan.memory_headroom}}) {
    const Field field = root.child(name);
    if (!field.present()) continue;
    if (plan.policy != "analytic") field.fail("goes with policy: analytic (the fasop policy checks memory as FASOP does); drop it");
    *value = field.text();
  }
  if (!plan.stack.empty() && !training_stack_named(plan.stack))
    root.child("stack").fail("unknown training stack '" + plan.stack + "'; use " + training_stack_choices());
  Field nodes = root.child("nodes");
  for (const std::string& type : nodes.keys("a mapping of node type to count, e.g. {A100: 1, A10: 7}")) {
    const long long count = nodes.child(type).as<long long>("a whole number");
    if (count < 0 || count > kMaxNodes)
      nodes.child(type).fail("must be from 0 to " + std::to_string(kMaxNodes));
    plan.nodes.emplace_back(type, static_cast<int>(count));
  }
  plan.global_batch = root.child("global_batch").positive_int(kMaxGlobalBatch);
  plan.key.mbs = root.child("micro_batch").positive_int(kMaxGlobalBatch);
  plan.key.tp = root.child("tp").positive_int(kMaxGpusPerNode);
  plan.key.dp = root.child("dp").positive_int(kMaxGlobalBatch);
  plan.key.pp = root.child("pp").positive_int(kMaxUnits);
  read_plan_degrees(root, plan.key);
  read_moe_dispatcher(root, plan.key.moe_dispatcher);
  if (plan.execution.overlap_moe_expert_parallel_comm && plan.key.ep <= 1)
    root.child("overlap_ep_comm").fail("the plan has ep 1, no all-to-alls to overlap; remove it");
  if (root.child("precision").present()) {
    plan.key.precision = root.child("precision").text();
    if (!known_precision(plan.key.precision))
      root.child("precision").fail("unknown precision '" + plan.key.precision + "'; use " + known_precisions_text());
  }
  plan.key.zero_stage = root.child("zero_stage").as<int>("0, 1, 2 or 3");
  if (plan.key.zero_stage < 0 || plan.key.zero_stage > 3) root.child("zero_stage").fail("must be 0, 1, 2 or 3");
  std::optional<RecomputeMode> recompute = recompute_mode_named(root.child("recompute").text());
  if (!recompute) root.child("recompute").fail("use none, selective or full");
  plan.key.set_recompute(*recompute);
  if (const Field modules = root.child("recompute_modules"); modules.present())
    plan.key.recompute_modules = recompute_modules_field(modules, *recompute == RecomputeMode::kSelective);
  if (root.child("sequence_parallel").present())
    plan.key.sequence_parallel = root.child("sequence_parallel").as<bool>("true or false");
  if (root.child("virtual_stages").present())
    plan.key.virtual_stages = root.child("virtual_stages").positive_int(kMaxUnits);
  if (root.child("stage_dp").present()) plan.key.stage_dp = positive_list(root.child("stage_dp"), kMaxGlobalBatch);
  if (root.child("stage_tp").present()) plan.key.stage_tp = positive_list(root.child("stage_tp"), kMaxGpusPerNode);
  if (root.child("uneven_dp").present()) plan.key.uneven_dp = root.child("uneven_dp").as<bool>("true or false");
  if (root.child("speed_split").present()) plan.key.speed_split = root.child("speed_split").as<bool>("true or false");
  for (const Field& item : root.child("node_order").items("list of node type names", true))
    plan.node_order.push_back(item.text());
  plan.partition = positive_list(root.child("partition"), kMaxUnits);
  if (static_cast<int>(plan.partition.size()) != plan.key.pp)
    root.child("partition").fail("has " + std::to_string(plan.partition.size()) + " stages but pp is " +
                                 std::to_string(plan.key.pp));
  if (!plan.key.stage_dp.empty() && static_cast<int>(plan.key.stage_dp.size()) != plan.key.pp)
    root.child("stage_dp").fail("has " + std::to_string(plan.key.stage_dp.size()) + " entries but pp is " +
                                std::to_string(plan.key.pp));
  if (!plan.key.stage_tp.empty() && static_cast<int>(plan.key.stage_tp.size()) != plan.key.pp)
    root.child("stage_tp").fail("has " + std::to_string(plan.key.stage_tp.size()) + " entries but pp is " +
                                std::to_string(plan.key.pp));
  Field stages = root.child("stages");
  if (stages.present()) {
    int first_unit = 0;
    for (const Field& s : stages.items("a list of stages")) {
      s.only_keys({"first_unit", "num_units", "node_type", "gpu", "dp", "compute_s", "memory_gib"});
      PlanStage stage;
      stage.first_unit = s.child("first_unit").as<int>("a whole number");
      stage.num_units = s.child("num_units").positive_int(kMaxUnits);
      // The stages restate the partition: where they disagree, the file was edited by hand.
      const size_t index = plan.stages.size();
      if (index < plan.partition.size() && (stage.first_unit != first_unit || stage.num_units != plan.partition[index]))
        s.fail("units [" + std::to_string(stage.first_unit) + ", +" + std::to_string(stage.num_units) +
               ") disagree with the partition's stage " + std::to_string(index) + " (units [" +
               std::to_string(first_unit) + ", +" + std::to_string(plan.partition[index]) + ")); plan again or fix it");
      first_unit += stage.num_units;
      stage.node_type = s.child("node_type").text();
      stage.gpu = s.child("gpu").text();
      stage.dp = s.child("dp").positive_int(kMaxGlobalBatch);
      stage.compute_s = number(s.child("compute_s"));
      stage.memory_gib = number(s.child("memory_gib"));
      plan.stages.push_back(stage);
    }
    if (plan.stages.size() != plan.partition.size())
      stages.fail("has " + std::to_string(plan.stages.size()) + " stages but the partition " +
                  std::to_string(plan.partition.size()));
  }
  Field e = root.child("estimate");
  e.require();
  e.only_keys({"step_time_s", "pipeline_time_s", "dp_allreduce_s", "embedding_allreduce_s", "price_per_step_usd",
               "train_cost_usd", "iterations", "peak_memory_gib", "out_of_memory"});
  plan.estimate.step_time_s = number(e.child("step_time_s"));
  plan.estimate.pipeline_time_s = number(e.child("pipeline_time_s"));
  plan.estimate.dp_allreduce_s = number(e.child("dp_allreduce_s"));
  plan.estimate.embedding_allreduce_s = number(e.child("embedding_allreduce_s"));
  plan.estimate.price_per_step_usd = number(e.child("price_per_step_usd"));
  plan.estimate.train_cost_usd = number(e.child("train_cost_usd"));
  plan.estimate.iterations = e.child("iterations").positive_double();
  plan.estimate.peak_memory_gib = number(e.child("peak_memory_gib"));
  plan.estimate.out_of_memory = e.child("out_of_memory").as<bool>("true or false");
  return plan;
}

}  // namespace fasop
