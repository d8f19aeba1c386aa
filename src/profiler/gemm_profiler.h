#pragma once
// `fasop-cpp profile gemm`: a sweep of GEMM shapes timed in LibTorch on the device, written as
// the measured points and a fit of the planner's GEMM model (gemm_peak_share, gemm_half_dim of
// configs/gpus/*.yaml) per precision.
#include <string>
#include <vector>

namespace fasop {

/// What `profile gemm` measures and where it writes.
struct GemmProfileOptions {
  std::string device = "cpu";        ///< cpu, cuda or cuda:N
  std::vector<std::string> dtypes;   ///< fp16, bf16, fp32, fp8 (default: bf16 on CUDA, fp32 on CPU)
  std::vector<std::string> shapes;   ///< MxNxK each (default: the device's grid)
  bool quick = false;                ///< a tiny grid and few rounds (CPU tests)
  std::string gpu;                   ///< shipped GPU data for the peaks, and the file's gpu: name
  std::vector<std::string> peak_tflops;  ///< DTYPE=TFLOPS each, over the GPU data's
  int warmup = 0;                    ///< untimed rounds (0: 3, or 1 with --quick)
  int repeats = 0;                   ///< timed rounds; the median is kept (0: 10, or 5 with --quick)
  std::string output;                ///< YAML to write (atomically); empty: print only
  int threads = 0;                   ///< intra-op threads on CPU (0: LibTorch's default)
  bool quiet = false;
};

/// Runs the sweep; returns the process exit code (0 ok, 2 bad input, 1 failure).
int run_gemm_profile(const GemmProfileOptions& options);

}  // namespace fasop
