// What a launch hands the trainer besides the plan: trainer configs read and merged with the
// plan's Megatron-LM arguments, the nodes' environment, and the Slurm options of the command line.
#include <algorithm>

#include <catch2/catch.hpp>

#include "emit/megatron_args.h"
#include "launch/launch_environment.h"
#include "launch/launch_layout.h"
#include "launch/node_script.h"
#include "launch/slurm_options.h"
#include "launch/slurm_script.h"
#include "launch/trainer_args.h"
#include "specs/spec_error.h"
#include "specs/spec_loader.h"
#include "specs/trainer_config.h"
#include "emit_fixtures.h"
#include "test_support.h"

using namespace fasop;
using Catch::Matchers::Contains;
using fasop::testing::layout_plan;
using fasop::testing::preset_model;

namespace {

/// The values following `flag` in `tokens` (empty when absent or a switch), and whether it is there.
std::pair<bool, std::vector<std::string>> values_of(const std::vector<std::string>& tokens, const std::string& flag) {
  auto it = std::find(tokens.begin(), tokens.end(), flag);
  if (it == tokens.end()) return {false, {}};
  std::vector<std::string> values;
  for (++it; it != tokens.end() && it->rfind("--", 0) != 0; ++it) values.push_back(*it);
  return {true, values};
}

// gpt2xl at tp 2, pp 3, dp 2 (megatron_args_test.cc's plan (a)).
PlanFile gpt2xl_plan() {
  PlanFile plan = layout_plan(2, 2, 2, 3, 64, {18, 15, 17}, 1, true);
  plan.source = "plan.yaml";
  return plan;
}

const char* kTwoTypes =
    "name: two\nnode_types:\n"
    "  - {name: a, gpu: A100, gpus_per_node: 8, gpu_memory_gib: 80, intra_node_bandwidth_bits_per_s: 1e12,\n"
    "     inter_node_bandwidth_bits_per_s: 1e11, price_usd_per_hour: 1, env: {NCCL_IB_HCA: mlx5, NCCL_DEBUG: INFO}}\n"
    "  - {name: b, gpu: A10, gpus_per_node: 8, gpu_memory_gib: 24, intra_node_bandwidth_bits_per_s: 1e12,\n"
    "     inter_node_bandwidth_bits_per_s: 1e11, price_usd_per_hour: 1, slurm: {partition: old}}\n"
    "nodes: [{type: a, count: 1}, {type: b, count: 1}]\n";

}  // namespace

TEST_CASE("trainer configs: flags, switches, lists and env, errors name the field", "[launch]") {
  TrainerConfig c = parse_trainer_config(
      "megatron_script: /opt/megatron/pretrain_gpt.py\nargs:\n  mock-data: true\n  no-save: false\n"
      "  lr: 3.0e-4\n  data-path: [1.0, a, 2, b]\n  tokenizer-type: \"true\"\nenv: {NCCL_DEBUG: WARN, X: \"\"}\n",
      "t.yaml");
  CHECK(c.megatron_script == "/opt/megatron/pretrain_gpt.py");
  REQUIRE(c.args.size() == 4);  // no-save: false is left out
  CHECK(c.args[0].flag == "--mock-data");
  CHECK(c.args[0].values.empty());
  CHECK(c.args[1].values == std::vector<std::string>{"3.0e-4"});  // as written
  CHECK(c.args[2].values == std::vector<std::string>{"1.0", "a", "2", "b"});
  CHECK(c.args[3].values == std::vector<std::string>{"true"});  // quoted: a value
  CHECK(c.env == std::vector<std::pair<std::string, std::string>>{{"NCCL_DEBUG", "WARN"}, {"X", ""}});
  CHECK_THROWS_WITH(parse_trainer_config("args: {--lr: 1}\n", "t.yaml"),
                    Contains("t.yaml") && Contains("'args.--lr'") && Contains("without the leading --"));
  // torchtitan's and run_recipe.py's flags hold dots and underscores; Megatron-LM's merge refuses
  // them (below), naming the dashed flag.
  CHECK(parse_trainer_config("args: {training.steps: 5, max_steps: 5}\n", "t.yaml").args.size() == 2);
  CHECK_THROWS_WITH(parse_trainer_config("args: {lr: {a: 1}}\n", "t.yaml"), Contains("'args.lr'"));
  CHECK_THROWS_WITH(parse_trainer_config("env: {1BAD: x}\n", "t.yaml"), Contains("'env.1BAD'"));
  CHECK_THROWS_WITH(parse_trainer_config("argz: {}\n", "t.yaml"), Contains("'argz'") && Contains("unknown field"));
}

