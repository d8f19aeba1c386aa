// `profile net --backend gloo`: one process per rank on this machine, a full mesh of Gloo TCP
// pairs over loopback, every rank timing send/recv and ring all-reduce in step; rank 0's
// medians are the results.
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
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

#include "profiler/net_backends.h"

namespace fasop {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr std::chrono::seconds kTimeout(120);  ///< a rank that waits longer gives up (a peer died)
constexpr uint8_t kPingSlotPrefix = 0x50;  ///< gloo's own collectives use prefixes 0x01..0x08
constexpr uint32_t kBarrierTag = 1, kAllreduceTag = 2;
const char* const kResultsFile = "rank0-results.txt";  ///< in the rendezvous directory

/// Where rank `rank` leaves the message of the error that stopped it, for the parent to report.
std::string error_file(const std::string& store_dir, int rank) {
  return store_dir + "/rank" + std::to_string(rank) + "-error.txt";
}

/// What one rank does: which sizes, how often, and where the ranks meet.
struct RankJob {
  int rank = 0;
  int ranks = 2;
  int repeats = 10;
  std::vector<double> sizes_bytes;
  std::string store_dir;  ///< the FileStore rendezvous; rank 0 also leaves its results there
  bool progress = false;  ///< rank 0 prints a line per size on stderr (the others stay quiet)
};

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

/// Every rank times every size in step with the others; rank 0's medians are the results.
std::vector<SizeTiming> measure_sizes(const std::shared_ptr<gloo::Context>& context, const RankJob& job) {
  const std::vector<double>& sizes = job.sizes_bytes;
  RankBuffers buffers = make_buffers(context, *std::max_element(sizes.begin(), sizes.end()));
  return time_sizes_in_rounds(
      sizes, job.repeats, job.progress && job.rank == 0,
      [&](size_t bytes) { return time_ping_s(context, buffers, bytes); },
      [&](size_t bytes) { return time_allreduce_s(context, buffers, bytes); });
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

}  // namespace

std::vector<SizeTiming> measure_gloo(const NetProfileOptions& options, const std::vector<double>& sizes_bytes) {
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

}  // namespace fasop
