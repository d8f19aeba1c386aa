#include "profiler/net_profiler.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/types.h>

#include "profiler/alpha_beta_fit.h"
#include "profiler/provenance.h"
#include "report/atomic_file.h"

namespace fasop {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr int kWarmups = 2;        ///< untimed repetitions first: connections, page faults, caches
constexpr int kMaxRanks = 64;      ///< local processes; more only oversubscribes the cores
constexpr double kMaxBytes = 4.0 * 1024 * 1024 * 1024;  ///< each rank holds one or two such buffers
constexpr std::chrono::seconds kTimeout(120);  ///< a rank that waits longer gives up (a peer died)
constexpr uint8_t kPingSlotPrefix = 0x50;  ///< gloo's own collectives use prefixes 0x01..0x08
constexpr uint32_t kBarrierTag = 1, kAllreduceTag = 2;
constexpr double kCloseFit = 0.2;  ///< worst relative error beyond which the report warns
const char* const kResultsFile = "rank0-results.txt";  ///< in the rendezvous directory

/// Where rank `rank` leaves the message of the error that stopped it, for the parent to report.
std::string error_file(const std::string& store_dir, int rank) {
  return store_dir + "/rank" + std::to_string(rank) + "-error.txt";
}

/// Input the user can fix (exit 2), as opposed to a failure while measuring (exit 1).
struct BadInput : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Median times of one message size, as rank 0 measured them.
struct SizeTiming {
  double bytes = 0;
  double send_recv_s = 0;  ///< one way: half the round trip rank 0 -> rank 1 -> rank 0
  double allreduce_s = 0;
};

/// What one rank does: which sizes, how often, and where the ranks meet.
struct RankJob {
  int rank = 0;
  int ranks = 2;
  int repeats = 10;
  std::vector<double> sizes_bytes;
  std::string store_dir;  ///< the FileStore rendezvous; rank 0 also leaves its results there
  bool progress = false;  ///< rank 0 prints a line per size on stderr (the others stay quiet)
};

/// `%.4g`: four digits are more than the measurement's noise, and short enough to paste.
std::string short_number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.4g", value);
  return buffer;
}

/// short_number for YAML: "3e+10" gains a ".0" ("3.0e+10"), since YAML 1.1 readers (PyYAML)
/// take an exponent without a point for a string.
std::string yaml_number(double value) {
  std::string text = short_number(value);
  size_t exponent = text.find('e');
  if (exponent != std::string::npos && text.find('.') == std::string::npos) text.insert(exponent, ".0");
  return text;
}

/// A size as people write it: "4 KiB", "64 MiB", or bytes where it is not a whole unit.
std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int unit = 0;
  while (unit < 3 && bytes >= 1024 && std::fmod(bytes, 1024) == 0) {
    bytes /= 1024;
    ++unit;
  }
  return short_number(bytes) + " " + units[unit];
}

/// The default message sizes.
std::vector<double> default_sizes_bytes() {
  // 4 MiB to 128 MiB: the messages of gradient and activation traffic, where one latency and
  // one bandwidth describe a link. Smaller ones on loopback sit in the CPU caches and run
  // about twice as fast per byte, which no single line fits (measured here: 20-60% off with
  // 4 KiB-1 MiB messages, 4-14% off from 4 MiB up).
  std::vector<double> sizes;
  for (double bytes = 4.0 * 1024 * 1024; bytes <= 128.0 * 1024 * 1024; bytes *= 2) sizes.push_back(bytes);
  return sizes;
}

/// Throws BadInput unless every size is a whole number of float32 values in range and there are
/// two distinct sizes (a line needs two points).
void check_sizes(const std::vector<double>& sizes_bytes) {
  std::set<double> distinct;
  for (double bytes : sizes_bytes) {
    if (!std::isfinite(bytes) || bytes < 4 || std::fmod(bytes, 4) != 0)
      throw BadInput("message size " + short_number(bytes) +
                     " bytes: must be a positive multiple of 4 (the buffers are float32)");
    if (bytes > kMaxBytes) throw BadInput("message size " + human_bytes(bytes) + ": at most 4 GiB");
    distinct.insert(bytes);
  }
  if (distinct.size() < 2) throw BadInput("give two or more distinct message sizes: the fit needs them");
}