TEST_CASE("the shipped trainer config starts Megatron-LM on mock data", "[launch]") {
  fasop::testing::MapSource none;
  TrainerConfig c = SpecStore(none, embedded_presets()).load_trainer_config("megatron-mock");
  const ModelSpec model = preset_model("gpt2xl");
  MergedTrainerArgs merged = merge_trainer_args(megatron_args(gpt2xl_plan(), model, MegatronFlavor::kUpstream), c,
                                                gpt2xl_plan(), model);
  CHECK(values_of(merged.tokens, "--mock-data") == std::make_pair(true, std::vector<std::string>{}));
  CHECK(values_of(merged.tokens, "--tokenizer-type").second == std::vector<std::string>{"NullTokenizer"});
  // The NullTokenizer takes the model's vocabulary; Megatron-LM pads it to 128 x tp itself.
  CHECK(values_of(merged.tokens, "--vocab-size").second == std::vector<std::string>{"50257"});
  CHECK(values_of(merged.tokens, "--train-iters").second == std::vector<std::string>{"50"});
  CHECK(values_of(merged.tokens, "--log-interval").second == std::vector<std::string>{"1"});
  CHECK(values_of(merged.tokens, "--tensor-model-parallel-size").second == std::vector<std::string>{"2"});
  CHECK(merged.notes == std::vector<std::string>{"17 flags from the plan, 15 added from trainer config "
                                                 "configs/trainers/megatron-mock.yaml"});
}

TEST_CASE("merging: the plan's values are kept, its degrees cannot be set", "[launch]") {
  const ModelSpec model = preset_model("gpt2xl");
  const PlanFile plan = gpt2xl_plan();
  const std::vector<std::string> planned = megatron_args(plan, model, MegatronFlavor::kUpstream);
  TrainerConfig c = parse_trainer_config("args: {seq-length: 2048, hidden-size: 1600, train-iters: 7}\n", "t.yaml");
  MergedTrainerArgs merged = merge_trainer_args(planned, c, plan, model);
  CHECK(values_of(merged.tokens, "--seq-length").second == std::vector<std::string>{"1024"});
  CHECK(std::count(merged.tokens.begin(), merged.tokens.end(), "--seq-length") == 1);
  CHECK(values_of(merged.tokens, "--train-iters").second == std::vector<std::string>{"7"});
  CHECK_FALSE(values_of(merged.tokens, "--vocab-size").first);  // no NullTokenizer: the tokenizer's vocabulary
  // The same value is no conflict: only --seq-length is noted.
  CHECK(merged.notes == std::vector<std::string>{
                            "16 flags from the plan, 1 added from trainer config t.yaml",
                            "--seq-length: the plan's 1024 kept (trainer config t.yaml gives 2048)"});
  CHECK_THROWS_WITH(merge_trainer_args(planned, parse_trainer_config("args: {train_iters: 1}\n", "t.yaml"), plan, model),
                    Contains("t.yaml") && Contains("'args.train_iters'") && Contains("write 'train-iters'"));
  for (const char* degree : {"tensor-model-parallel-size", "micro-batch-size", "global-batch-size",
                             "pipeline-model-parallel-layout", "context-parallel-size"})
    CHECK_THROWS_WITH(
        merge_trainer_args(planned, parse_trainer_config(std::string("args: {") + degree + ": 4}\n", "t.yaml"), plan,
                           model),
        Contains("t.yaml") && Contains(std::string("'args.") + degree + "'") && Contains("plan.yaml") &&
            Contains("tp 2, pp 3, dp 2, micro-batch 2, global batch 64"));
}

