// The GEMM sweep's fit (profiler/gemm_fit.h) and its validation (validate/gemm_sweep.h), on
// points made from known parameters, and the vocabulary padding the profiler and the analytic
// model share.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "profiler/gemm_fit.h"
#include "specs/model_spec.h"
#include "specs/spec_error.h"
#include "validate/gemm_sweep.h"

using namespace fasop;

namespace {

/// Seconds of a GEMM at `peak` FLOP/s with share x prod d / (d + half), / unaligned where n or k
/// is not a multiple of 8 (fp16).
double model_s(double m, double n, double k, double peak, double share, double half, double unaligned) {
  double e = share * m / (m + half) * n / (n + half) * k / (k + half);
  if (std::fmod(n, 8) != 0 || std::fmod(k, 8) != 0) e *= unaligned;
  return 2 * m * n * k / (peak * e);
}

std::vector<GemmPoint> synthetic_sweep(double peak) {
  std::vector<GemmPoint> points;
  for (double m : {1024, 4096, 16384})
    for (double n : {1024, 4096, 16384})
      for (double k : {1024, 4096}) points.push_back({m, n, k, model_s(m, n, k, peak, 0.8, 100, 0.2)});
  // GPT-2's unpadded head: n = 50,257 is not a multiple of 8.
  points.push_back({4096, 50257, 1600, model_s(4096, 50257, 1600, peak, 0.8, 100, 0.2)});
  points.push_back({4096, 1600, 50257, model_s(4096, 1600, 50257, peak, 0.8, 100, 0.2)});
  // Two launch-bound GEMMs: 10 and 12 us whatever their size (the host's launch).
  points.push_back({64, 64, 64, 10e-6});
  points.push_back({128, 128, 128, 12e-6});
  return points;
}

}  // namespace

TEST_CASE("a GEMM sweep's fit leaves launch-bound GEMMs out and fits the unaligned share apart", "[gemm]") {
  const double peak = 1e13;  // 10 TFLOP/s: the smallest model GEMM, 1024^3, takes 355 us
  const std::vector<GemmPoint> points = synthetic_sweep(peak);
  // The shortest GEMM (10 us, 64^3 at 0.05 TFLOP/s) ran at under a tenth of the best rate: the
  // launch bound is 3 x 10 us.
  CHECK(launch_bound_s(points) == Approx(30e-6));
  const GemmSweepFit f = fit_gemm_sweep(points, peak, 2);
  CHECK(f.launch_bound == 2);
  CHECK(f.aligned == 18);
  CHECK(f.unaligned == 2);
  CHECK(f.fit.gemm_peak_share == Approx(0.8).epsilon(1e-4));
  CHECK(f.fit.gemm_half_dim == Approx(100).epsilon(1e-3));
  CHECK(f.gemm_unaligned_share == Approx(0.2).epsilon(1e-3));
  CHECK(f.fit.worst_error < 1e-3);
  // Without the launch-bound points' exclusion the fit could not match them: 10 us for 64^3
  // would need a share of 5e-4.
  std::vector<GemmPoint> large(points.begin(), points.end() - 2);
  CHECK(launch_bound_s(large) == 0);  // its shortest GEMM ran near the best rate: none is launch-bound
  CHECK(fit_gemm_sweep(large, peak, 2).launch_bound == 0);
}

TEST_CASE("a GEMM sweep file is read and its GPU's model is checked against it", "[gemm][validate]") {
  const std::string text =
      "# a sweep\nkind: gemm_times\ngpu: H100\ndevice: test\npoints:\n"
      "  - {dtype: bf16, m: 8192, n: 8192, k: 8192, seconds: 0.0015, tflops: 733}\n"
      "  - {dtype: bf16, m: 256, n: 256, k: 256, seconds: 1e-5, tflops: 3.4}\n"
      "  - {dtype: fp16, m: 8192, n: 8192, k: 8192, seconds: 0.0015, tflops: 733}\n";
  REQUIRE(is_gemm_sweep(text));
  CHECK_FALSE(is_gemm_sweep("kind: layer_times\n"));
  const GemmSweep sweep = parse_gemm_sweep(text, "sweep.yaml");
  CHECK(sweep.gpu == "H100");
  REQUIRE(sweep.points.at("bf16").size() == 2);
  CHECK(sweep.points.at("bf16")[0].m == 8192);
  // A GPU whose bf16 model is exactly 2 x 8192^3 / 1.5 ms at a 1,000 TFLOP/s peak: share 0.733,
  // no half-dimension. The 256^3 GEMM (10 us at 3.4 TFLOP/s) is launch-bound and left out.
  GpuSpec gpu;
  gpu.name = "X";
  gpu.peak_tflops = {{"bf16", 1000}};
  gpu.memory_bandwidth_bytes_per_s = 1e12;
  gpu.precisions["bf16"].gemm_peak_share = 2.0 * 8192 * 8192 * 8192 / 0.0015 / 1e15;
  gpu.precisions["bf16"].gemm_half_dim = 0;
  const std::vector<GemmSweepResult> r = predict_gemm_sweep(sweep, gpu);
  REQUIRE(r.size() == 1);  // no fp16 efficiencies: that dtype is not predicted
  CHECK(r[0].points == 1);
  CHECK(r[0].launch_bound == 1);
  CHECK(r[0].median_abs_error_pct == Approx(0).margin(1e-9));
  CHECK_THROWS_AS(parse_gemm_sweep("kind: gemm_times\ngpu: H100\npoints:\n  - {dtype: bf16, m: 0, n: 1, k: 1, seconds: 1}\n",
                                   "bad.yaml"),
                  SpecError);
}

TEST_CASE("the vocabulary shard the profiler builds and the analytic model counts", "[gemm][profile]") {
  CHECK(padded_vocab_shard(50257, 1, 128) == 50304);  // GPT-2, as Megatron-LM pads it
  CHECK(padded_vocab_shard(50257, 4, 128) == 12672);  // 99 x 512 = 50,688 rows over 4
  CHECK(padded_vocab_shard(128256, 8, 128) == 16128);  // Llama 3: 126 x 1024 over 8
  CHECK(padded_vocab_shard(50257, 2, 1) == 25129);     // padded to tp only
}
