// Run reports: trainers' logs parsed (Megatron-LM's format), the warm-up skipped, measured
// against predicted; a step's model FLOPs counted by hand.
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

TEST_CASE("Megatron-LM's iteration and memory lines are read; other lines are not", "[run_report]") {
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
  CHECK_THAT(csv, Contains(",0.341796875,0.5,0.75\n"));  // 350/1024, 512/1024 GiB
  predicted.global_batch = 16;
  CHECK_THAT(run_report_text(make_run_report(*measure_steps(log, 3), predicted, log)),
             Contains("the log's global batch size is 8, the plan's 16"));
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