/// Throws BadInput for options that cannot run, before anything is started.
void check_options(const NetProfileOptions& options, const std::vector<double>& sizes_bytes) {
  if (options.ranks < 2)
    throw BadInput("--ranks " + std::to_string(options.ranks) +
                   ": needs 2 or more (send/recv runs between rank 0 and rank 1)");
  if (options.ranks > kMaxRanks)
    throw BadInput("--ranks " + std::to_string(options.ranks) + ": at most " + std::to_string(kMaxRanks));
  if (options.repeats < 1)
    throw BadInput("--repeats " + std::to_string(options.repeats) + ": needs 1 or more");
  check_sizes(sizes_bytes);
}

/// Throws BadInput when `path` cannot be written, so that a long measurement does not end in
/// that error. The probe leaves nothing behind (the writer removes its uncommitted file).
void check_output_writable(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw BadInput("--output '" + path + "' is a directory");
  try {
    AtomicFileWriter probe(path);
  } catch (const std::exception& e) {
    throw BadInput(std::string("--output: ") + e.what());
  }
}

// ---- one rank (a child process) ---------------------------------------------------------

/// Rank `job.rank` of a full mesh of TCP pairs over loopback, met through the FileStore.
std::shared_ptr<gloo::Context> connect_full_mesh(const RankJob& job) {
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";  // loopback whatever the interface is called
  attr.ai_family = AF_INET;
  auto device = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore store(job.store_dir);
  auto context = std::make_shared<gloo::rendezvous::Context>(job.rank, job.ranks);
  context->setTimeout(kTimeout);
  context->connectFullMesh(store, device);
  return context;
}

/// Every rank waits here for every other: the timed operations start together.
void barrier(const std::shared_ptr<gloo::Context>& context) {
  gloo::BarrierOptions options(context);
  options.setTag(kBarrierTag);
  gloo::barrier(options);
}

/// Seconds since `start`.
double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Throws unless a wait on an unbound buffer completed (false means it was aborted).
void require(bool completed, const char* what) {
  if (!completed) throw std::runtime_error(std::string(what) + " was aborted");
}

/// The buffers a rank moves, sized for the largest message; a smaller message is a prefix.
struct RankBuffers {
  std::vector<float> data;  ///< all-reduced in place; rank 0 and rank 1 also send it
  std::vector<float> echo;  ///< ranks 0 and 1 receive the ping into it
  std::unique_ptr<gloo::transport::UnboundBuffer> out, in;
};

/// Buffers for messages up to `largest_bytes` (the other ranks never ping: no echo buffer).
RankBuffers make_buffers(const std::shared_ptr<gloo::Context>& context, double largest_bytes) {
  size_t count = static_cast<size_t>(largest_bytes / sizeof(float));
  RankBuffers buffers;
  buffers.data.assign(count, 0.0f);  // written now: page faults are not timed later
  buffers.echo.assign(context->rank < 2 ? count : 1, 0.0f);
  buffers.out = context->createUnboundBuffer(buffers.data.data(), buffers.data.size() * sizeof(float));
  buffers.in = context->createUnboundBuffer(buffers.echo.data(), buffers.echo.size() * sizeof(float));
  return buffers;
}

/// One way of a ping-pong of `bytes` between rank 0 and rank 1, as rank 0 times it (other
/// ranks: 0). Rank 1 posts its receive before the barrier, so rank 0's clock never waits for that.
double time_ping_s(const std::shared_ptr<gloo::Context>& context, RankBuffers& buffers, size_t bytes) {
  const uint64_t slot = gloo::Slot::build(kPingSlotPrefix, 0);
  gloo::transport::UnboundBuffer& out = *buffers.out;
  gloo::transport::UnboundBuffer& in = *buffers.in;
  if (context->rank == 1) in.recv(0, slot, 0, bytes);
  barrier(context);
  if (context->rank == 0) {
    Clock::time_point start = Clock::now();
    out.send(1, slot, 0, bytes);
    in.recv(1, slot, 0, bytes);
    require(out.waitSend(), "send to rank 1");
    require(in.waitRecv(), "receive from rank 1");
    return seconds_since(start) / 2;
  }
  if (context->rank == 1) {
    require(in.waitRecv(), "receive from rank 0");
    out.send(0, slot, 0, bytes);
    require(out.waitSend(), "send to rank 0");
  }
  return 0;
}

