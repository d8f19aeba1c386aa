#include "profiler/net_timing.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "specs/spec_error.h"

namespace fasop {
namespace {

constexpr int kWarmups = 2;   ///< untimed runs of each size first: connections, page faults, caches
constexpr int kRounds = 5;    ///< sweeps over the sizes that share out each size's repeats
constexpr int kMaxRanks = 64; ///< local processes; more only oversubscribes the cores
constexpr double kMaxBytes = 4.0 * 1024 * 1024 * 1024;  ///< each rank holds one or two such buffers

/// The middle value (the mean of the two middle ones for an even count): robust to the odd
/// repetition a scheduler hiccup slows down.
double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

/// `timed(bytes)` run `warmups` + `repeats` times; the timed ones appended to `times`.
void append_repeats_s(const TimedOperation& timed, size_t bytes, int warmups, int repeats, std::vector<double>& times) {
  for (int i = 0; i < warmups + repeats; ++i) {
    double t = timed(bytes);
    if (i >= warmups) times.push_back(t);
  }
}

}  // namespace

std::vector<double> default_sizes_bytes() {
  // 4 MiB to 128 MiB: the messages of gradient and activation traffic, where one latency and
  // one bandwidth describe a link. Smaller ones on loopback sit in the CPU caches and run
  // about twice as fast per byte, which no single line fits (measured here: 20-60% off with
  // 4 KiB-1 MiB messages, 4-14% off from 4 MiB up).
  std::vector<double> sizes;
  for (double bytes = 4.0 * 1024 * 1024; bytes <= 128.0 * 1024 * 1024; bytes *= 2) sizes.push_back(bytes);
  return sizes;
}

void check_net_options(const NetProfileOptions& options, const std::vector<double>& sizes_bytes) {
  if (options.ranks < 2)
    throw SpecError("--ranks " + std::to_string(options.ranks) +
                    ": needs 2 or more (send/recv runs between rank 0 and rank 1)");
  if (options.ranks > kMaxRanks)
    throw SpecError("--ranks " + std::to_string(options.ranks) + ": at most " + std::to_string(kMaxRanks));
  if (options.repeats < 1) throw SpecError("--repeats " + std::to_string(options.repeats) + ": needs 1 or more");
  std::set<double> distinct;
  for (double bytes : sizes_bytes) {
    if (!std::isfinite(bytes) || bytes < 4 || std::fmod(bytes, 4) != 0)
      throw SpecError("message size " + short_number(bytes) +
                      " bytes: must be a positive multiple of 4 (the buffers are float32)");
    if (bytes > kMaxBytes) throw SpecError("message size " + human_bytes(bytes) + ": at most 4 GiB");
    distinct.insert(bytes);
  }
  if (distinct.size() < 2) throw SpecError("give two or more distinct message sizes: the fit needs them");
}

// The repeats of a size are spread over rounds, each round sweeping every size in a short block
// (one untimed run, then a few timed), so that a slow spell of a shared machine, which lasts
// about as long as all the repeats of one size, spoils a few samples of several sizes rather
// than one size's median. (Blocks of one run each were tried and fitted worse: a 64 MiB
// transfer slows the small one that follows it, which the untimed run absorbs.)
std::vector<SizeTiming> time_sizes_in_rounds(const std::vector<double>& sizes_bytes, int repeats, bool progress,
                                             const TimedOperation& send_recv, const TimedOperation& allreduce) {
  const double largest = *std::max_element(sizes_bytes.begin(), sizes_bytes.end());
  std::vector<std::vector<double>> send_recv_s(sizes_bytes.size()), allreduce_s(sizes_bytes.size());
  const int rounds = std::min(repeats, kRounds);
  for (int round = 0; round < rounds; ++round) {
    const int warmups = round == 0 ? kWarmups : 1;
    for (size_t i = 0; i < sizes_bytes.size(); ++i) {
      // Small messages are cheap and their times the noisiest: a size 8x below the largest is
      // repeated twice as often, 32x below 8x as often, so each size's samples span a similar time.
      const int total = repeats * std::max(1, static_cast<int>(largest / sizes_bytes[i] / 4));
      // Round r takes its share of the repeats: they differ by at most one between rounds.
      const int share = total * (round + 1) / rounds - total * round / rounds;
      const size_t bytes = static_cast<size_t>(sizes_bytes[i]);
      append_repeats_s(send_recv, bytes, warmups, share, send_recv_s[i]);
      append_repeats_s(allreduce, bytes, warmups, share, allreduce_s[i]);
    }
    if (progress) std::fprintf(stderr, "\rfasop-cpp: profile net: round %d of %d", round + 1, rounds);
  }
  if (progress) std::fprintf(stderr, "\n");
  std::vector<SizeTiming> timings;
  for (size_t i = 0; i < sizes_bytes.size(); ++i)
    timings.push_back({sizes_bytes[i], median(send_recv_s[i]), median(allreduce_s[i])});
  return timings;
}

std::string short_number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.4g", value);
  return buffer;
}

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int unit = 0;
  while (unit < 3 && bytes >= 1024 && std::fmod(bytes, 1024) == 0) {
    bytes /= 1024;
    ++unit;
  }
  return short_number(bytes) + " " + units[unit];
}

}  // namespace fasop
