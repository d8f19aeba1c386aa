// The alpha-beta fit behind `fasop-cpp profile net`: exact recovery, noise, the latency-0
// fallback and the inputs it refuses.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <vector>

#include "profiler/alpha_beta_fit.h"

using namespace fasop;

namespace {

/// The default sizes of `profile net`: 4 KiB to 64 MiB by powers of 4.
std::vector<double> default_sizes_bytes() {
  std::vector<double> sizes;
  for (double bytes = 4096; bytes <= 64.0 * 1024 * 1024; bytes *= 4) sizes.push_back(bytes);
  return sizes;
}

/// Points of t = latency + bytes / bandwidth, each time scaled by (1 + noise[i % noise.size()]).
std::vector<TimedMessage> model_points(double latency_s, double bytes_per_s, const std::vector<double>& sizes,
                                       const std::vector<double>& noise = {0.0}) {
  std::vector<TimedMessage> points;
  for (size_t i = 0; i < sizes.size(); ++i) {
    double t = latency_s + sizes[i] / bytes_per_s;
    points.push_back({sizes[i], t * (1 + noise[i % noise.size()])});
  }
  return points;
}

}  // namespace

TEST_CASE("the alpha-beta fit recovers latency and bandwidth from noiseless points", "[alpha_beta]") {
  auto points = model_points(5e-5, 1e10, default_sizes_bytes());
  AlphaBeta fit = fit_alpha_beta(points);
  CHECK(fit.latency_s == Approx(5e-5).epsilon(1e-9));
  CHECK(fit.bytes_per_s == Approx(1e10).epsilon(1e-9));
  CHECK(fit.worst_relative_error(points) < 1e-9);
  CHECK(fit.predict_s(1e6) == Approx(5e-5 + 1e-4).epsilon(1e-9));
}

TEST_CASE("the alpha-beta fit stays close under +/-5% noise", "[alpha_beta]") {
  // Deterministic noise, both signs at small and large sizes.
  auto points = model_points(5e-5, 1e10, default_sizes_bytes(), {0.05, -0.05, -0.03, 0.04, 0.0, -0.05});
  AlphaBeta fit = fit_alpha_beta(points);
  CHECK(fit.latency_s == Approx(5e-5).epsilon(0.10));
  CHECK(fit.bytes_per_s == Approx(1e10).epsilon(0.05));
  // Relative least squares treats every size alike: no point strays much beyond the noise.
  CHECK(fit.worst_relative_error(points) < 0.07);
}

TEST_CASE("a negative fitted latency falls back to latency 0", "[alpha_beta]") {
  // t = -20 us + bytes / 1e9: the straight line crosses zero above 0 bytes.
  auto points = model_points(-2e-5, 1e9, {1e5, 4e5, 1.6e6, 6.4e6});
  AlphaBeta fit = fit_alpha_beta(points);
  CHECK(fit.latency_s == 0);
  CHECK(fit.bytes_per_s > 0);
  CHECK(fit.bytes_per_s == Approx(1e9).epsilon(0.25));
}

TEST_CASE("the alpha-beta fit refuses what it cannot fit", "[alpha_beta]") {
  SECTION("one size only") {
    CHECK_THROWS_AS(fit_alpha_beta({{4096, 1e-5}}), std::invalid_argument);
    CHECK_THROWS_AS(fit_alpha_beta({{4096, 1e-5}, {4096, 1.1e-5}}), std::invalid_argument);
  }
  SECTION("no points") { CHECK_THROWS_AS(fit_alpha_beta({}), std::invalid_argument); }
  SECTION("a time that is not positive") {
    CHECK_THROWS_AS(fit_alpha_beta({{4096, 1e-5}, {8192, 0}}), std::invalid_argument);
  }
  SECTION("a time that falls as the size grows") {
    CHECK_THROWS_AS(fit_alpha_beta({{1000, 1e-3}, {2000, 0.9e-3}, {4000, 0.7e-3}}), std::invalid_argument);
  }
}