/// Seconds one ring all-reduce (sum) of the first `bytes` of the data takes on this rank, the
/// ranks starting together.
double time_allreduce_s(const std::shared_ptr<gloo::Context>& context, RankBuffers& buffers, size_t bytes) {
  gloo::AllreduceOptions options(context);
  options.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);  // the 2(n-1)/n bus model is the ring's
  options.setOutput(buffers.data.data(), bytes / sizeof(float));
  options.setReduceFunction(
      static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
  options.setTag(kAllreduceTag);
  barrier(context);
  Clock::time_point start = Clock::now();
  gloo::allreduce(options);
  return seconds_since(start);
}

/// The middle value (the mean of the two middle ones for an even count): robust to the odd
/// repetition a scheduler hiccup slows down.
double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

/// `timed()` run kWarmups + repeats times; the median of the timed ones.
template <typename Timed>
double median_of_repeats_s(int repeats, Timed timed) {
  std::vector<double> times;
  for (int i = 0; i < kWarmups + repeats; ++i) {
    double t = timed();
    if (i >= kWarmups) times.push_back(t);
  }
  return median(times);
}

/// Medians of send/recv and all-reduce of every size, one size after the other (as
/// nccl-tests and the OSU benchmarks do; sweeping all sizes in each repetition was tried and
/// fitted worse: the 64 MiB transfers slowed the small ones that followed them). Every
/// rank calls it; rank 0's medians are the results.
std::vector<SizeTiming> measure_sizes(const std::shared_ptr<gloo::Context>& context, const RankJob& job) {
  const std::vector<double>& sizes = job.sizes_bytes;
  RankBuffers buffers = make_buffers(context, *std::max_element(sizes.begin(), sizes.end()));
  std::vector<SizeTiming> timings;
  for (size_t i = 0; i < sizes.size(); ++i) {
    size_t bytes = static_cast<size_t>(sizes[i]);
    SizeTiming timing;
    timing.bytes = sizes[i];
    timing.send_recv_s = median_of_repeats_s(job.repeats, [&] { return time_ping_s(context, buffers, bytes); });
    timing.allreduce_s =
        median_of_repeats_s(job.repeats, [&] { return time_allreduce_s(context, buffers, bytes); });
    timings.push_back(timing);
    if (job.progress && job.rank == 0)
      std::fprintf(stderr, "fasop-cpp: profile net: %s (%zu/%zu): send/recv %s s, all-reduce %s s\n",
                   human_bytes(timing.bytes).c_str(), i + 1, sizes.size(), short_number(timing.send_recv_s).c_str(),
                   short_number(timing.allreduce_s).c_str());
  }
  return timings;
}

/// Rank 0's results, one line per size, for the parent to read once every rank has exited.
void write_results(const std::string& path, const std::vector<SizeTiming>& timings) {
  std::ofstream out(path);
  out.precision(17);
  for (const SizeTiming& t : timings) out << t.bytes << ' ' << t.send_recv_s << ' ' << t.allreduce_s << '\n';
  out.close();
  if (!out) throw std::runtime_error("cannot write '" + path + "'");
}

/// Connects, measures every size (every rank takes part), and rank 0 writes what it timed.
void run_rank(const RankJob& job) {
  auto context = connect_full_mesh(job);
  std::vector<SizeTiming> timings = measure_sizes(context, job);
  barrier(context);  // no rank closes its connections while another still uses them
  if (job.rank == 0) write_results(job.store_dir + "/" + kResultsFile, timings);
}

/// The body of a forked rank: never returns into the caller (whose stack and open streams are
/// the parent's), and _exit skips the atexit work that belongs to the parent. An error goes to
/// a file, not stderr: the parent prints the one that stopped the run, on one line.
[[noreturn]] void run_rank_and_exit(const RankJob& job) {
  std::string error;
  try {
    run_rank(job);
  } catch (const std::exception& e) {
    error = e.what();
  } catch (...) {
    error = "unknown error";
  }
  if (!error.empty()) std::ofstream(error_file(job.store_dir, job.rank)) << error;
  std::fflush(stderr);
  _exit(error.empty() ? 0 : 1);
}

// ---- the parent ---------------------------------------------------------------------------

