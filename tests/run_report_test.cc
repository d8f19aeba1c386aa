// Run reports: trainers' logs parsed (Megatron-LM's format, torchtitan's memory), the warm-up
// skipped, measured against predicted, each logged rank's memory against its stage's; the
// runtime memory constants fitted to ranks' memory and set in a cluster file's gpu_data; a
// step's model FLOPs counted by hand.
#include <catch2/catch.hpp>

#include "launch/iteration_log.h"
#include "launch/run_report.h"
#include "profiles/model_flops.h"
#include "specs/spec_loader.h"

using namespace fasop;
using Catch::Matchers::Contains;

namespace {

/// Megatron-LM's line for iteration `i` of 12 (training.py's format, log interval 2).
std::string iteration_line(int i, double ms, double loss) {
  char line[400];
  std::snprintf(line, sizeof line,
                " [2026-11-23 18:00:%02d.000000] iteration %8d/%8d | consumed samples: %12d | elapsed time per "
                "iteration (ms): %.1f | learning rate: 3.000000E-04 | global batch size:     8 | lm loss: %.6E | "
                "loss scale: 1.0 | number of skipped iterations:   0 | number of nan iterations:   0 |",
                i, i, 12, 8 * i, ms, loss);
  return line;
}

const std::string kMemory0 =
    "[Rank 0] (after 2 iterations) memory (MB) | allocated: 100.00 | max allocated: 150.00 | reserved: 200.00 | "
    "max reserved: 256.00";
const std::string kMemory3 =
    "[Rank 3] (after 2 iterations) memory (MB) | allocated: 300.00 | max allocated: 350.00 | reserved: 400.00 | "
    "max reserved: 512.00";

/// A last rank's log: log interval 2, a slow first interval, torchrun's noise between.
std::string last_rank_log() {
  return "WARNING:torch.distributed.run: Setting OMP_NUM_THREADS\n" + iteration_line(2, 900.0, 7.0) + "\n" +
         iteration_line(4, 120.0, 6.5) + "\n" + kMemory3 + "\n" + iteration_line(6, 100.0, 6.0) + "\n" +
         "[default0]: some stderr line mentioning iteration 3 / 4 |\n" + iteration_line(8, 110.0, 5.5) + "\n" +
         iteration_line(10, 90.0, 5.0) + "\n" + iteration_line(12, 100.0, 4.5) + "\n";
}

}  // namespace

TEST_CASE("Megatron-LM's iteration and memory lines are read, other lines are not", "[run_report]") {
  IterationLog log = parse_iteration_log(last_rank_log());
  REQUIRE(log.iterations.size() == 6);
  CHECK(log.iterations[0].iteration == 2);
  CHECK(log.iterations[0].train_iters == 12);
  CHECK(log.iterations[0].ms_per_iteration == 900.0);
  CHECK(log.iterations[5].global_batch == 8);
  CHECK(*log.iterations[5].loss == Approx(4.5));
  REQUIRE(log.memory.size() == 1);
  CHECK(log.memory[0].rank == 3);
  CHECK(log.memory[0].max_allocated_mib == 350.0);
  CHECK(log.memory[0].reserved_mib == 400.0);
  CHECK(log.memory[0].max_reserved_mib == 512.0);
  CHECK(parse_iteration_log("iteration 3/4 | no time here |\nrandom text\n").iterations.empty());
}