TEST_CASE("the nodes' environment: node type's, trainer config's, then the plan's", "[launch]") {
  ClusterSpec cluster = parse_cluster(kTwoTypes, "two.yaml");
  PlanFile plan = gpt2xl_plan();
  plan.node_order = {"a", "b", "a"};
  TrainerConfig c = parse_trainer_config("env: {NCCL_DEBUG: WARN, CUDA_DEVICE_MAX_CONNECTIONS: 8}\n", "t.yaml");
  LaunchEnvironment env = launch_environment(plan, cluster, c);
  using Vars = EnvironmentVariables;
  CHECK(env.by_node_type.at("a") ==
        Vars{{"NCCL_IB_HCA", "mlx5"}, {"NCCL_DEBUG", "WARN"}, {"CUDA_DEVICE_MAX_CONNECTIONS", "1"}});
  CHECK(env.by_node_type.at("b") == Vars{{"NCCL_DEBUG", "WARN"}, {"CUDA_DEVICE_MAX_CONNECTIONS", "1"}});
  CHECK(env.notes == std::vector<std::string>{
                         "environment: CUDA_DEVICE_MAX_CONNECTIONS=1 (tp 2: Megatron-LM requires it)",
                         "environment: the plan's value set over CUDA_DEVICE_MAX_CONNECTIONS=8"});
  // Megatron-FSDP (ZeRO 2, 3) asserts the opposite: the plan sets nothing at tp 2.
  plan.key.zero_stage = 3;
  CHECK(launch_environment(plan, cluster, TrainerConfig{}).by_node_type.at("b").empty());
  plan.key.zero_stage = 1;
  plan.key.tp = 1;
  CHECK(launch_environment(plan, cluster, TrainerConfig{}).by_node_type.at("b").empty());
  CHECK_THROWS_WITH(launch_environment(plan, cluster, parse_trainer_config("env: {NODE_RANK: 3}\n", "t.yaml")),
                    Contains("t.yaml") && Contains("'env.NODE_RANK'"));
  CHECK_THROWS_WITH(parse_cluster(std::string(kTwoTypes).replace(std::string(kTwoTypes).find("NCCL_DEBUG"), 10, "1x"),
                                  "two.yaml"),
                    Contains("two.yaml") && Contains("env.1x"));
}

TEST_CASE("partition options map node types anew, sbatch arguments go to every component", "[launch]") {
  ClusterSpec cluster = parse_cluster(kTwoTypes, "two.yaml");
  apply_partition_options(cluster, {"a=gpu-a100,gres=gpu:8,constraint=a100,account=ml", "b=small"});
  CHECK(cluster.node_types[0].slurm.partition == "gpu-a100");
  CHECK(cluster.node_types[0].slurm.gres == "gpu:8");
  CHECK(cluster.node_types[0].slurm.constraint == "a100");
  CHECK(cluster.node_types[0].slurm.account == "ml");
  CHECK(cluster.node_types[1].slurm.partition == "small");  // replaced whole
  CHECK_THROWS_WITH(apply_partition_options(cluster, {"c=x"}),
                    Contains("--partition 'c=x'") && Contains("no node type 'c'") && Contains("a, b"));
  CHECK_THROWS_WITH(apply_partition_options(cluster, {"a="}), Contains("no partition name"));
  CHECK_THROWS_WITH(apply_partition_options(cluster, {"a=p,qos=high"}), Contains("'qos=high'"));
  CHECK_THROWS_WITH(apply_partition_options(cluster, {"gpu"}), Contains("TYPE=PARTITION"));
  CHECK_NOTHROW(check_sbatch_args({"--time=02:00:00", "--exclusive", "--qos=high", "-t 10"}));
  CHECK_THROWS_WITH(check_sbatch_args({"--partition=x"}), Contains("--partition TYPE=NAME"));
  CHECK_THROWS_WITH(check_sbatch_args({"-N2"}), Contains("sets -N"));
  CHECK_THROWS_WITH(check_sbatch_args({"time=1"}), Contains("not an sbatch option"));

  PlanFile plan = layout_plan(1, 8, 1, 2, 8, {1, 1}, 0, false);
  plan.node_order = {"a", "b"};
  plan.source = "plan.yaml";
  LaunchLayout layout = make_launch_layout(plan, cluster);
  LaunchSettings settings{"/work/plans/plan.yaml", "/work", "true", 29500, {}, {}};
  SlurmOptions options{{"--time=01:00:00", "--exclusive"}, "nvcr.io#nvidia/pytorch:25.01-py3", {"/data:/data:ro"}};
  const std::string script = slurm_batch_script(plan, cluster, layout, settings, "/work/runs", "job", options);
  CHECK_THAT(script, Contains("#SBATCH --partition=gpu-a100 --nodes=1 --ntasks-per-node=1 --gres=gpu:8 "
                              "--constraint=a100 --account=ml\n#SBATCH --time=01:00:00\n#SBATCH --exclusive\n"
                              "#SBATCH hetjob\n#SBATCH --partition=small --nodes=1 --ntasks-per-node=1 --gpus-per-node=8\n"
                              "#SBATCH --time=01:00:00\n#SBATCH --exclusive\n"));
  // A mapping without gres asks for the node type's GPUs (8); gres=none for none.
  apply_partition_options(cluster, {"b=small,gres=none"});
  CHECK_THAT(slurm_batch_script(plan, cluster, layout, settings, "/work/runs", "job", options),
             Contains("#SBATCH hetjob\n#SBATCH --partition=small --nodes=1 --ntasks-per-node=1\n"));
  CHECK_THAT(script, Contains("srun --het-group=0,1 --ntasks-per-node=1 --container-image='nvcr.io#nvidia/pytorch:25.01-py3' "
                              "--container-mounts=/work/runs:/work/runs,/work:/work,/work/plans:/work/plans,"
                              "/data:/data:ro --container-workdir=/work bash"));
}