/// A fresh directory under /tmp, removed with everything in it when this goes out of scope.
class TemporaryDirectory {
 public:
  TemporaryDirectory() {
    char name[] = "/tmp/fasop-net-XXXXXX";
    if (!::mkdtemp(name)) throw std::runtime_error(std::string("cannot create a directory under /tmp: ") +
                                                   std::strerror(errno));
    path_ = name;
  }
  ~TemporaryDirectory() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TemporaryDirectory(const TemporaryDirectory&) = delete;
  TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// Sends SIGTERM to the ranks still running (their peers are gone; they would only wait).
void stop_ranks(const std::vector<pid_t>& pids, const std::vector<bool>& exited) {
  for (size_t i = 0; i < pids.size(); ++i)
    if (!exited[i]) ::kill(pids[i], SIGTERM);
}

/// Why rank `rank` failed, from its wait status and the message it left in `store_dir`.
std::string rank_failure(const std::string& store_dir, int rank, int status) {
  std::string prefix = "rank " + std::to_string(rank) + ": ";
  if (WIFSIGNALED(status))
    return prefix + "killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  std::ifstream in(error_file(store_dir, rank));
  std::string message;
  std::getline(in, message);
  if (!message.empty()) return prefix + message;
  return prefix + "exited with status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

/// Reaps every rank; after the first failure stops the rest (they would wait for the failed one
/// until the timeout). Returns "" when all exited with 0, else why the first one failed. Polls
/// only our own children, never waitpid(-1): the caller may have children of its own.
std::string wait_for_ranks(const std::vector<pid_t>& pids, const std::string& store_dir) {
  std::vector<bool> exited(pids.size(), false);
  size_t running = pids.size();
  std::string failure;
  while (running > 0) {
    for (size_t i = 0; i < pids.size(); ++i) {
      if (exited[i]) continue;
      int status = 0;
      pid_t reaped = ::waitpid(pids[i], &status, WNOHANG);
      if (reaped == 0 || (reaped < 0 && errno == EINTR)) continue;
      exited[i] = true;
      --running;
      if (reaped == pids[i] && WIFEXITED(status) && WEXITSTATUS(status) == 0) continue;
      if (!failure.empty()) continue;
      failure = reaped == pids[i] ? rank_failure(store_dir, static_cast<int>(i), status)
                                  : "rank " + std::to_string(i) + ": lost (" + std::strerror(errno) + ")";
      stop_ranks(pids, exited);
    }
    if (running > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return failure;
}

/// Forks one process per rank and waits for them all; throws when one fails.
void run_ranks(RankJob job) {
  std::cout.flush();  // a child must not inherit (and later print twice) buffered output
  std::fflush(nullptr);
  std::vector<pid_t> pids;
  for (int rank = 0; rank < job.ranks; ++rank) {
    pid_t pid = ::fork();
    if (pid == 0) {
      job.rank = rank;
      run_rank_and_exit(job);
    }
    if (pid < 0) {
      int error = errno;
      stop_ranks(pids, std::vector<bool>(pids.size(), false));
      wait_for_ranks(pids, job.store_dir);
      throw std::runtime_error(std::string("cannot start a rank process: ") + std::strerror(error));
    }
    pids.push_back(pid);
  }
  std::string failure = wait_for_ranks(pids, job.store_dir);
  if (!failure.empty()) throw std::runtime_error(failure);
}

/// Rank 0's results as write_results left them.
std::vector<SizeTiming> read_results(const std::string& path, size_t expected) {
  std::ifstream in(path);
  std::vector<SizeTiming> timings;
  SizeTiming t;
  while (in >> t.bytes >> t.send_recv_s >> t.allreduce_s) timings.push_back(t);
  if (timings.size() != expected) throw std::runtime_error("rank 0 left incomplete results in '" + path + "'");
  return timings;
}

/// Measures every size with `ranks` local processes; the medians rank 0 saw.
std::vector<SizeTiming> measure(const NetProfileOptions& options, const std::vector<double>& sizes_bytes) {
  TemporaryDirectory store;
  RankJob job;
  job.ranks = options.ranks;
  job.repeats = options.repeats;
  job.sizes_bytes = sizes_bytes;
  job.store_dir = store.path();
  job.progress = !options.quiet && ::isatty(STDERR_FILENO);
  run_ranks(job);
  return read_results(store.path() + "/" + kResultsFile, sizes_bytes.size());
}

// ---- fits and reports -----------------------------------------------------------------------

/// Both fits. The all-reduce is fitted against bus bytes, 2(n-1)/n x the message, which is what
/// a ring moves through each rank's link: its bandwidth is then the link's, comparable across n.
struct NetFits {
  double bus_factor = 1;  ///< 2(n-1)/n
  std::vector<TimedMessage> send_recv_points, allreduce_bus_points;
  AlphaBeta send_recv, allreduce_bus;
};

/// Fits latency + bytes / bandwidth to both operations; throws (exit 1) when one cannot be fitted.
NetFits fit(const std::vector<SizeTiming>& timings, int ranks) {
  NetFits fits;
  fits.bus_factor = 2.0 * (ranks - 1) / ranks;
  for (const SizeTiming& t : timings) {
    fits.send_recv_points.push_back({t.bytes, t.send_recv_s});
    fits.allreduce_bus_points.push_back({t.bytes * fits.bus_factor, t.allreduce_s});
  }
  try {
    fits.send_recv = fit_alpha_beta(fits.send_recv_points);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(std::string("send/recv: ") + e.what());
  }
  try {
    fits.allreduce_bus = fit_alpha_beta(fits.allreduce_bus_points);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(std::string("all-reduce: ") + e.what());
  }
  return fits;
}

/// Signed relative error of a prediction, in percent with one decimal.
std::string percent_error(double predicted_s, double measured_s) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%+.1f%%", 100 * (predicted_s - measured_s) / measured_s);
  return buffer;
}

/// An unsigned share in percent with one decimal.
std::string percent(double share) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f%%", 100 * share);
  return buffer;
}

/// The medians alone, for when no line can be fitted to them: the user still sees what was measured.
void print_measured(std::ostream& out, const std::vector<SizeTiming>& timings) {
  char line[200];
  std::snprintf(line, sizeof line, "%-9s %12s %14s\n", "size", "send/recv s", "all-reduce s");
  out << line;
  for (const SizeTiming& t : timings) {
    std::snprintf(line, sizeof line, "%-9s %12.4g %14.4g\n", human_bytes(t.bytes).c_str(), t.send_recv_s,
                  t.allreduce_s);
    out << line;
  }
  out.flush();
}

/// The measured medians next to the fitted models' predictions, then the fitted numbers.
void print_table(std::ostream& out, const std::vector<SizeTiming>& timings, const NetFits& fits, int ranks) {
  char line[200];
  std::snprintf(line, sizeof line, "%-9s %12s %12s %8s %14s %12s %8s\n", "size", "send/recv s", "fit s", "error",
                "all-reduce s", "fit s", "error");
  out << line;
  for (const SizeTiming& t : timings) {
    double p2p_fit_s = fits.send_recv.predict_s(t.bytes);
    double allreduce_fit_s = fits.allreduce_bus.predict_s(t.bytes * fits.bus_factor);
    std::snprintf(line, sizeof line, "%-9s %12.4g %12.4g %8s %14.4g %12.4g %8s\n", human_bytes(t.bytes).c_str(),
                  t.send_recv_s, p2p_fit_s, percent_error(p2p_fit_s, t.send_recv_s).c_str(), t.allreduce_s,
                  allreduce_fit_s, percent_error(allreduce_fit_s, t.allreduce_s).c_str());
    out << line;
  }
  const AlphaBeta& p2p = fits.send_recv;
  const AlphaBeta& bus = fits.allreduce_bus;
  out << "send/recv (rank 0 <-> rank 1): latency " << short_number(p2p.latency_s) << " s, bandwidth "
      << short_number(8 * p2p.bytes_per_s) << " bit/s (" << short_number(p2p.bytes_per_s / 1e9)
      << " GB/s); worst relative error " << percent(p2p.worst_relative_error(fits.send_recv_points)) << "\n";
  out << "all-reduce (ring, " << ranks << " ranks): latency " << short_number(bus.latency_s)
      << " s, bus bandwidth " << short_number(8 * bus.bytes_per_s) << " bit/s (" << short_number(bus.bytes_per_s / 1e9)
      << " GB/s, bus bytes = " << short_number(fits.bus_factor) << " x message); worst relative error "
      << percent(bus.worst_relative_error(fits.allreduce_bus_points)) << "\n";
  double worst = std::max(p2p.worst_relative_error(fits.send_recv_points),
                          bus.worst_relative_error(fits.allreduce_bus_points));
  if (worst > kCloseFit)
    out << "note: the fitted lines miss some points by more than " << percent(kCloseFit) << " (see the error columns).\n"
        << "  Either the times do not follow one latency plus one bandwidth over these sizes (on\n"
           "  loopback, messages that stay in the CPU caches move faster per byte), or other work\n"
           "  disturbed the run. Measuring only the sizes your plans send gives a closer fit.\n";
}

/// The node-type fields of the cluster file, with the points and where they come from.
std::string yaml_text(const NetProfileOptions& options, const std::vector<SizeTiming>& timings, const NetFits& fits) {
  const AlphaBeta& p2p = fits.send_recv;
  const AlphaBeta& bus = fits.allreduce_bus;
  std::ostringstream out;
  out << "# Measured by `fasop-cpp profile net --backend " << options.backend << " --ranks " << options.ranks
      << "` on " << host_name() << ", " << utc_now() << ".\n"
      << "# Point-to-point: latency + bytes / bandwidth fitted to send/recv between 2 local processes.\n"
      << "# All-reduce: the same fit of the ring all-reduce over " << options.ranks
      << " processes, bytes = 2(n-1)/n x message (bus bytes).\n"
      << "# Loopback TCP on one machine (Gloo, CPU): this is the host, not a GPU interconnect.\n"
      << "# Median of " << options.repeats << " repetitions per size; worst relative error of the fits: send/recv "
      << percent(p2p.worst_relative_error(fits.send_recv_points)) << ", all-reduce "
      << percent(bus.worst_relative_error(fits.allreduce_bus_points)) << ".\n"
      << "intra_node_bandwidth_bits_per_s: " << yaml_number(8 * p2p.bytes_per_s)
      << "    # 8 x bytes/s of the send/recv fit\n"
      << "intra_node_latency_s: " << yaml_number(p2p.latency_s) << "\n"
      << "allreduce_bus_bandwidth_bits_per_s: " << yaml_number(8 * bus.bytes_per_s)
      << "    # 8 x bytes/s of the all-reduce fit\n"
      << "allreduce_latency_s: " << yaml_number(bus.latency_s) << "\n"
      << "points:\n";
  for (const SizeTiming& t : timings)
    out << "  - {bytes: " << static_cast<long long>(t.bytes) << ", send_recv_s: " << yaml_number(t.send_recv_s)
        << ", allreduce_s: " << yaml_number(t.allreduce_s) << "}\n";
  return out.str();
}

/// The Gloo backend: check, measure, fit, print, write.
int run_gloo(const NetProfileOptions& options) {
  std::vector<double> sizes_bytes = options.sizes_bytes.empty() ? default_sizes_bytes() : options.sizes_bytes;
  check_options(options, sizes_bytes);
  if (!options.output.empty()) check_output_writable(options.output);
  std::vector<SizeTiming> timings = measure(options, sizes_bytes);
  NetFits fits;
  try {
    fits = fit(timings, options.ranks);
  } catch (const std::exception&) {
    print_measured(std::cout, timings);
    throw;
  }
  print_table(std::cout, timings, fits, options.ranks);
  std::cout.flush();
  if (!options.output.empty()) write_file_atomically(options.output, yaml_text(options, timings, fits));
  return 0;
}

/// The NCCL backend: only where the build found CUDA and NCCL.
int run_nccl(const NetProfileOptions&) {
#ifdef FASOP_WITH_NCCL
  std::cerr << "fasop-cpp: --backend nccl: not implemented yet; use --backend gloo\n";
#else
  std::cerr << "fasop-cpp: --backend nccl: this build has no NCCL (build on a machine with CUDA and NCCL)\n";
#endif
  return 2;
}

}  // namespace

int run_net_profile(const NetProfileOptions& options) {
  try {
    if (options.backend == "gloo") return run_gloo(options);
    if (options.backend == "nccl") return run_nccl(options);
    throw BadInput("--backend " + options.backend + ": unknown backend; use gloo or nccl");
  } catch (const BadInput& e) {
    std::cerr << "fasop-cpp: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "fasop-cpp: profile net: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace fasop