TEST_CASE("the warm-up is skipped by whole intervals and each interval weighs its iterations", "[run_report]") {
  IterationLog log = parse_iteration_log(last_rank_log());
  // Warm-up 2: intervals (2,4] ... (10,12], five of 2 iterations: (120+100+110+90+100)/5 ms.
  std::optional<MeasuredSteps> m = measure_steps(log, 2);
  REQUIRE(m);
  CHECK(m->first_iteration == 3);
  CHECK(m->last_iteration == 12);
  CHECK(m->step_s == Approx(0.104));
  CHECK(m->min_step_s == Approx(0.090));
  CHECK(m->max_step_s == Approx(0.120));
  // Warm-up 3 reaches into (2,4]: that interval goes whole.
  m = measure_steps(log, 3);
  REQUIRE(m);
  CHECK(m->first_iteration == 5);
  CHECK(m->step_s == Approx(0.100));
  // No warm-up: every interval, the slow first one too.
  CHECK(measure_steps(log, 0)->step_s == Approx((900 + 120 + 100 + 110 + 90 + 100) / 6.0 / 1000));
  CHECK_FALSE(measure_steps(log, 11));
  // An interval of 4 iterations counts four times one of 1.
  IterationLog uneven = parse_iteration_log(iteration_line(1, 500.0, 7) + "\n" + iteration_line(5, 100.0, 6) + "\n" +
                                            iteration_line(6, 200.0, 5) + "\n");
  CHECK(measure_steps(uneven, 1)->step_s == Approx((4 * 0.100 + 0.200) / 5));
}

TEST_CASE("two ranks' lines written into one line of a node's log are both read", "[run_report]") {
  // Rank 2's memory line, rank 3's iteration line, then rank 2's newline (a fresh-root run of
  // tests/launch_test.sh lost rank 2's memory so, with PYTHONUNBUFFERED set).
  IterationLog log = parse_iteration_log(kMemory3 + iteration_line(2, 100.0, 6) + "\n\n" + iteration_line(4, 90.0, 5) +
                                         kMemory0 + "\n");
  REQUIRE(log.iterations.size() == 2);
  CHECK(log.iterations[0].ms_per_iteration == 100.0);
  CHECK(log.iterations[1].iteration == 4);
  REQUIRE(log.memory.size() == 2);
  CHECK(log.memory[0].rank == 3);
  CHECK(log.memory[0].max_reserved_mib == 512.0);
  CHECK(log.memory[1].rank == 0);
  CHECK(log.memory[1].allocated_mib == 100.0);
}

TEST_CASE("logs of several nodes merge: the slower time of an iteration, every memory report", "[run_report]") {
  IterationLog a = parse_iteration_log(iteration_line(2, 100.0, 6) + "\n" + kMemory0 + "\n");
  IterationLog b = parse_iteration_log(iteration_line(2, 130.0, 6) + "\n" + iteration_line(4, 90.0, 5) + "\n" + kMemory3);
  IterationLog merged = merge_iteration_logs({a, b});
  REQUIRE(merged.iterations.size() == 2);
  CHECK(merged.iterations[0].ms_per_iteration == 130.0);
  CHECK(merged.iterations[1].iteration == 4);
  CHECK(merged.memory.size() == 2);
}

TEST_CASE("a run report: error, tokens/s/GPU, MFU and memory against the prediction", "[run_report]") {
  IterationLog log = merge_iteration_logs({parse_iteration_log(kMemory0), parse_iteration_log(last_rank_log())});
  RunPrediction predicted;
  predicted.step_s = 0.080;
  predicted.peak_memory_gib = 0.75;
  predicted.global_batch = 8;
  predicted.tokens_per_step = 8 * 32;
  predicted.model_flops_per_step = 2.6e9;
  predicted.peak_flops = 4 * 1e12;
  predicted.gpus = 4;
  RunReport r = make_run_report(*measure_steps(log, 3), predicted, log);
  CHECK(r.error == Approx(0.100 / 0.080 - 1));             // +25%
  CHECK(r.tokens_per_s_per_gpu == Approx(256.0 / 4 / 0.100));  // 640
  CHECK(r.predicted_tokens_per_s_per_gpu == Approx(256.0 / 4 / 0.080));
  CHECK(r.mfu == Approx(2.6e9 / 0.100 / 4e12));
  CHECK(r.predicted_mfu == Approx(2.6e9 / 0.080 / 4e12));
  REQUIRE(r.memory);
  CHECK(r.memory->rank == 3);  // the largest max reserved
  CHECK(r.memory->max_allocated_mib == 350);
  CHECK_THAT(run_summary_line(r), Contains("iteration 12/12: 0.1 s/step measured (iterations 5-12) against 0.08 s "
                                           "predicted (+25.0%), 640 tokens/s/GPU, MFU 0.7%"));
  CHECK_THAT(run_report_text(r), Contains("0.50") && Contains("rank 3"));
  const std::string csv = run_report_csv(r, "local-7");
  CHECK_THAT(csv, Contains("\nlocal-7,5,12,3,0.1,0.09,0.11,0.08,0.25"));
  CHECK_THAT(csv, Contains(",0.341796875,0.5,0.75,"));  // 350/1024, 512/1024 GiB
  predicted.global_batch = 16;
  CHECK_THAT(run_report_text(make_run_report(*measure_steps(log, 3), predicted, log)),
             Contains("the log's global batch size is 8, the plan's 16"));
}

