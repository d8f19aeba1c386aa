// Plan files: written and read back field for field, and errors that name the field.
#include <catch2/catch.hpp>

#include "specs/execution_fields.h"
#include "specs/plan_degrees.h"
#include "specs/plan_file.h"
#include "specs/spec_error.h"

using namespace fasop;
using Catch::Matchers::Contains;

namespace {

PlanFile sample_plan() {
  PlanFile plan;
  plan.model = "configs/models/gpt2xl.yaml";
  plan.cluster = "fasop-pareto";
  plan.profile_dir = "my profiles";
  plan.policy = "analytic";
  plan.execution.overlap_grad_reduce = false;
  plan.execution.tp_comm_overlap = true;
  plan.nodes = {{"p4d.24xlarge", 1}, {"g5.24xlarge", 2}};
  plan.global_batch = 64;
  plan.key.mbs = 2;
  plan.key.tp = 2;
  plan.key.dp = 2;
  plan.key.pp = 3;
  plan.key.zero_stage = 1;
  plan.key.selective_recompute = true;
  plan.key.sequence_parallel = true;
  plan.key.virtual_stages = 2;
  plan.key.stage_dp = {2, 2, 1};
  plan.node_order = {"g5.24xlarge", "g5.24xlarge", "p4d.24xlarge"};
  plan.partition = {18, 15, 17};
  plan.stages = {{0, 18, "g5.24xlarge", "A10", 2, 0.1 + 0.2, 7.25}, {18, 15, "g5.24xlarge", "A10", 2, 1.0 / 3, 6.5},
                 {33, 17, "p4d.24xlarge", "A100", 1, 2.0 / 7, 9.125}};
  plan.estimate = {1.0 / 3, 0.3, 0.01, 0.02, 0.0263464700701, 329330.875876, 12.5e6, 10.380249, false};
  return plan;
}

}  // namespace

TEST_CASE("a plan file reads back as it was written, doubles bit for bit", "[plan]") {
  PlanFile plan = sample_plan();
  PlanFile back = parse_plan_file(plan_file_yaml(plan), "p.yaml");
  CHECK(back.source == "p.yaml");
  CHECK(back.model == plan.model);
  CHECK(back.cluster == plan.cluster);
  CHECK(back.profile_dir == plan.profile_dir);
  CHECK(back.policy == "analytic");
  CHECK_FALSE(back.execution.overlap_grad_reduce);
  CHECK(back.execution.tp_comm_overlap);
  CHECK(back.nodes == plan.nodes);
  CHECK(back.global_batch == 64);
  CHECK(back.key.mbs == 2);
  CHECK(back.key.tp == 2);
  CHECK(back.key.dp == 2);
  CHECK(back.key.pp == 3);
  CHECK(back.key.zero_stage == 1);
  CHECK(back.key.recompute_mode() == RecomputeMode::kSelective);
  CHECK(back.key.sequence_parallel);
  CHECK(back.key.virtual_stages == 2);
  CHECK(back.key.stage_dp == std::vector<int>{2, 2, 1});
  CHECK(back.node_order == plan.node_order);
  CHECK(back.partition == std::vector<int>{18, 15, 17});
  REQUIRE(back.stages.size() == 3);
  CHECK(back.stages[0].compute_s == plan.stages[0].compute_s);  // 0.30000000000000004 exactly
  CHECK(back.stages[1].compute_s == plan.stages[1].compute_s);
  CHECK(back.stages[2].node_type == "p4d.24xlarge");
  CHECK(back.stages[2].gpu == "A100");
  CHECK(back.stages[2].dp == 1);
  CHECK(back.estimate.step_time_s == plan.estimate.step_time_s);
  CHECK(back.estimate.train_cost_usd == plan.estimate.train_cost_usd);
  CHECK(back.estimate.iterations == 12.5e6);
  CHECK_FALSE(back.estimate.out_of_memory);
  CHECK(plan_file_yaml(back) == plan_file_yaml(plan));
}

TEST_CASE("plan file errors name the file and the field", "[plan]") {
  std::string text = plan_file_yaml(sample_plan());
  auto without = [&](const std::string& line) {
    std::string t = text;
    size_t at = t.find(line);
    REQUIRE(at != std::string::npos);
    return t.erase(at, t.find('\n', at) - at + 1);
  };
  CHECK_THROWS_WITH(parse_plan_file(without("tp: 2\n"), "p.yaml"), Contains("p.yaml") && Contains("'tp'"));
  CHECK_THROWS_WITH(parse_plan_file(without("  step_time_s:"), "p.yaml"), Contains("'estimate.step_time_s'"));
  std::string wrong_stages = text;
  wrong_stages.replace(wrong_stages.find("partition: [18, 15, 17]"), 23, "partition: [18, 32]");
  CHECK_THROWS_WITH(parse_plan_file(wrong_stages, "p.yaml"), Contains("'partition'") && Contains("pp is 3"));
  std::string policy = text;
  policy.replace(policy.find("policy: analytic"), 16, "policy: magic");
  CHECK_THROWS_WITH(parse_plan_file(policy, "p.yaml"), Contains("'policy'") && Contains("fasop or analytic"));
  CHECK_THROWS_WITH(parse_plan_file("version: 2\n", "p.yaml"), Contains("'version'"));
}

