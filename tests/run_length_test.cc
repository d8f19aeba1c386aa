// The training run's length (costmodel/run_length.h): where its steps come from, and the
// deadlines a user writes, against numbers worked out by hand.
#include <catch2/catch.hpp>

#include "costmodel/run_length.h"
#include "specs/spec_error.h"
#include "specs/spec_loader.h"
#include "test_support.h"

using namespace fasop;
using fasop::testing::preset_model;

TEST_CASE("a deadline's units: seconds, minutes, hours, days and weeks", "[run_length]") {
  CHECK(parse_duration_s("3600", "--deadline") == 3600);
  CHECK(parse_duration_s("90m", "--deadline") == 5400);
  CHECK(parse_duration_s("36h", "--deadline") == 129600);
  CHECK(parse_duration_s("1.5d", "--deadline") == 129600);
  CHECK(parse_duration_s("14d", "--deadline") == 1209600);
  CHECK(parse_duration_s("2w", "--deadline") == 1209600);
  for (const char* bad : {"", "d", "14x", "-1d", "0", "nan", "inf", "14 d"})
    CHECK_THROWS_WITH(parse_duration_s(bad, "--deadline"), Catch::Matchers::Contains("--deadline: '") &&
                                                               Catch::Matchers::Contains("e.g. 14d"));
}

TEST_CASE("the run's steps: a flag, then the model's length, then 20 tokens a parameter", "[run_length]") {
  // Llama 3 8B: 15T tokens (train_tokens) at 512 sequences of 8192 tokens a step:
  // 15e12 / 4,194,304 = 3,576,278.69 steps.
  const ModelSpec llama = preset_model("llama3-8b");
  RunLength run = run_length(llama, 0, 0);
  CHECK(run.steps == Approx(15e12 / (512.0 * 8192)).epsilon(1e-12));
  CHECK(run.tokens == Approx(15e12).epsilon(1e-12));
  CHECK(run.source == "the model's train_tokens");
  CHECK(run_length_text(llama, run) ==
        "15T tokens = 3.58M steps of 512 x 8192 tokens (the model's train_tokens; --train-tokens or --steps to change)");
  // A doubled batch halves the steps of the same tokens.
  ModelSpec doubled = llama;
  doubled.global_batch = 1024;
  CHECK(run_length(doubled, 0, 0).steps == Approx(15e12 / (1024.0 * 8192)).epsilon(1e-12));
  // --train-tokens 1e11: 1e11 / 4,194,304 = 23,841.86 steps; --iterations wins over it.
  run = run_length(llama, 0, 1e11);
  CHECK(run.steps == Approx(23841.857910156).epsilon(1e-9));
  CHECK(run.source == "--train-tokens");
  run = run_length(llama, 1000, 1e11);
  CHECK(run.steps == 1000);
  CHECK(run.tokens == 1000 * 4194304.0);
  CHECK(run_length_text(llama, run) == "4.19B tokens = 1k steps of 512 x 8192 tokens (--iterations)");
  // FASOP's models state FASOP's 12.5M steps.
  run = run_length(preset_model("gpt2xl"), 0, 0);
  CHECK(run.steps == 12.5e6);
  CHECK(run.source == "the model's train_steps");
  // A model stating neither: 20 tokens a parameter. tiny_model's 4 layers of 12 x 1000^2 +
  // 4,000 parameters (no biases; two layer norms of 2 x 1000) with an embedding and a tied head
  // of 1000 x 1024 rows (the vocabulary padded to 128) held once, and the final norm's 2,000:
  // 48,016,000 + 1,024,000 + 2,000 = 49,042,000; 8 x 500 tokens a step:
  // 20 x 49,042,000 / 4,000 = 245,210 steps.
  const ModelSpec tiny = parse_model(
      "name: tiny\nhidden: 1000\nheads: 10\nsequence: 500\nvocab: 1000\ndtype: bf16\nglobal_batch: 8\nlayers:\n"
      "  - {type: embedding, role: embedding}\n  - {type: transformer, role: transformer, repeat: 4}\n"
      "  - {type: head, role: post_process}\n",
      "tiny.yaml");
  CHECK(model_parameters(tiny) == 49042000);
  run = run_length(tiny, 0, 0);
  CHECK(run.steps == Approx(245210).epsilon(1e-12));
  CHECK(run.source == "default: 20 tokens a parameter, as the model states no train_tokens");
}

TEST_CASE("short counts keep three digits", "[run_length]") {
  CHECK(short_count(999) == "999");
  CHECK(short_count(1000) == "1k");
  CHECK(short_count(23841.86) == "23.8k");
  CHECK(short_count(3576278.69) == "3.58M");
  CHECK(short_count(8.03e9) == "8.03B");
  CHECK(short_count(15e12) == "15T");
}