TEST_CASE("torchtitan's metrics line gives rank 0's max reserved, a rank's reports merge", "[run_report]") {
  // torchtitan's line, colour codes and all: "memory: 12.50GiB(15.62%)" is max reserved.
  const std::string line =
      "[rank0]:[titan] 2026-01-02 10:00:00,000 - root - INFO - \033[31mstep: 10  \033[32mloss:  7.1234  "
      "\033[38;2;180;60;0mgrad_norm:  1.2000  \033[36mmemory: 12.50GiB(15.62%)  \033[34mtps: 1,234  "
      "\033[36mtflops: 56.78  \033[35mmfu: 5.74%\033[39m";
  IterationLog log = parse_iteration_log(line + "\n" + "step: 3 memory: lots GiB(1%)\nmemory: 3.00GiB(1.00%)\n");
  REQUIRE(log.memory.size() == 1);
  CHECK(log.memory[0].rank == 0);
  CHECK(log.memory[0].max_reserved_mib == 12.5 * 1024);
  CHECK_FALSE(log.memory[0].allocated_logged);
  // Rank 3 twice (two nodes' logs, or two reports): the largest of each figure.
  const std::string again = "[Rank 3] (after 4 iterations) memory (MB) | allocated: 310.00 | max allocated: 340.00 | "
                            "reserved: 450.00 | max reserved: 600.00";
  std::vector<MemoryRecord> ranks = memory_by_rank(parse_iteration_log(kMemory3 + "\n" + again + "\n" + kMemory0).memory);
  REQUIRE(ranks.size() == 2);
  CHECK(ranks[0].rank == 0);
  CHECK(ranks[1].rank == 3);
  CHECK(ranks[1].allocated_mib == 310);
  CHECK(ranks[1].max_allocated_mib == 350);
  CHECK(ranks[1].max_reserved_mib == 600);
}

namespace {

/// Two stages of 2 GPUs (ranks 0-1 and 2-3): stage 0 predicts 128 MiB allocated and 256
/// reserved at its backward pass, stage 1 320 MiB and 0.4 GiB at its forward pass.
std::vector<StageMemoryPrediction> two_stages() {
  StageMemoryPrediction first{0, 2, "backward", 0.125, 0.25, 0.75};
  StageMemoryPrediction second{2, 2, "forward", 0.3125, 0.4, 0.9};
  return {first, second};
}

}  // namespace

