// `profile net --backend nccl`: one GPU per rank, driven from one process (one NCCL
// communicator per GPU from ncclCommInitAll, each on its own stream), timed by the host clock
// around each operation until every stream has finished. Built where the CUDA toolkit has
// NCCL (/usr/local/cuda); runs only where there are GPUs.
#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "profiler/net_backends.h"
#include "specs/spec_error.h"

namespace fasop {
namespace {

using Clock = std::chrono::steady_clock;

void check_cuda(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

void check_nccl(ncclResult_t status, const char* what) {
  if (status != ncclSuccess) throw std::runtime_error(std::string(what) + ": " + ncclGetErrorString(status));
}

/// GPUs 0..ranks-1, a communicator, a stream and a float buffer of the largest size on each.
/// Frees them all when it goes out of scope, also after an error.
class GpuRanks {
 public:
  GpuRanks(int ranks, double largest_bytes) : comms_(ranks, nullptr), streams_(ranks, nullptr), buffers_(ranks, nullptr) {
    std::vector<int> devices(ranks);
    for (int r = 0; r < ranks; ++r) devices[r] = r;
    check_nccl(ncclCommInitAll(comms_.data(), ranks, devices.data()), "ncclCommInitAll");
    for (int r = 0; r < ranks; ++r) {
      check_cuda(cudaSetDevice(r), "cudaSetDevice");
      check_cuda(cudaStreamCreateWithFlags(&streams_[r], cudaStreamNonBlocking), "cudaStreamCreate");
      check_cuda(cudaMalloc(&buffers_[r], static_cast<size_t>(largest_bytes)), "cudaMalloc");
      check_cuda(cudaMemset(buffers_[r], 0, static_cast<size_t>(largest_bytes)), "cudaMemset");
    }
    synchronize();
  }
  ~GpuRanks() {
    for (size_t r = 0; r < comms_.size(); ++r) {
      cudaSetDevice(static_cast<int>(r));
      if (buffers_[r]) cudaFree(buffers_[r]);
      if (streams_[r]) cudaStreamDestroy(streams_[r]);
      if (comms_[r]) ncclCommDestroy(comms_[r]);
    }
  }
  GpuRanks(const GpuRanks&) = delete;
  GpuRanks& operator=(const GpuRanks&) = delete;

  /// One way of a ping-pong of `bytes` between GPU 0 and GPU 1.
  double ping_s(size_t bytes) {
    synchronize();
    auto start = Clock::now();
    send(0, 1, bytes);
    send(1, 0, bytes);
    return std::chrono::duration<double>(Clock::now() - start).count() / 2;
  }

  /// One ring all-reduce (sum) of `bytes` over every GPU.
  double allreduce_s(size_t bytes) {
    synchronize();
    auto start = Clock::now();
    check_nccl(ncclGroupStart(), "ncclGroupStart");
    for (size_t r = 0; r < comms_.size(); ++r)
      check_nccl(ncclAllReduce(buffers_[r], buffers_[r], bytes / sizeof(float), ncclFloat, ncclSum, comms_[r],
                               streams_[r]),
                 "ncclAllReduce");
    check_nccl(ncclGroupEnd(), "ncclGroupEnd");
    synchronize();
    return std::chrono::duration<double>(Clock::now() - start).count();
  }

 private:
  /// `bytes` from GPU `from` to GPU `to`, waited for.
  void send(int from, int to, size_t bytes) {
    const size_t count = bytes / sizeof(float);
    check_nccl(ncclGroupStart(), "ncclGroupStart");
    check_nccl(ncclSend(buffers_[from], count, ncclFloat, to, comms_[from], streams_[from]), "ncclSend");
    check_nccl(ncclRecv(buffers_[to], count, ncclFloat, from, comms_[to], streams_[to]), "ncclRecv");
    check_nccl(ncclGroupEnd(), "ncclGroupEnd");
    check_cuda(cudaStreamSynchronize(streams_[from]), "cudaStreamSynchronize");
    check_cuda(cudaStreamSynchronize(streams_[to]), "cudaStreamSynchronize");
  }

  void synchronize() {
    for (cudaStream_t stream : streams_) check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  }

  std::vector<ncclComm_t> comms_;
  std::vector<cudaStream_t> streams_;
  std::vector<void*> buffers_;
};

}  // namespace

std::vector<SizeTiming> measure_nccl(const NetProfileOptions& options, const std::vector<double>& sizes_bytes) {
  int devices = 0;
  cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess || devices == 0)
    throw SpecError("--backend nccl: no CUDA device here (" +
                    std::string(status == cudaSuccess ? "none found" : cudaGetErrorString(status)) +
                    "); use --backend gloo");
  if (devices < options.ranks)
    throw SpecError("--backend nccl --ranks " + std::to_string(options.ranks) + ": NCCL needs a GPU per rank and " +
                    "this machine has " + std::to_string(devices) + "; use --ranks " +
                    std::to_string(std::max(2, devices)) + (devices < 2 ? " on a machine with 2 or more GPUs" : ""));
  GpuRanks gpus(options.ranks, *std::max_element(sizes_bytes.begin(), sizes_bytes.end()));
  return time_sizes_in_rounds(
      sizes_bytes, options.repeats, !options.quiet && ::isatty(2),
      [&](size_t bytes) { return gpus.ping_s(bytes); }, [&](size_t bytes) { return gpus.allreduce_s(bytes); });
}

}  // namespace fasop