TEST_CASE("context parallelism in a launch: ranks, environment and the degrees a config cannot set", "[launch][cp]") {
  // tp 2, cp 2, dp 2, pp 2: 8 ranks a stage, tp fastest, then cp, then dp (Megatron-LM's
  // tp-cp-ep-dp-pp order); WORLD_SIZE is the nodes' GPUs, tp x cp x dp x pp = 16.
  PlanFile plan = layout_plan(1, 2, 2, 2, 64, {25, 25}, 0, false);
  plan.source = "plan.yaml";
  plan.key.cp = 2;
  struct Want {
    int rank, stage, dp, cp, tp;
  };
  for (Want w : {Want{0, 0, 0, 0, 0}, Want{1, 0, 0, 0, 1}, Want{2, 0, 0, 1, 0}, Want{5, 0, 1, 0, 1}, Want{6, 0, 1, 1, 0},
                 Want{7, 0, 1, 1, 1}, Want{8, 1, 0, 0, 0}, Want{11, 1, 0, 1, 1}, Want{15, 1, 1, 1, 1}}) {
    RankCoordinates r = coordinates_of_rank(plan, w.rank);
    INFO("rank " << w.rank);
    CHECK(r.stage == w.stage);
    CHECK(r.dp_index == w.dp);
    CHECK(r.cp_index == w.cp);
    CHECK(r.tp_index == w.tp);
  }
  ClusterSpec cluster = parse_cluster(kTwoTypes, "two.yaml");
  plan.node_order = {"a", "a"};
  LaunchLayout layout = make_launch_layout(plan, cluster);
  CHECK(layout.world_size == 16);
  LaunchSettings settings;
  settings.plan_path = "plan.yaml";
  std::vector<std::pair<std::string, std::string>> env = node_environment(plan, layout, layout.nodes[1], settings);
  std::vector<std::string> names;
  for (const auto& [name, value] : env) names.push_back(name + "=" + value);
  CHECK(std::vector<std::string>(names.begin() + 7, names.begin() + 12) ==
        std::vector<std::string>{"FASOP_TP=2", "FASOP_DP=2", "FASOP_PP=2", "FASOP_CP=2", "FASOP_MBS=1"});
  // Megatron-LM wants CUDA_DEVICE_MAX_CONNECTIONS=1 with context parallelism too.
  plan.key.tp = 1;
  CHECK(launch_environment(plan, cluster, TrainerConfig{}).notes ==
        std::vector<std::string>{"environment: CUDA_DEVICE_MAX_CONNECTIONS=1 (cp 2: Megatron-LM requires it)"});
  // A trainer config cannot change cp; the refusal names the plan's degrees with it.
  ModelSpec model = preset_model("gpt2xl");
  std::vector<std::string> planned = megatron_args(plan, model, MegatronFlavor::kUpstream);
  CHECK_THROWS_WITH(merge_trainer_args(planned, parse_trainer_config("args: {context-parallel-size: 1}\n", "t.yaml"),
                                       plan, model),
                    Contains("'args.context-parallel-size'") && Contains("tp 1, pp 2, dp 2, cp 2, micro-batch 1"));
}