TEST_CASE("torchtitan's tokens a second a GPU give its step times from the plan's tokens and GPUs", "[run_report]") {
  // Steps 1, 5, 10 at 1,000, 2,048 and 2,000 tokens a second a GPU (thousands written with
  // commas). 32 GPUs, 2^21 tokens a step: step 10 took 2,097,152 / (2,000 x 32) = 32.768 s.
  auto line = [](int step, const std::string& tps) {
    return "[rank0]:[titan] - INFO - \033[31mstep: " + std::to_string(step) +
           "  \033[32mloss:  7.1234  \033[36mmemory: 12.50GiB(15.62%)  \033[34mtps: " + tps +
           "  \033[36mtflops: 56.78  \033[35mmfu: 5.74%\033[39m\n";
  };
  IterationLog log = parse_iteration_log(line(1, "1,000") + line(5, "2,048") + line(10, "2,000"));
  REQUIRE(log.iterations.size() == 3);
  CHECK(log.iterations[1].iteration == 5);
  CHECK(*log.iterations[1].tokens_per_s_per_gpu == 2048);
  CHECK(log.iterations[2].ms_per_iteration == 0);  // not timed until the plan is known
  time_throughput_lines(log, 2097152, 32);
  CHECK(log.iterations[1].ms_per_iteration == 32000);
  CHECK(log.iterations[2].ms_per_iteration == 32768);
  // Past a warm-up of 1: steps 2-5 at 32 s and 6-10 at 32.768 s, weighed by their steps.
  const MeasuredSteps measured = *measure_steps(log, 1);
  CHECK(measured.first_iteration == 2);
  CHECK(measured.step_s == Approx((4 * 32.0 + 5 * 32.768) / 9));
  // Two ranks log step 10: the one with fewer tokens a second is the step's time.
  IterationLog other = parse_iteration_log(line(10, "1,600"));
  IterationLog merged = merge_iteration_logs({parse_iteration_log(line(10, "2,000")), other});
  REQUIRE(merged.iterations.size() == 1);
  CHECK(*merged.iterations[0].tokens_per_s_per_gpu == 1600);
}

TEST_CASE("each logged rank's memory against its stage's: allocated, reserved, errors", "[run_report]") {
  CHECK(stage_of_rank(two_stages(), 0) == 0);
  CHECK(stage_of_rank(two_stages(), 1) == 0);
  CHECK(stage_of_rank(two_stages(), 2) == 1);
  CHECK(stage_of_rank(two_stages(), 3) == 1);
  CHECK(stage_of_rank(two_stages(), 4) == -1);
  const std::string rank9 = "[Rank 9] (after 2 iterations) memory (MB) | allocated: 1.00 | max allocated: 2.00 | "
                            "reserved: 3.00 | max reserved: 4.00";
  IterationLog log = merge_iteration_logs({parse_iteration_log(kMemory0 + "\n" + rank9), parse_iteration_log(last_rank_log())});
  RunPrediction predicted;
  predicted.step_s = 0.080;
  predicted.peak_memory_gib = 0.9;
  predicted.global_batch = 8;
  predicted.tokens_per_step = 8 * 32;
  predicted.gpus = 4;
  predicted.stage_memory = two_stages();
  RunReport r = make_run_report(*measure_steps(log, 3), predicted, log);
  REQUIRE(r.ranks.size() == 3);
  // Rank 0 (stage 0): 150 MiB against 128 allocated (+17.2%), 256 against 256 reserved.
  CHECK(r.ranks[0].rank == 0);
  CHECK(r.ranks[0].stage == 0);
  CHECK(r.ranks[0].moment == "backward");
  CHECK(r.ranks[0].allocated_error() == Approx(150.0 / 128 - 1));
  CHECK(r.ranks[0].reserved_error() == Approx(0).margin(1e-12));
  // Rank 3 (stage 1): 350 MiB against 320 (+9.4%), 512 MiB against 0.4 GiB (+25.0%).
  CHECK(r.ranks[1].rank == 3);
  CHECK(r.ranks[1].stage == 1);
  CHECK(r.ranks[1].allocated_error() == Approx(0.09375));
  CHECK(r.ranks[1].reserved_error() == Approx(0.25));
  // Rank 9: no stage of the plan runs it.
  CHECK(r.ranks[2].rank == 9);
  CHECK(r.ranks[2].stage == -1);
  const std::string text = run_report_text(r);
  CHECK_THAT(text, Contains("rank stage moment          max allocated  predicted    error  max reserved  predicted    error\n"));
  CHECK_THAT(text, Contains("   0     0 backward                 0.15       0.12   +17.2%          0.25       0.25    +0.0%\n"));
  CHECK_THAT(text, Contains("   3     1 forward                  0.34       0.31    +9.4%          0.50       0.40   +25.0%\n"));
  CHECK_THAT(text, Contains("   9     - not in the plan          0.00          -        -          0.00          -        -\n"));
  // report.csv: the run's row (the old columns first, as before), then a row per rank.
  const std::string csv = run_report_csv(r, "local-7");
  CHECK_THAT(csv, Contains("max_reserved_gib,predicted_peak_memory_gib,rank,stage,moment,predicted_allocated_gib,"
                           "allocated_error,predicted_reserved_gib,reserved_error\n"));
  // The run's: the largest rank (350 MiB, 512 MiB) against the largest stage (0.3125, 0.4 GiB).
  CHECK_THAT(csv, Contains(",0.341796875,0.5,0.9,,,,0.3125,0.09375,0.4,0.25\n"));
  CHECK_THAT(csv, Contains("\nlocal-7,,,,,,,,,,,,,0.146484375,0.25,0.75,0,0,backward,0.125,0.171875,0.25,0.0\n"));
  CHECK_THAT(csv, Contains("\nlocal-7,,,,,,,,,,,,,0.341796875,0.5,0.9,3,1,forward,0.3125,0.09375,0.4,0.25\n"));
  CHECK_THAT(csv, Contains("\nlocal-7,,,,,,,,,,,,,0.001953125,0.00390625,,9,,,,,,\n"));
  // A torchtitan rank 0: max reserved alone.
  IterationLog titan = merge_iteration_logs(
      {parse_iteration_log("step: 10  loss: 7.0  memory: 0.30GiB(1.00%)  tps: 1"), parse_iteration_log(last_rank_log())});
  RunReport t = make_run_report(*measure_steps(titan, 3), predicted, titan);
  REQUIRE(t.ranks.size() == 2);
  CHECK_FALSE(t.ranks[0].allocated_logged);
  CHECK(t.ranks[0].reserved_error() == Approx(0.30 / 0.25 - 1));
  CHECK_THAT(run_report_text(t), Contains("   0     0 backward                    -       0.12        -          0.30       0.25   +20.0%\n"));
  // Without a breakdown (FASOP's policy) the ranks go unmatched, and the report says why.
  predicted.stage_memory.clear();
  CHECK_THAT(run_report_text(make_run_report(*measure_steps(log, 3), predicted, log)),
             Contains("the plan's policy gives no per-stage breakdown"));
}