TEST_CASE("a plan file keeps the EP all-to-all overlap, and refuses it without experts' all-to-alls", "[plan]") {
  PlanFile plan = sample_plan();
  plan.key.ep = 2;  // 2 of a stage's tp 2 x dp 2 GPUs
  plan.execution.overlap_moe_expert_parallel_comm = true;
  const std::string text = plan_file_yaml(plan);
  CHECK_THAT(text, Contains("\noverlap_ep_comm: true\n"));
  CHECK(parse_plan_file(text, "p.yaml").execution.overlap_moe_expert_parallel_comm);
  std::string ep1 = text;
  ep1.erase(ep1.find("ep: 2"), ep1.find('\n', ep1.find("ep: 2")) - ep1.find("ep: 2") + 1);
  CHECK_THROWS_WITH(parse_plan_file(ep1, "p.yaml"), Contains("'overlap_ep_comm'") && Contains("ep 1"));
  CHECK_THAT(plan_file_yaml(sample_plan()), !Contains("overlap_ep_comm"));
}

TEST_CASE("a plan file keeps bf16 gradients, and refuses them under FASOP's policy", "[plan]") {
  PlanFile plan = sample_plan();
  plan.execution.grad_reduce_in_bf16 = true;
  const std::string text = plan_file_yaml(plan);
  CHECK_THAT(text, Contains("\ngrad_reduce_in_bf16: true"));
  CHECK(parse_plan_file(text, "p.yaml").execution.grad_reduce_in_bf16);
  CHECK_FALSE(parse_plan_file(plan_file_yaml(sample_plan()), "p.yaml").execution.grad_reduce_in_bf16);
  std::string fasop = text;
  fasop.replace(fasop.find("policy: analytic"), 16, "policy: fasop");
  CHECK_THROWS_WITH(parse_plan_file(fasop, "p.yaml"), Contains("p.yaml") && Contains("'grad_reduce_in_bf16'") &&
                                                           Contains("policy: analytic"));
}

TEST_CASE("every degree of plan_degrees() round-trips through plan files and names its field when wrong", "[plan]") {
  PlanFile plan = sample_plan();
  plan.key.cp = 2;
  plan.key.ep = 4;
  plan.key.etp = 2;
  const std::string text = plan_file_yaml(plan);
  CHECK_THAT(text, Contains("\ncp: 2    # context parallelism: each sequence over cp GPUs\n"));
  CHECK_THAT(text, Contains("\nep: 4    # expert parallelism: the experts over ep GPUs\n"));
  CHECK_THAT(text, Contains("\netp: 2    # expert tensor parallelism\n"));
  const PlanFile back = parse_plan_file(text, "p.yaml");
  for (const PlanDegree& degree : plan_degrees()) CHECK(back.key.*degree.value == plan.key.*degree.value);
  // A degree of 1 is left out, and reads back as 1.
  CHECK_THAT(plan_file_yaml(sample_plan()), !Contains("cp:") && !Contains("etp:"));
  CHECK(parse_plan_file(plan_file_yaml(sample_plan()), "p.yaml").key.etp == 1);
  std::string zero = text;
  zero.replace(zero.find("etp: 2"), 6, "etp: 0");
  CHECK_THROWS_WITH(parse_plan_file(zero, "p.yaml"), Contains("p.yaml") && Contains("'etp'") && Contains("positive"));
  std::string huge = text;
  huge.replace(huge.find("cp: 2"), 5, "cp: 200000");
  CHECK_THROWS_WITH(parse_plan_file(huge, "p.yaml"), Contains("'cp'") && Contains("at most 100000"));
}

TEST_CASE("every switch of execution_fields() round-trips through plan files, and is left out when off", "[plan]") {
  for (const ExecutionField& field : execution_fields()) {
    PlanFile plan = sample_plan();
    plan.key.ep = 2;  // so that overlap_ep_comm has all-to-alls to hide
    plan.execution.*field.value = true;
    const std::string text = plan_file_yaml(plan);
    CHECK_THAT(text, Contains("\n" + std::string(field.key) + ": true"));
    CHECK(parse_plan_file(text, "p.yaml").execution.*field.value);
    plan.execution.*field.value = false;
    CHECK_THAT(plan_file_yaml(plan), !Contains(std::string(field.key) + ":"));
  }
}