TEST_CASE("the runtime memory constants fitted to ranks' memory: medians, in closed form", "[run_report]") {
  RuntimeMemory before;
  before.workspace_gib = 0.075;
  before.te_workspace_gib = 0.03;
  before.reserve_share = 0.05;
  // Allocated: measured - predicted 0.5, 0.2, 0.4 GiB: the median 0.4 goes to the workspace.
  // Reserved: (measured reserved - predicted allocated - 0.4) / dynamic = 1.1/4, 1.8/8, 0.5/2 =
  // 0.275, 0.225, 0.25: the median 0.25.
  std::vector<RankMemorySample> samples = {{10.0, 11.0, 9.5, 4.0}, {20.0, 22.0, 19.8, 8.0}, {15.0, 15.5, 14.6, 2.0}};
  RuntimeMemory after = fit_runtime_memory(before, samples);
  CHECK(after.workspace_gib == Approx(0.475));
  CHECK(after.reserve_share == Approx(0.25));
  CHECK(after.te_workspace_gib == 0.03);  // the others stay
  CHECK(after.context_gib == before.context_gib);
  // An even count takes the middle two's mean; a rank without dynamic terms gives no share.
  samples.push_back({5.0, 9.0, 4.9, 0.0});
  after = fit_runtime_memory(before, samples);
  CHECK(after.workspace_gib == Approx(0.075 + (0.2 + 0.4) / 2));  // gaps 0.1, 0.2, 0.4, 0.5
  CHECK(after.reserve_share == Approx((1.2 / 4 + 0.6 / 2) / 2));   // shift 0.3: 0.3, 0.2125, 0.3
  // Measured below predicted past the constants: both stop at 0.
  after = fit_runtime_memory(before, {{1.0, 1.0, 2.0, 1.0}});
  CHECK(after.workspace_gib == 0);
  CHECK(after.reserve_share == 0);  // (1 - 2 + 0.075) / 1 < 0
  CHECK(fit_runtime_memory(before, {}).workspace_gib == 0.075);
}

TEST_CASE("a node type's gpu_data sets memory_runtime over its GPU's, field by field", "[run_report]") {
  const std::string head =
      "name: c\nnode_types:\n  - {name: p5, gpu: H100, gpus_per_node: 8, gpu_memory_gib: 80,\n"
      "     intra_node_bandwidth_bits_per_s: 1e12, inter_node_bandwidth_bits_per_s: 1e11, price_usd_per_hour: 1,\n"
      "     gpu_data: ";
  const std::string tail = "}\nnodes: [{type: p5, count: 1}]\n";
  const RuntimeMemory shipped = parse_cluster(head + "{}" + tail, "c.yaml").node_types[0].gpu_data.runtime_memory(TrainingStack::kMegatron);
  ClusterSpec c = parse_cluster(
      head + "{bf16.gemm_peak_share: 0.5, memory_runtime: {megatron: {workspace_gib: 0.475, reserve_share: 0.25}}}" + tail,
      "c.yaml");
  const RuntimeMemory megatron = c.node_types[0].gpu_data.runtime_memory(TrainingStack::kMegatron);
  CHECK(megatron.workspace_gib == 0.475);
  CHECK(megatron.reserve_share == 0.25);
  CHECK(megatron.te_workspace_gib == shipped.te_workspace_gib);
  CHECK(megatron.context_gib == shipped.context_gib);
  CHECK(c.node_types[0].gpu_data.efficiency("bf16").gemm_peak_share == 0.5);
  CHECK_THROWS_WITH(parse_cluster(head + "{memory_runtime: {megatron: {workspace_gib: -1}}}" + tail, "c.yaml"),
                    Contains("gpu_data.memory_runtime.megatron.workspace_gib") && Contains("zero or positive"));
  CHECK_THROWS_WITH(parse_cluster(head + "{memory_runtime: {megatron: {workspace: 1}}}" + tail, "c.yaml"),
                    Contains("gpu_data.memory_runtime.megatron.workspace'") && Contains("unknown field"));
  CHECK_THROWS_WITH(parse_cluster(head + "{memory_runtime: {jax: {workspace_gib: 1}}}" + tail, "c.yaml"),
                    Contains("gpu_data.memory_runtime.jax") && Contains("unknown stack"));
  CHECK_THROWS_WITH(parse_cluster(head + "{memory_runtime: 1}" + tail, "c.yaml"), Contains("gpu_data.memory_runtime"));
}

TEST_CASE("a step's model FLOPs: every GEMM and attention of the forward, times 3", "[run_report]") {
  ModelSpec tiny = parse_model(
      "name: tiny\nhidden: 64\nheads: 4\nsequence: 32\nvocab: 1024\nglobal_batch: 8\nlayers:\n"
      "  - {type: embedding, role: embedding}\n  - {type: transformer, role: transformer, repeat: 2}\n"
      "  - {type: post_process, role: post_process}\n",
      "tiny.yaml");
  // Per sequence (s 32, h 64, ffn 256, V 1024): a layer's QKV 2·s·h·3h = 786,432, output
  // 2·s·h·h = 262,144, MLP 2 x 2·s·h·4h = 2,097,152; causal attention half of 2 x 2·s²·h =
  // 131,072; the head 2·s·h·V = 4,194,304.
  const double layer = 786432 + 262144 + 2097152 + 131072;
  const double forward = 2 * layer + 4194304;
  CHECK(model_flops_per_step(tiny, 8) == Approx(3 * forward * 8));
}
